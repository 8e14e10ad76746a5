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


def answer_names(db: Path, query: str) -> list[str]:
    """The names of the finder's unlimited answer to query, best first."""
    proc = finder("query", query, "--db", str(db), "--json", "--limit", "0")
    assert proc.returncode == 0, proc.stderr
    return [row["name"] for row in json.loads(proc.stdout)]


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
def local_key_get_panic_caller(): pass
class LockGuard: pass
class ErrorTypeAny: pass
class Meta: pass
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
        # Word starts typed one after the other (an acronym, as a picker's user types it)
        # beat the same letters as a run inside a word or reached by skipping into one.
        ("eta", "ErrorTypeAny", "Meta"),
        ("lkg", "local_key_get_panic_caller", "LockGuard"),
    ],
)
@needs_ctags
def test_jumping_to_the_next_word_start_is_cheap_and_skipping_whole_words_costs(
    word_db, query, expected, other
):
    names = answer_names(word_db, query)
    assert names.index(expected) == 0 and other in names


WHOLE_WORDS = """
class Result: pass
def collect_results_ok(): pass
def __feature_suspense__(): pass
def requiredFeatures(): pass
def key_b_c_hash(): pass
def key_bch(): pass
class Filename: pass
def file_name(): pass
"""


@pytest.fixture(scope="module")
def whole_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed(tmp_path_factory, "whole", WHOLE_WORDS)


@pytest.mark.parametrize(
    ("query", "expected", "other"),
    [
        # A word typed whole, found whole in the middle of a name, beats a name one edit
        # from the query (Result, the query less its `s`).
        ("results", "collect_results_ok", "Result"),
        # ... and beats the same letters as a run that runs on into the next word.
        ("features", "requiredFeatures", "__feature_suspense__"),
        # A run of one-letter words is letters typed, no word typed whole: the alignment
        # decides, and there a run inside one word beats letters spread over two.
        ("bc", "key_bch", "key_b_c_hash"),
        # The whole name typed in another convention: the name with the query's word
        # starts beats one that is the same lowercased but has other words.
        ("fileName", "file_name", "Filename"),
    ],
)
@needs_ctags
def test_a_name_holding_the_query_as_whole_words_beats_typos_and_runs_across_words(
    whole_db, query, expected, other
):
    names = answer_names(whole_db, query)
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
    names = answer_names(db, "testerro")
    assert names[:3] == ["TestError", "TestErrorSlice", "TestErrorLogger"]


# gin's query rows (both committed sets) and a few of every other shape (an owner, globs,
# one letter, non-ASCII, empty), each with a digest of the finder's unlimited JSON answer:
# as the NumPy ranker of 3c81247 gave it, then with the weights of DECISIONS.md's entry 12
# (241 of the 966 answers moved), then with entry 13's rules (whole words, an exact name's
# word starts: 63 moved): the kernel must rank byte for byte the same.
GOLDEN = ROOT / "tests" / "golden" / "reference-gin.tsv"


@needs_ctags
def test_the_compiled_kernel_ranks_gin_byte_for_byte_as_the_numpy_ranker_did(gin, tmp_path):
    import hashlib

    from recall.finders.reference.rank import Finder
    from recall.finders.reference.store import Index, build

    build(gin.path, "go", tmp_path / "gin.db")
    finder = Finder(Index(tmp_path / "gin.db"))
    rows = [line.split("\t") for line in GOLDEN.read_text().splitlines()]
    assert len(rows) > 900
    changed = [
        query
        for query, digest in rows
        if hashlib.sha256(finder.search_json(query, 0)).hexdigest()[:16] != digest
    ]
    assert changed == []


