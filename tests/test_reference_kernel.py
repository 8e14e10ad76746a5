"""The reference finder's compiled kernel (kernel.c through kernel.py) and the small pure
helpers of its ranking, against plain Python definitions of what they compute."""

import bisect
import hashlib
import random
import subprocess

import numpy as np
import pytest
from conftest import ROOT

from recall.finders.reference import kernel, rank
from recall.inputs.symbols import checkout_symbols, distinct_names

QUERY_SETS = ("queries.tsv", "typed.tsv", "typing.tsv")
# shapes the committed sets hold few of: a repeated letter, one letter, globs, non-ASCII
# (a code above 255 takes the kernel's scan over codes, not bytes), a name's own letters
EXTRA = ["aa", "e", "sss", "t*t", "ser*han", "*ctx", "ééx", "naïve", "Ωmega", "context", "gtgt"]


def is_subsequence(query: str, text: str) -> bool:
    it = iter(text)
    return all(c in it for c in query)


def is_near(query: str, text: str) -> bool:
    """All of query but at most one character, in order, in text."""
    return any(is_subsequence(query[:t] + query[t + 1 :], text) for t in range(len(query)))


@pytest.fixture(scope="module")
def gin_ranker(gin, real_cache):
    names = distinct_names(checkout_symbols(gin, real_cache))
    return rank.Ranker(names)


def gin_queries() -> list[str]:
    rows = []
    for name in QUERY_SETS:
        for line in (ROOT / name).read_text().splitlines()[1:]:
            repo, query = line.split("\t")[:2]
            if repo == "gin":
                rows.append(query)
    return sorted(set(rows)) + EXTRA


def arguments(text: str) -> tuple:
    """What Ranker.score passes the kernel for a query."""
    query = rank.parse_query(text)
    q = query.chars
    bits = [rank._char_bit(ord(c)) for c in q]
    qmask = qtwice = 0
    for bit in bits:
        qmask |= bit
    for c in {c for c in q if q.count(c) > 1}:
        qtwice |= rank._char_bit(ord(c))
    codes = np.array([ord(c) for c in q], dtype=np.int32)
    stars = np.array(query.star_before, dtype=np.bool_)
    cuts = [i for i in range(1, len(q)) if query.star_before[i]]
    seg = np.array([0, *cuts, len(q)], dtype=np.int64)
    return query, codes, stars, seg, qmask, qtwice, np.array(bits, dtype=np.uint64)


def kernel_answers(ranker: rank.Ranker, queries: list[str]) -> str:
    """A digest of every match, raw score, exact name and near name of the queries."""
    digest = hashlib.sha256()
    for text in queries:
        query, codes, stars, seg, qmask, qtwice, bits = arguments(text)
        if not query.chars:
            continue
        ids, raw, exact = kernel.match(
            codes, stars, seg, query.is_glob, qmask, qtwice, ranker.packed
        )
        digest.update(ids.tobytes() + raw.tobytes() + exact.tobytes())
        if len(query.chars) >= 2:
            near = kernel.near(codes, bits, qmask, qtwice, ranker.packed)
            digest.update(near.tobytes())
    return digest.hexdigest()


@pytest.mark.slow
def test_match_and_near_find_exactly_the_names_a_plain_definition_does(gin_ranker):
    # the character-set masks, the twice masks and the byte scans only skip work: the
    # names matched are the subsequence ones (for a glob, its segments in order), those
    # near lack at most one query character in order, and exact ones have its letters
    names = [rank.squash(n) for n in gin_ranker.names]
    for text in gin_queries()[::7] + EXTRA:
        query, codes, stars, seg, qmask, qtwice, bits = arguments(text)
        q = query.chars
        if not q:
            continue
        ids, _raw, exact = kernel.match(codes, stars, seg, query.is_glob, qmask, qtwice,
                                        gin_ranker.packed)  # fmt: skip
        held = [i for i, n in enumerate(names) if is_subsequence(q, n)]
        if query.is_glob:
            parts = [q[a:b] for a, b in zip(seg[:-1].tolist(), seg[1:].tolist(), strict=True)]
            held = [i for i in held if _glob_holds(parts, names[i])]
        assert ids.tolist() == held, text
        assert exact.tolist() == [i for i, n in enumerate(names) if n == q], text
        if len(q) >= 2:
            near = kernel.near(codes, bits, qmask, qtwice, gin_ranker.packed)
            assert near.tolist() == [i for i, n in enumerate(names) if is_near(q, n)], text


