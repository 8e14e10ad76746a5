"""The reference finder's compiled kernel (kernel.c through kernel.py) and the small pure
helpers of its ranking, against plain Python definitions of what they compute."""

import hashlib
import itertools
import random
import subprocess

import numpy as np
import pytest
from conftest import ROOT

from recall.finders.reference import kernel, rank
from recall.finders.reference.chars import squash
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


def kernel_answers(ranker: rank.Ranker, queries: list[str]) -> str:
    """A digest of every match, raw score, exact name and near name of the queries, and
    of the merged scores."""
    digest = hashlib.sha256()
    args = kernel.QueryArgs()
    for text in queries:
        query = rank.parse_query(text)
        if not query.chars:
            continue
        kept = rank.query_args(query, args)
        ids, raw, exact = ranker.kernel.match(args)
        digest.update(repr((ids, raw, exact)).encode())
        if len(query.chars) >= 2:
            digest.update(repr(ranker.kernel.near(args)).encode())
        digest.update(repr(sorted(zip(*ranker.kernel.score(args), strict=True))).encode())
        del kept
    return digest.hexdigest()


@pytest.mark.slow
def test_match_and_near_find_exactly_the_names_a_plain_definition_does(gin_ranker):
    # the character-set masks, the twice masks and the byte scans only skip work: the
    # names matched are the subsequence ones (for a glob, its segments in order), those
    # near lack at most one query character in order, and exact ones have its letters
    names = [squash(n) for n in gin_ranker.names]
    args = kernel.QueryArgs()
    for text in gin_queries()[::7] + EXTRA:
        query = rank.parse_query(text)
        q = query.chars
        if not q:
            continue
        kept = rank.query_args(query, args)
        ids, _raw, exact = gin_ranker.kernel.match(args)
        held = [i for i, n in enumerate(names) if is_subsequence(q, n)]
        if query.is_glob:
            cuts = [0, *(i for i in range(1, len(q)) if query.star_before[i]), len(q)]
            parts = [q[a:b] for a, b in itertools.pairwise(cuts)]
            held = [i for i in held if _glob_holds(parts, names[i])]
        assert ids == held, text
        assert exact == [i for i, n in enumerate(names) if n == q], text
        if len(q) >= 2:
            near = gin_ranker.kernel.near(args)
            assert near == [i for i, n in enumerate(names) if is_near(q, n)], text
        del kept


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
    assert kernel_answers(rank.Ranker(gin_ranker.names), queries) == expected


