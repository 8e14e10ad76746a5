"""The reference finder driven as a process, on a fixture tree written here."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, needs_ctags

SOURCE = """
class HTTPServer:
    def serve_forever(self): pass

def test_float_limits(): pass
def test_flag_list(): pass
def parse_config_file(): pass
def parse_conf(): pass
"""


def finder(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recall.finders.reference", *args], input=stdin, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )  # fmt: skip


def indexed(tmp_path_factory: pytest.TempPathFactory, name: str, source: str) -> Path:
    """The finder's index of one Python file holding source."""
    tree = tmp_path_factory.mktemp(name)
    (tree / f"{name}.py").write_text(source)
    path = tree.parent / f"{name}.db"
    proc = finder("index", str(tree), "--language", "python", "--db", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed(tmp_path_factory, "mod", SOURCE)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tesflolim", "test_float_limits"),
        ("tstflt", "test_float_limits"),
        ("test_floa_tlimits", "test_float_limits"),
        ("tes*lim", "test_float_limits"),
        ("httser", "HTTPServer"),
        ("HTTPServer.serve_forever", "serve_forever"),
    ],
)
@needs_ctags
def test_sloppy_queries_rank_the_intended_name_first(db, query, expected):
    proc = finder("query", query, "--db", str(db), "--json", "--limit", "5")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows[0]["name"] == expected
    assert rows[0]["file"] == "mod.py" and isinstance(rows[0]["line"], int)