def _glob_holds(parts: list[str], text: str) -> bool:
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["-DRK_SCALAR", "-DRK_LIST", "-DRK_SCALAR -DRK_LIST"])
def test_each_build_of_the_kernel_scores_every_gin_query_alike(
    gin_ranker, variant, tmp_path, monkeypatch
):
    # the byte scans have a scalar build (where SSE2 is absent) and the alignment a list
    # form for long names: forced for every name, each gives the same float32 scores
    queries = gin_queries()
    expected = kernel_answers(gin_ranker, queries)
    monkeypatch.setenv("RECALL_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setattr(kernel, "FLAGS", (*kernel.FLAGS, *variant.split()))
    kernel.library.cache_clear()
    try:
        assert kernel_answers(gin_ranker, queries) == expected
    finally:
        kernel.library.cache_clear()


def test_the_kernel_compiles_without_a_warning(tmp_path):
    command = kernel.compile_command(kernel.SOURCE, tmp_path / "kernel.so")
    proc = subprocess.run([*command, "-Wall", "-Wextra"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_rows_make_the_json_list_of_the_ids_in_their_order_growing_the_buffer():
    texts = [b'{"name":"a"}', b'{"name":"bb"}', b'{"name":"\xc3\xa9"}']
    rows = kernel.Rows(np.frombuffer(b"".join(texts), np.uint8),
                       np.cumsum([len(t) for t in texts]))  # fmt: skip
    assert rows.json(np.array([], np.int64)) == b"[]"
    assert rows.json(np.array([2, 0])) == b'[{"name":"\xc3\xa9"},{"name":"a"}]'
    rows.buffer = np.empty(3, np.uint8)  # smaller than any answer: grown, then written
    ids = np.array([1, 1, 0, 2] * 10)
    assert rows.json(ids) == b"[" + b",".join(texts[i] for i in ids.tolist()) + b"]"


def test_best_first_orders_as_the_lexsort_of_rounded_values_then_ties():
    generator = np.random.default_rng(35)
    for size in (0, 1, 7, 500):
        values = np.round(generator.uniform(-3, 3, size), generator.integers(1, 9))
        values[: size // 3] = 0.5  # many equal values: the tie order decides
        if size:
            values[-1] = -0.0
        ties = generator.permutation(size).astype(np.int64)
        expected = np.lexsort((ties, -np.round(values, 6)))
        assert rank.best_first(values, ties, 10).tolist() == expected.tolist()
    huge = np.array([1e12, -1e12, 1e12])  # past the integer key: sorted by lexsort itself
    assert rank.best_first(huge, np.array([2, 0, 1]), 10).tolist() == [2, 0, 1]


def test_sorted_text_bisects_as_bisect_does_on_the_list():
    generator = random.Random(35)
    for _ in range(200):
        count = generator.randint(0, 150)
        stems = ["a", "ab", "b", "é", "zz", ""]
        words = sorted(
            generator.choice(stems) + str(generator.randint(0, 40)) for _ in range(count)
        )
        buffer, ends = rank.SortedText.arrays(words)
        text = rank.SortedText(buffer.tobytes(), ends)
        for probe in ["", "a", "a1", "ab3", "b", "zz9", "é", "~", "a\U0010ffff", "0"]:
            assert text.bisect_left(probe) == bisect.bisect_left(words, probe), (words, probe)


@pytest.mark.slow
def test_the_index_keeps_the_arrays_a_finder_would_build_and_a_finder_ranks_alike(gin, tmp_path):
    from recall.finders.reference.store import build, load

    build(gin.path, "go", tmp_path / "kept.db", derive=rank.index_arrays)
    build(gin.path, "go", tmp_path / "bare.db")
    kept, bare = load(tmp_path / "kept.db"), load(tmp_path / "bare.db")
    assert kept.derived is not None and bare.derived is None
    built = rank.index_arrays(bare.names)
    assert sorted(kept.derived) == sorted(built)
    for key, array in built.items():
        assert np.array_equal(kept.derived[key], array) and kept.derived[key].dtype == array.dtype
    finders = rank.Finder(kept), rank.Finder(bare)
    for query in [*gin_queries()[::25], "Context.JSON", "gin.New", ""]:
        assert finders[0].search_json(query, 0) == finders[1].search_json(query, 0), query


def test_an_index_of_another_schema_is_refused_naming_what_to_do(tmp_path):
    import sqlite3

    from recall.errors import RecallError
    from recall.finders.reference.store import load

    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                      "INSERT INTO meta VALUES ('schema', '1');")  # fmt: skip
    con.close()
    with pytest.raises(RecallError, match=f"^{db}: index schema '1', expected '2' \\(index again"):
        load(db)