def test_the_index_compiles_the_kernel_into_the_users_cache_dir_and_a_query_compiles_nothing(
    tmp_path,
):
    # the finder runs from a tree under test, which it must not write into: the kernel the
    # index compiles goes to recall's folder under XDG_CACHE_HOME, and the index carries
    # it, so a query (whose start-up is the queries' time) needs no compiler and no cache
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "recall", tree / "recall", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(SOURCE)
    env = {k: v for k, v in os.environ.items() if k != "RECALL_KERNEL_CACHE"}
    env.update(PYTHONPATH=str(tree), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    db = str(tmp_path / "m.db")
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    index = ["index", str(tmp_path / "src"), "--language", "python"]
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "recall.finders.reference", *index, "--db", db],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "cache" / "recall" / "kernel").glob("*/kernel.so"))) == 1
    shutil.rmtree(tmp_path / "cache")
    env["PATH"] = str(tmp_path)  # no cc, no cache: the query loads the index's library
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "recall.finders.reference", "query", "tesflo", "--db", db],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("test_float_limits\t")
    assert not (tmp_path / "cache").exists()
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before


def test_an_index_without_a_c_compiler_says_so_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RECALL_KERNEL_CACHE"}
    env.update(PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    tools = tmp_path / "bin"  # git and ctags, but no cc
    tools.mkdir()
    for program in ("git", "ctags"):
        (tools / program).symlink_to(shutil.which(program) or program)
    env["PATH"] = str(tools)
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "recall.finders.reference", "index", str(tmp_path),
         "--language", "python", "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "recall.finders.reference: the reference finder compiles kernel.c when it indexes and "
        "needs a C compiler: no `cc` on PATH (install gcc)"
    ]
    assert not (tmp_path / "x.db").exists()


def test_the_arrays_built_a_few_names_at_a_time_equal_those_built_at_once(monkeypatch):
    # the arrays are built CHUNK names at a time: where a run of names ends must show
    # nowhere, in the codes, word starts, offsets, masks or bit sets
    import numpy as np

    from recall.finders.reference import arrays

    names = [f"{w}_{v}Name{k}" for k in range(500) for w, v in (("test", "ÉtéFoo"), ("x", "ab"))]
    names += ["", "__", "HTTPServer", "naïve_café", "Ωmega2go"]
    whole = arrays.name_arrays(names)
    monkeypatch.setattr(arrays, "CHUNK", 997)
    chunked = arrays.name_arrays(names)
    assert sorted(whole) == sorted(chunked)
    for field, array in whole.items():
        assert np.array_equal(chunked[field], array) and chunked[field].dtype == array.dtype, field
    assert whole["codes"].size > 1000


def test_the_skip_costs_the_kernel_computes_are_the_running_sums_the_numpy_ranker_made():
    # each character's skip cost is summed, in float64, over every character of every
    # name in order, and a name's are that sum less its value at the name's start, in
    # float32: the kernel computes them when it opens the names (they depend on the
    # weights, which the index must not), exactly as NumPy's cumsum did
    import numpy as np

    from recall.finders.reference import rank, weights

    names = [f"{w}Vowels{k}_aeiou" for k in range(3000) for w in ("test", "xyz", "")] + ["", "é"]
    ranker = rank.Ranker(names)
    codes = ranker.arrays["codes"]
    vowel = np.isin(codes, [ord(v) for v in "aeiou"])
    step = np.where(vowel, weights.SKIP_VOWEL, weights.SKIP_OTHER)
    run = np.cumsum(np.concatenate(([0.0], step)), dtype=np.float64)
    start = run[ranker.arrays["offsets"]]
    owner = np.repeat(np.arange(len(names)), ranker.arrays["lengths"])
    expected = (run[1:] - start[owner]).astype(np.float32)
    got = np.array(ranker.kernel.through(codes.size), dtype=np.float32)
    assert got.tobytes() == expected.tobytes()