@needs_ctags
@pytest.mark.slow
def test_batch_answers_each_line_in_order_and_survives_a_bad_line(db):
    lines = [json.dumps({"query": "tesflolim", "limit": 0}), "not json",
             json.dumps({"query": "parcon", "limit": 2})]  # fmt: skip
    proc = finder("query", "--batch", "--db", str(db), stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == 3
    assert answers[0][0]["name"] == "test_float_limits"
    assert "error" in answers[1]
    assert len(answers[2]) <= 2
    single = finder("query", "tesflolim", "--db", str(db), "--json", "--limit", "0")
    assert json.loads(single.stdout) == answers[0]


@needs_ctags
@pytest.mark.slow
def test_batch_echoes_the_id_it_received_with_the_answer_or_the_error(db):
    lines = [json.dumps({"id": 7, "query": "tesflolim", "limit": 0}),
             json.dumps({"id": "x", "query": "parcon", "limit": -1}),
             json.dumps({"query": "parcon", "limit": 2})]  # fmt: skip
    proc = finder("query", "--batch", "--db", str(db), stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    single = finder("query", "tesflolim", "--db", str(db), "--json", "--limit", "0")
    assert answers[0] == {"id": 7, "results": json.loads(single.stdout)}
    assert answers[1]["id"] == "x" and "limit" in answers[1]["error"]
    assert isinstance(answers[2], list)  # no id asked, none echoed: the bare list


WORD_STARTS = """
class AutoFilteredParameters: pass
def attachable_filename(): pass
def test_pluck_and_distinct(): pass
def test_pluck_with_multiple_columns_and_includes(): pass
class TestUriInnerBinding: pass
class TestRenderHTMLTemplateEmptyName: pass
"""


@pytest.fixture(scope="module")
def word_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed(tmp_path_factory, "words", WORD_STARTS)


@pytest.mark.parametrize(
    ("query", "expected", "other"),
    [
        # The rest of `attachable` is skipped to reach `filename`: an abbreviation takes a
        # prefix of each word, so that skip costs no more than the short one in `AutoF`.
        ("atfi", "attachable_filename", "AutoFilteredParameters"),
        # Consecutive words beat words picked out of a longer name.
        ("teplandi", "test_pluck_and_distinct", "test_pluck_with_multiple_columns_and_includes"),
        # A run of consecutive letters (`nn` in Inner) outweighs letters spread over words.
        ("tstrnn", "TestUriInnerBinding", "TestRenderHTMLTemplateEmptyName"),
    ],
)
@needs_ctags
def test_jumping_to_the_next_word_start_is_cheap_and_skipping_whole_words_costs(
    word_db, query, expected, other
):
    proc = finder("query", query, "--db", str(word_db), "--json", "--limit", "0")
    assert proc.returncode == 0, proc.stderr
    names = [row["name"] for row in json.loads(proc.stdout)]
    assert names.index(expected) == 0 and other in names


PREFIXES = """
def TestErr(): pass
def TestError(): pass
def TestErrorSlice(): pass
def TestErrorLogger(): pass
"""


@needs_ctags
@pytest.mark.slow
def test_names_that_start_with_the_query_come_first_the_shorter_first(tmp_path_factory):
    # `testerro` is part way through typing a name: the names that start with it beat
    # TestErr, one edit away, and among them the shortest is the likeliest end
    db = indexed(tmp_path_factory, "prefixes", PREFIXES)
    proc = finder("query", "testerro", "--db", str(db), "--json", "--limit", "0")
    assert proc.returncode == 0, proc.stderr
    names = [row["name"] for row in json.loads(proc.stdout)]
    assert names[:3] == ["TestError", "TestErrorSlice", "TestErrorLogger"]


# gin's query rows (both committed sets) and a few of every other shape (an owner, globs,
# one letter, non-ASCII, empty), each with a digest of the finder's unlimited JSON answer
# as the NumPy ranker of 3c81247 gave it: the compiled kernel must rank byte for byte the same.
GOLDEN = ROOT / "tests" / "golden" / "reference-gin.tsv"


@needs_ctags
def test_the_compiled_kernel_ranks_gin_byte_for_byte_as_the_numpy_ranker_did(gin, tmp_path):
    import hashlib

    from recall.finders.reference.rank import Finder
    from recall.finders.reference.store import build, load

    build(gin.path, "go", tmp_path / "gin.db")
    finder = Finder(load(tmp_path / "gin.db"))
    rows = [line.split("\t") for line in GOLDEN.read_text().splitlines()]
    assert len(rows) > 900
    changed = [
        query
        for query, digest in rows
        if hashlib.sha256(finder.search_json(query, 0)).hexdigest()[:16] != digest
    ]
    assert changed == []


def test_the_compiled_kernel_is_kept_in_the_users_cache_dir_never_beside_the_code(tmp_path):
    # the finder runs from a tree under test, which it must not write into: the kernel it
    # compiles (when indexing, or on first use) goes to recall's folder under
    # XDG_CACHE_HOME, and is reused
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "recall", tree / "recall", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(SOURCE)
    env = {k: v for k, v in os.environ.items() if k != "RECALL_KERNEL_CACHE"}
    env.update(PYTHONPATH=str(tree), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    db = str(tmp_path / "m.db")
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    built = []
    for args in (["index", str(tmp_path / "src"), "--language", "python"], ["query", "tesflo"]):
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "recall.finders.reference", *args, "--db", db],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        built.append(sorted((tmp_path / "cache").rglob("kernel-*.so")))
    assert proc.stdout.startswith("test_float_limits\t")
    # indexing compiles it, before any query (set-up, off the queries' clock), and the
    # query loads that one
    assert len(built[0]) == 1 and built[0][0].parent == tmp_path / "cache" / "recall" / "kernel"
    assert built[1] == built[0]
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before


def test_a_finder_without_a_c_compiler_says_so_in_one_line(tmp_path, db):
    env = {k: v for k, v in os.environ.items() if k != "RECALL_KERNEL_CACHE"}
    env.update(PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env["PATH"] = str(tmp_path)  # no cc there
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "recall.finders.reference", "query", "tesflo", "--db",
         str(db)], capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "recall.finders.reference: the reference finder compiles kernel.c on first use and "
        "needs a C compiler: no `cc` on PATH (install gcc)"
    ]


def test_the_arrays_built_a_few_names_at_a_time_equal_those_built_at_once(monkeypatch):
    # the ranker builds its arrays CHUNK names at a time: where a run of names ends must
    # show nowhere, in the codes, word starts, skip costs, offsets or masks
    import numpy as np

    from recall.finders.reference import rank

    names = [f"{w}_{v}Name{k}" for k in range(500) for w, v in (("test", "ÉtéFoo"), ("x", "ab"))]
    names += ["", "__", "HTTPServer", "naïve_café", "Ωmega2go"]
    whole = rank.Ranker(names)
    monkeypatch.setattr(rank, "CHUNK", 997)
    chunked = rank.Ranker(names)
    for field in ("codes", "starts", "through", "offsets", "lengths", "masks"):
        assert np.array_equal(getattr(chunked.packed, field), getattr(whole.packed, field)), field
    assert whole.packed.through.dtype == np.float32 and whole.packed.codes.size > 1000


def test_a_damaged_kernel_in_the_cache_is_built_again(tmp_path, monkeypatch, db):
    monkeypatch.setenv("RECALL_KERNEL_CACHE", str(tmp_path))
    assert finder("query", "tesflo", "--db", str(db)).returncode == 0
    (built,) = tmp_path.glob("kernel-*.so")
    built.write_bytes(b"not a library")
    proc = finder("query", "tesflo", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("test_float_limits\t")
    assert built.read_bytes()[:4] == b"\x7fELF"


def test_an_unwritable_kernel_cache_is_one_line_naming_it(tmp_path, monkeypatch):
    from recall.errors import RecallError
    from recall.finders.reference import kernel

    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("RECALL_KERNEL_CACHE", str(blocker / "kernels"))
    kernel.library.cache_clear()
    try:
        with pytest.raises(RecallError, match=f"cannot write the compiled kernel into {blocker}"):
            kernel.library()
    finally:
        kernel.library.cache_clear()