def test_the_kernel_compiles_without_a_warning(tmp_path):
    command = kernel.compile_command(kernel.SOURCE, str(tmp_path / "kernel.so"))
    proc = subprocess.run([*command, "-Wall", "-Wextra"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def plain_osa(a: str, b: str) -> int:
    """The optimal string alignment distance by its table: insert, delete, substitute, or
    swap two neighbours, no character edited twice."""
    d = [[i + j if not i or not j else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            change = d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, change)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_the_typo_distance_is_the_optimal_string_alignment_rapidfuzz_gave(gin_ranker):
    # the bit-parallel form for texts of up to 64 characters and the table past them, each
    # against the plain table and RapidFuzz's OSA (what the NumPy ranker called), on
    # random texts over a few letters (so swaps and repeats are common) and wide ones
    from rapidfuzz.distance import OSA

    generator = random.Random(35)
    alphabet = "abcé_\u03a9"
    lib = gin_ranker.kernel.lib
    for _ in range(3000):
        a = "".join(generator.choice(alphabet) for _ in range(generator.randint(1, 70)))
        b = "".join(generator.choice(alphabet) for _ in range(generator.randint(0, 70)))
        if generator.random() < 0.5:  # near each other: a swap, an edit
            b = list(a)
            k = generator.randrange(len(b))
            b[k : k + 2] = b[k : k + 2][::-1]
            b = "".join(b[: generator.randint(len(b) - 1, len(b))])
        cutoff = generator.choice((1, 2, 100))
        pa, pb = a.encode("utf-32-le"), b.encode("utf-32-le")
        got = lib.rk_osa(pa, len(a), pb, len(b), cutoff)
        truth = plain_osa(a, b)
        assert got == (truth if truth <= cutoff else cutoff + 1), (a, b, cutoff)
        assert got == OSA.distance(a, b, score_cutoff=cutoff), (a, b, cutoff)


def test_the_word_starts_of_a_query_are_those_the_index_gives_the_same_text(gin_ranker):
    # an exact name's word starts are compared with the query's, which the kernel reads
    # from the query's text: the same rule as arrays.py's, on every gin name and on odd
    # shapes (runs of capitals, digits, separators), and none for a non-ASCII text
    import ctypes

    from recall.finders.reference.arrays import name_arrays

    lib = gin_ranker.kernel.lib
    texts = [n for n in gin_ranker.names if n.isascii() and squash(n)]
    texts += ["HTTPServer2Go", "utf8_Decode", "x__Y", "ABC", "a1B2c", "_t", "IOError9x"]
    arrays = name_arrays(texts)
    for k, text in enumerate(texts):
        m = len(squash(text))
        start = int(arrays["offsets"][k])
        out = ctypes.create_string_buffer(m)
        assert lib.rk_word_starts(text.encode(), len(text), m, out) == 1, text
        assert out.raw == arrays["starts"][start : start + m].tobytes(), text
    out = ctypes.create_string_buffer(8)
    assert lib.rk_word_starts("naïve".encode(), len("naïve".encode()), 5, out) == 0
    assert lib.rk_word_starts(b"abc", 3, 2, out) == 0  # not the query's letters and digits


def test_the_order_is_the_lexsort_of_rounded_values_then_ties():
    generator = np.random.default_rng(35)
    names = [f"name{k}" for k in range(600)]
    ranker = rank.Ranker(names)
    ties = ranker.arrays["tie_rank"]
    for size in (0, 1, 7, 33, 500):
        ids = generator.permutation(len(names))[:size]
        values = np.round(generator.uniform(-3, 3, size), generator.integers(1, 9))
        values[: size // 3] = 0.5  # many equal values: the tie order decides
        if size:
            values[-1] = -0.0
        expected = ids[np.lexsort((ties[ids], -np.round(values, 6)))]
        assert ranker.kernel.order(ids.tolist(), values.tolist(), 0) == expected.tolist()
        assert ranker.kernel.order(ids.tolist(), values.tolist(), 5) == expected[:5].tolist()
    huge = [1e12, -1e12, 1e12]  # past the integer key: the pairs themselves are compared
    expected = np.array([3, 1, 2])[np.lexsort((ties[[3, 1, 2]], -np.round(huge, 6)))]
    assert ranker.kernel.order([3, 1, 2], huge, 0) == expected.tolist()


def test_prefixes_are_the_names_whose_lowercase_form_starts_with_the_query():
    # the sorted lowercased names are bisected in UTF-8's byte order, which is the code
    # points' order: every name that starts with the query, and no other, scores at least
    # PREFIX (only a prefix or the exact name does: alignments stay below 1.2)
    generator = random.Random(35)
    stems = ["a", "ab", "b", "é", "zz", "Ab", "\U0001f600"]
    for _ in range(30):
        names = sorted(
            {generator.choice(stems) + str(generator.randint(0, 40)) for _ in range(150)}
        )
        ranker = rank.Ranker(names)
        for probe in ["a1", "ab3", "zz9", "é1", "ab", "b2", "\U0001f6001", "a\U0010ffff"]:
            ids, values = ranker.score(rank.parse_query(probe))
            pairs = zip(ids.tolist(), values.tolist(), strict=True)
            scored = {i for i, v in pairs if v >= rank.PREFIX}
            starting = {i for i, n in enumerate(names) if n.lower().startswith(probe.lower())}
            assert scored == starting, (names, probe)


@pytest.mark.slow
def test_the_index_keeps_the_arrays_a_finder_would_build(gin, tmp_path):
    from recall.finders.reference.arrays import name_arrays
    from recall.finders.reference.store import Index, build

    build(gin.path, "go", tmp_path / "gin.db")
    index = Index(tmp_path / "gin.db")
    names = [index.name(i) for i in range(index.counts["names"])]
    for key, array in name_arrays(names).items():
        assert bytes(index.array(key)) == array.tobytes(), key


def test_an_index_of_another_schema_is_refused_naming_what_to_do(tmp_path):
    import sqlite3

    from recall.errors import RecallError
    from recall.finders.reference.store import MAGIC, Index

    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                      "INSERT INTO meta VALUES ('schema', '2');")  # fmt: skip
    con.close()
    older = f"^{db}: an index of an older finder \\(SQLite\\), expected schema 3 \\(index again"
    with pytest.raises(RecallError, match=older):
        Index(db)
    table = b'{"meta": {"schema": 4}, "sections": {}}'
    db.write_bytes(MAGIC + (len(MAGIC) + 8 + len(table)).to_bytes(8, "little") + table)
    with pytest.raises(RecallError, match=f"^{db}: index schema 4, expected 3 \\(index again"):
        Index(db)
    db.write_bytes(b"not an index at all")
    with pytest.raises(RecallError, match=f"^{db}: not a finder index$"):
        Index(db)