def test_a_damaged_kernel_in_the_cache_is_one_warning_line_and_compiled_again(tmp_path):
    # the compiled kernel is an entry of recall's cache: its digest is checked when it is
    # read, so a library copied over it is dropped, with one line naming it, not loaded
    from recall.finders.reference import kernel

    env = {**os.environ, "RECALL_KERNEL_CACHE": str(tmp_path / "kernels")}
    source = tmp_path / "src"
    source.mkdir()
    (source / "m.py").write_text(SOURCE)
    index = ["index", str(source), "--language", "python", "--db", str(tmp_path / "m.db")]

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "recall.finders.reference", *index], capture_output=True,
            text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300,
        )  # fmt: skip

    assert run().returncode == 0
    (built,) = (tmp_path / "kernels").glob(f"*/{kernel.LIBRARY}")
    good = built.read_bytes()
    other = tmp_path / "other.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(other), "-x", "c", "-"],
                   input="int rk_version(void) { return 3; }\n", text=True, check=True)  # fmt: skip
    built.write_bytes(other.read_bytes())
    proc = run()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"recall: warning: cache entry {built.parent} does not match its digest (edited on "
        "disk?): dropped, made again"
    ]
    assert built.read_bytes() == good
    query = finder("query", "tesflo", "--db", str(tmp_path / "m.db"))
    assert query.returncode == 0 and query.stdout.startswith("test_float_limits\t")


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("kernel", "its compiled kernel does not match its digest (index again)"),
        ("source", "its kernel was compiled from another kernel.c (index again with this finder)"),
    ],
)
@needs_ctags
def test_an_index_whose_kernel_is_not_this_kernel_c_s_is_refused_before_any_query(
    tmp_path, db, damage, said
):
    # the library an index carries is loaded by every query process: a byte of it changed,
    # or a library compiled from another kernel.c (an index made by other code), is one
    # line naming the index, never a query answered by it
    import orjson

    from recall.finders.reference.store import MAGIC, Index

    copy = tmp_path / "copy.db"
    data = bytearray(db.read_bytes())
    index = Index(db)
    if damage == "kernel":
        data[index._sections["kernel"][2] + 100] ^= 0xFF
    else:
        start = len(MAGIC) + 8
        table = orjson.loads(bytes(data[start : index._first]).rstrip(b"\0"))
        table["meta"]["kernel source"] = "0" * 64
        text = orjson.dumps(table)
        data[start : start + len(text)] = text
    copy.write_bytes(bytes(data))
    proc = finder("query", "--batch", "--db", str(copy), stdin='{"query": "tesflo"}\n')
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"recall.finders.reference: {copy}: {said}\n"


def test_an_unwritable_kernel_cache_is_one_line_naming_it(tmp_path, monkeypatch):
    from recall.errors import RecallError
    from recall.finders.reference import kernel

    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("RECALL_KERNEL_CACHE", str(blocker / "kernels"))
    with pytest.raises(RecallError, match=f"cannot write the compiled kernel into {blocker}"):
        kernel.build()


def _query_imports(db: Path, query: str) -> tuple[list[dict], str]:
    """A query process's answer (--json) and which of NumPy, RapidFuzz and sqlite3 it
    imported, as a sorted list's text."""
    code = (
        "import sys\n"
        "from recall.finders.reference.__main__ import main\n"
        f"main(['query', {query!r}, '--db', {str(db)!r}, '--json'])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'rapidfuzz', 'sqlite3'}))"
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer, imported = proc.stdout.splitlines()
    return json.loads(answer), imported


def test_a_query_process_imports_neither_numpy_nor_rapidfuzz(db):
    # a query process's start-up counts in its queries' time: it maps the index and
    # loads the kernel the index carries, and every rule runs in the kernel
    answer, imported = _query_imports(db, "tesflo")
    assert answer[0]["name"] == "test_float_limits"
    assert imported == "[]"


@needs_ctags
def test_a_names_list_s_index_ranks_its_names_as_a_corpus_index_ranks_the_same_names(db, tmp_path):
    # index-names (the preset's index_names: the judgments set's candidates) writes the
    # same kind of file as index, whose query path is the corpus index's: the same names
    # get the same order (the tie order is of the names alone), its rows naming the name
    from recall.finders.reference.store import MAGIC, SCHEMA, Index

    corpus = Index(db)
    names = sorted(corpus.name(i) for i in range(corpus.counts["names"]))
    listed = tmp_path / "names.txt"
    listed.write_text("".join(f"{n}\n" for n in names))
    alone = tmp_path / "names.db"
    proc = finder("index-names", str(listed), "--db", str(alone))
    assert proc.returncode == 0, proc.stderr
    assert alone.read_bytes().startswith(MAGIC)
    index = Index(alone)
    assert index.meta["schema"] == SCHEMA and index.counts["names"] == len(names) == 6
    for query in ("tesflolim", "tstflt", "test_floa_tlimits", "tes*lim", "httser", "parcon"):
        got = [json.loads(finder("query", query, "--db", str(d), "--json").stdout)
               for d in (db, alone)]  # fmt: skip
        assert [r["name"] for r in got[1]] == [r["name"] for r in got[0]], query
        assert got[0] and all(set(r) == {"name"} for r in got[1]), query


def test_a_names_list_is_indexed_verbatim_and_its_queries_import_no_numpy(tmp_path):
    # the names file is read as bytes, split on newlines alone: a name keeps its spaces
    # and a carriage return (no newline translation); the query process maps the index
    # as it maps a corpus's, with no NumPy, and its text output is the name alone
    listed = tmp_path / "names.txt"
    listed.write_bytes(b"  foo bar \nfoo\rbar\nfoobar\nzzz\n")
    db = tmp_path / "names.db"
    proc = finder("index-names", str(listed), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    answer, imported = _query_imports(db, "fobar")
    assert imported == "[]"
    found = [row["name"] for row in answer]
    assert set(found) == {"foobar", "  foo bar ", "foo\rbar"}, found
    text = finder("query", "zzz", "--db", str(db))
    assert text.returncode == 0 and text.stdout == "zzz\n", text


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "cannot read"), (b"ok\n\xff\n", "cannot read"), (b"a\0b\n", "a NUL character")],
)
def test_a_names_list_that_cannot_be_indexed_is_one_line_and_no_index(tmp_path, content, said):
    listed = tmp_path / "names.txt"
    if content is not None:
        listed.write_bytes(content)
    db = tmp_path / "names.db"
    proc = finder("index-names", str(listed), "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"recall.finders.reference: {listed}: ") and said in line, line
    assert not db.exists() and list(tmp_path.iterdir()) == ([listed] if content else [])


# `cc` stand-ins, each on PATH for a whole run: one that exits 0 and writes nothing, one
# that compiles something else (a library without the kernel's functions)
SILENT_CC = "#!/bin/sh\nexit 0\n"
OTHER_CC = (
    "#!/bin/sh\n"
    'for a; do case "$prev" in -o) out="$a";; esac; prev="$a"; done\n'
    '[ -n "$out" ] || exit 0\n'
    'printf "int rk_version(void) { return 3; }\\n" | {real} -shared -fPIC -x c -o "$out" -\n'
)


@pytest.mark.parametrize(
    ("script", "said"),
    [
        (SILENT_CC, "cc exited 0 but wrote no library"),
        (OTHER_CC, "the compiled kernel has no rk_check (not built from this kernel.c)"),
    ],
)
@needs_ctags
@pytest.mark.slow
def test_a_compiler_that_makes_no_kernel_stops_the_run_in_one_line_before_any_query(
    tmp_path, script, said
):
    from conftest import run_cli

    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "cc").write_text(script.replace("{real}", shutil.which("cc") or "cc"))
    (folder / "cc").chmod(0o755)
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    proc = run_cli("--repo", "gin", "--no-cache", "--json", env={"PATH": path})
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("recall: ") and said in line, line
    assert proc.stdout == ""


# Runs the finder's index as `python -m recall.finders.reference` would, noting every file
# it opens (Python's audit hook) and every module it imports, then leaves as it does.
AUDITED = """
import os, runpy, sys
read = set()
def note(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        read.add(os.fsdecode(args[0]))
sys.addaudithook(note)
def leave(status, _exit=os._exit):
    read.update(m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None))
    with open(os.environ["AUDIT_OUT"], "w") as out:
        out.write("\\n".join(sorted(read)))
    _exit(status)
os._exit = leave
sys.argv = ["recall.finders.reference", *sys.argv[1:]]
runpy.run_module("recall.finders.reference", run_name="__main__", alter_sys=True)
"""


def _tree_files_read(tmp_path: Path, argv: list[str]) -> set[Path]:
    """The files of recall's tree the finder's command argv opens or imports (a module's
    cached bytecode counted as its source)."""
    out = tmp_path / f"opened-{argv[0]}.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUDIT_OUT": str(out),
           "RECALL_KERNEL_CACHE": str(tmp_path / "kernels")}  # fmt: skip
    proc = subprocess.run([sys.executable, "-P", "-c", AUDITED, *argv], capture_output=True,
                          text=True, env=env, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    read = set()
    for line in out.read_text().splitlines():
        path = Path(line)
        if path.is_relative_to(ROOT / "recall"):
            if path.parent.name == "__pycache__":  # a module's cached bytecode: its source
                path = path.parent.parent / f"{path.name.split('.')[0]}.py"
            read.add(path)
    return read


@needs_ctags
def test_the_presets_index_inputs_are_every_file_of_the_tree_its_index_reads(tmp_path, gin):
    # a kept index is known by the files it declares (docs/engines.md): they must be all
    # the index commands (`index` of a corpus, `index-names` of a names list: the preset's
    # index and index_names) import or read in the tree, or a change to one it leaves out
    # would reuse an index made by other code; and only those, or a change of weights.py
    # would index again for nothing
    from recall.finders.engine import load_preset

    engine = load_preset("reference")
    assert engine.index[1] == "index" and engine.index_names[1] == "index-names"
    declared = {p for pattern in engine.index_inputs for p in ROOT.glob(pattern)}
    assert declared and all(p.is_file() for p in declared)
    index = ["index", str(gin.path), "--language", "go", "--db", str(tmp_path / "gin.db")]
    names = tmp_path / "names.txt"
    names.write_text("serve_forever\ntest_float_limits\n")
    listed = ["index-names", str(names), "--db", str(tmp_path / "names.db")]
    read, read_names = _tree_files_read(tmp_path, index), _tree_files_read(tmp_path, listed)
    assert read | read_names == declared, (
        sorted((read | read_names) - declared),
        sorted(declared - read - read_names),
    )
    assert read_names <= read  # a names list needs nothing of the tree a corpus does not


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "tesflo", "--db", "x.db", "--json", "--limit", "5"],
        ["query", "--batch", "--db", "x.db"],
        ["query", "--db", "x.db", "tes flo", "--limit", "0"],
        ["query", "--db", "x.db"],
        ["query", "-tesflo", "--db", "x.db"],
        ["query", "--db=x.db", "q"],
        ["query", "q", "--db", "x.db", "--limit", "five"],
        ["query", "q", "r", "--db", "x.db"],
        ["query", "q", "--db"],
        ["query", "q", "--db", "x.db", "--help"],
        ["index", "src", "--language", "python", "--db", "x.db"],
    ],
)
def test_a_query_read_without_argparse_is_read_as_argparse_reads_it(argv, capsys):
    # the query process reads its plain command line by hand (argparse costs some
    # milliseconds of its start-up): what it reads is argparse's reading, and anything
    # else is left to argparse, refusal and usage line included
    from recall.finders.reference.__main__ import _parser, _plain_query

    plain = _plain_query(argv)
    try:
        parsed = vars(_parser().parse_args(argv))
    except SystemExit:
        parsed = None
    if plain is not None:
        assert vars(plain) == parsed
    capsys.readouterr()


def test_qualified_parts_split_as_the_qualifier_expression_does():
    import random
    import re

    from recall.finders.reference.rank import qualified_parts

    generator = random.Random(35)
    for _ in range(3000):
        text = "".join(generator.choice("ab:.#") for _ in range(generator.randint(0, 12)))
        expected = [p for p in re.split(r"::|[.#]", text) if p]
        assert qualified_parts(text) == expected, text
