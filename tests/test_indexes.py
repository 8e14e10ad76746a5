"""index_cache: a deterministic index kept under the cache, reused, and never trusted when
anything it was made from differs, half written, or written into by the finder."""

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import ROOT, make_repo, run_cli

from recall.cache import _checked as checked
from recall.finders.engine import load_engine
from recall.inputs.queryset import QueryRow
from recall.inputs.symbols import checkout_symbols, distinct_names
from recall.running.indexes import KIND, MARKER
from recall.running.measure import run_binary
from recall.running.values import Corpus, FinderBuild

# The index step logs each run, then writes the names, sorted, into {db}; FAIL makes it
# write half an index and fail. A query reads only {db}, and the query "scribble" writes
# into it, as a finder that keeps state in its database would.
INDEX = r"""
import os, sys
names, db, log = sys.argv[1:4]
if os.path.isdir(log):
    log = os.path.join(log, "index.log")
with open(log, "a") as handle:
    handle.write("indexed\n")
os.makedirs(os.path.join(db, "data"), exist_ok=True)
with open(os.path.join(db, "data", "names.txt"), "w") as out:
    lines = sorted(open(names).read().splitlines())
    if os.environ.get("FAIL"):
        out.write("\n".join(lines[:10]))
        sys.exit("failed on purpose")
    out.write("\n".join(lines) + "\n")
"""
QUERY = r"""
import os, sys
query, db = sys.argv[1], sys.argv[2]
path = os.path.join(db, "data", "names.txt")
if query == "scribble":
    with open(path, "w") as out:
        out.write("Scribbled\n")
names = open(path).read().splitlines()
print("\n".join(sorted((n for n in names if query.lower() in n.lower()), key=len)))
"""
ENGINE = """[engine]
bin = ["{python}"]
index = ["{bin}", "{tree}/index.py", "{names}", "{db}", "{tree}/index.log"]
query = ["{bin}", "{tree}/query.py", "{query}", "{db}"]
output = "lines"
index_cache = true
"""


@pytest.fixture
def finder(tmp_path: Path) -> Path:
    tree = tmp_path / "finder"
    tree.mkdir()
    (tree / "index.py").write_text(INDEX)
    (tree / "query.py").write_text(QUERY)
    (tree / "recall.toml").write_text(ENGINE)
    return tree


@pytest.fixture
def corpus(tmp_path: Path, real_cache: Path, gin) -> Corpus:
    """gin, with a cache of the test's own for the kept indexes."""
    return Corpus(gin, distinct_names(checkout_symbols(gin, real_cache)), tmp_path / "cache")


ROWS = [
    QueryRow("gin", "Context", "exact", "Context"),
    QueryRow("gin", "Engine", "exact", "Engine"),
]


def _run(tree: Path, corpus: Corpus, build: str | None, rows=ROWS):
    binary = FinderBuild("kept", load_engine(tree / "recall.toml"), tree, sys.executable)
    return run_binary(binary, rows, {"gin": corpus}, jobs=1, timeout=10, build=build)


def _indexed(tree: Path) -> int:
    log = tree / "index.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _entries(corpus: Corpus) -> list[Path]:
    assert corpus.cache is not None
    root = corpus.cache / KIND
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def test_a_second_run_of_the_same_build_reuses_the_kept_index(finder, corpus):
    first = _run(finder, corpus, "file:one")
    second = _run(finder, corpus, "file:one")
    assert _indexed(finder) == 1
    assert second.results == first.results
    assert {r.rank for r in second.results} == {1}
    (entry,) = _entries(corpus)
    assert (entry / MARKER).is_file() and (entry / "db" / "data" / "names.txt").is_file()


@pytest.mark.parametrize("change", ["build", "pin", "names"])
def test_a_kept_index_is_not_reused_when_what_it_was_made_from_changes(finder, corpus, change):
    _run(finder, corpus, "file:one")
    build, other = "file:one", corpus
    if change == "build":
        build = "file:two"
    elif change == "pin":
        # another pin of the same tree (a sha other than the checkout's is refused now)
        pin = dataclasses.replace(corpus.checkout.pin, url="https://example.org/gin.git")
        other = dataclasses.replace(corpus, checkout=dataclasses.replace(corpus.checkout, pin=pin))
    else:
        other = dataclasses.replace(corpus, names=corpus.names[1:])
    _run(finder, other, build)
    assert _indexed(finder) == 2
    assert len(_entries(corpus)) == 2
    _run(finder, other, build)  # and the new one is kept in turn
    assert _indexed(finder) == 2


def test_a_build_without_a_cache_identity_never_keeps_or_reuses_an_index(finder, corpus):
    """A working tree (or --no-cache) passes no build: its index is its own every time."""
    _run(finder, corpus, "file:one")
    _run(finder, corpus, None)
    _run(finder, corpus, None)
    assert _indexed(finder) == 3
    assert len(_entries(corpus)) == 1


def test_an_engine_without_index_cache_indexes_every_run(finder, corpus):
    (finder / "recall.toml").write_text(ENGINE.replace("index_cache = true\n", ""))
    _run(finder, corpus, "file:one")
    _run(finder, corpus, "file:one")
    assert _indexed(finder) == 2
    assert _entries(corpus) == []


def test_a_failed_index_is_not_kept_and_the_next_run_indexes_again(finder, corpus):
    from recall.errors import RecallError

    failing = ENGINE.replace('output = "lines"', 'output = "lines"\nenv = { FAIL = "1" }')
    (finder / "recall.toml").write_text(failing)
    with pytest.raises(RecallError, match=r"index gin with kept failed \(exit 1\)"):
        _run(finder, corpus, "file:one")
    assert _entries(corpus) == []
    assert not list((corpus.cache / KIND).glob(".tmp-*"))
    (finder / "recall.toml").write_text(ENGINE)
    run = _run(finder, corpus, "file:one")
    assert _indexed(finder) == 2
    assert {r.rank for r in run.results} == {1}


def test_a_finder_that_writes_into_its_db_does_not_change_the_kept_copy(finder, corpus):
    """Neither the run that made the kept index nor one that copied it in can write into
    it: each session has its own copy."""
    rows = [QueryRow("gin", "scribble", "exact", "Context"), *ROWS]
    for _ in range(2):  # made, then copied in
        run = _run(finder, corpus, "file:one", rows)
        assert [r.rank for r in run.results] == [None, None, None]  # it spoilt its own copy
        (entry,) = _entries(corpus)
        kept = (entry / "db" / "data" / "names.txt").read_text()
        assert "Scribbled" not in kept and "Context\n" in kept
    clean = _run(finder, corpus, "file:one")
    assert _indexed(finder) == 1
    assert {r.rank for r in clean.results} == {1}


def test_a_half_written_entry_without_its_marker_is_indexed_again(finder, corpus):
    """What a store killed between its copy and its rename would leave, were the rename
    not last: a folder under the entry's name without the marker is never trusted."""
    _run(finder, corpus, "file:one")
    (entry,) = _entries(corpus)
    (entry / MARKER).unlink()
    (entry / "db" / "data" / "names.txt").write_text("Half\n")
    run = _run(finder, corpus, "file:one")
    assert _indexed(finder) == 2
    assert {r.rank for r in run.results} == {1}
    assert (entry / MARKER).is_file()
    assert "Half" not in (entry / "db" / "data" / "names.txt").read_text()


def test_a_kept_index_edited_on_disk_is_dropped_with_one_warning_and_indexed_again(
    finder, corpus, capsys
):
    """Class 5: an entry still well-formed but edited (a name taken out of its db file, so
    that Engine would be missed) does not match its digest: one warning line naming it,
    the index made again, and the right ranks."""
    _run(finder, corpus, "file:one")
    (entry,) = _entries(corpus)
    names = entry / "db" / "data" / "names.txt"
    names.write_text("".join(f"{n}\n" for n in names.read_text().splitlines() if n != "Engine"))
    checked.cache_clear()  # as the next process: each entry is checked once per run
    capsys.readouterr()
    run = _run(finder, corpus, "file:one")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(entry) in err and "does not match its digest" in err
    assert _indexed(finder) == 2
    assert {r.rank for r in run.results} == {1}
    assert "Engine\n" in names.read_text()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('index_cache = "yes"', r"\[engine\] index_cache must be true or false"),
        ("index_cache = 1", r"\[engine\] index_cache must be true or false"),
        ("index_cache = true", r"\[engine\] index_cache = true needs an index command"),
    ],
)
def test_a_bad_index_cache_is_exit_2_with_one_line_naming_file_and_key(tmp_path, line, message):
    import re

    make_repo(tmp_path / "finder", {"finder.py": ""})
    engine = tmp_path / "engine.toml"
    body = ENGINE.replace("index_cache = true", line)
    if "needs an index" in message:
        body = "\n".join(b for b in body.splitlines() if not b.startswith("index ")) + "\n"
    engine.write_text(body)
    proc = run_cli(
        "--finder", str(tmp_path / "finder"), "--corpus", str(ROOT / "corpus.json"),
        "--queries", str(ROOT / "queries.tsv"), "--engine", str(engine),
        "--cache", str(tmp_path / "cache"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1
    assert re.fullmatch(f"recall: {re.escape(str(engine))}: {message}\n", proc.stderr)


def test_a_base_and_an_unchanged_working_tree_reuse_their_kept_indexes(tmp_path, gin):
    """Through the CLI: `--base HEAD` is known by its commit and the working tree by its
    content, so runs that miss the results cache (another --timeout) copy their kept
    indexes, until a file of the working tree changes; the queries run every time."""
    files = {"index.py": INDEX, "query.py": QUERY, "recall.toml": ENGINE}
    make_repo(tmp_path / "finder", files)
    tree = tmp_path / "finder"
    logs = tmp_path / "logs"  # a folder: a file an argv names is in the key by content
    logs.mkdir()
    log = logs / "index.log"
    (tree / "recall.toml").write_text(ENGINE.replace("{tree}/index.log", str(logs)))
    cache = tmp_path / "cache"

    def run(timeout: str) -> None:
        proc = run_cli(
            "--finder", str(tree), "--corpus", str(ROOT / "corpus.json"),
            "--queries", str(ROOT / "queries.tsv"), "--cache", str(cache), "--repo", "gin",
            "--type", "hand", "--allow-empty", "--base", "HEAD",
            "--same-program-ok", "--timeout", timeout, "--json",
            cwd=tree,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert [run["errors"] for run in report["runs"]] == [0, 0]

    run("10")
    run("11")
    assert len(log.read_text().splitlines()) == 2  # each side indexed once, then copied
    (tree / "notes.txt").write_text("an untracked file is part of the tree\n")
    run("12")
    assert len(log.read_text().splitlines()) == 3  # the working tree's index, anew
    assert len([p for p in (cache / KIND).iterdir() if p.is_dir()]) == 3


def test_recall_cache_lists_a_kept_index_and_prune_removes_it_once_unused(finder, corpus, tmp_path):
    import os

    from recall.cache import release_in_use

    _run(finder, corpus, "file:one")
    release_in_use()  # this test process is not a running harness
    (entry,) = _entries(corpus)
    proc = run_cli("cache", "list", "--cache", str(corpus.cache), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert [r[:2] for r in rows if r[0] == KIND] == [[KIND, entry.name]]
    old = 1_000_000_000
    for stamp in (entry / MARKER, corpus.cache / KIND / f"{entry.name}.inuse"):
        os.utime(stamp, (old, old))
    proc = run_cli(
        "cache", "prune", "--older-than", "30", "--cache", str(corpus.cache), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert f"removed\t{KIND}\t{entry.name}" in proc.stdout
    assert _entries(corpus) == []
    _run(finder, corpus, "file:one")
    assert _indexed(finder) == 2


def test_an_engine_that_declares_its_index_inputs_is_known_by_those_files_alone(finder, corpus):
    # index_inputs: the key holds the declared files' content, not the build's identity,
    # so another build (a commit, a working tree) with those files alike reuses the index,
    # and a change to one of them indexes anew
    engine = ENGINE + 'index_inputs = ["index.py"]\n'
    (finder / "recall.toml").write_text(engine)
    _run(finder, corpus, "file:one")
    (finder / "query.py").write_text(QUERY + "# not read by the index\n")
    _run(finder, corpus, "file:two")
    assert _indexed(finder) == 1 and len(_entries(corpus)) == 1
    (finder / "index.py").write_text(INDEX + "# read by the index\n")
    _run(finder, corpus, "file:three")
    assert _indexed(finder) == 2 and len(_entries(corpus)) == 2
    # a tree without a declared file (one older than the declaration) is known by its
    # build again, as without index_inputs
    (finder / "recall.toml").write_text(engine.replace('["index.py"]', '["index.py", "gone.py"]'))
    _run(finder, corpus, "file:three")
    _run(finder, corpus, "file:four")
    assert _indexed(finder) == 4


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('index_inputs = ["/etc/passwd"]', "must be a path or glob inside {tree}, relative to it"),
        ('index_inputs = ["../x.py"]', "must be a path or glob inside {tree}, relative to it"),
        ('index_inputs = ["{tree}/x.py"]', "must be a path or glob inside {tree}, relative to it"),
        ('index_inputs = "x.py"', "index_inputs must be a list of strings"),
    ],
)
def test_a_bad_index_inputs_is_one_line_naming_file_and_key(tmp_path, line, message):
    engine = tmp_path / "engine.toml"
    engine.write_text(ENGINE + line + "\n")
    proc = run_cli("--engine", str(engine), "--repo", "gin", "--cache", str(tmp_path / "cache"),
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"recall: {engine}: [engine] ") and message in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_index_inputs_without_index_cache_is_refused(tmp_path):
    engine = tmp_path / "engine.toml"
    engine.write_text(ENGINE.replace("index_cache = true\n", 'index_inputs = ["index.py"]\n'))
    proc = run_cli("--engine", str(engine), "--repo", "gin", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"recall: {engine}: [engine] index_inputs needs index_cache = true\n"


@pytest.mark.slow
def test_the_reference_finder_reindexes_for_a_change_it_reads_and_not_for_its_weights(
    tmp_path, gin
):
    # the verdict loop: a one-line change in weights.py, which no index reads, reuses the
    # kept index of the working tree; a change in store.py, which the index runs, does not
    tree = tmp_path / "finder"
    shutil.copytree(ROOT / "recall", tree / "recall", ignore=shutil.ignore_patterns("__pycache__"))
    make_repo(tree, {"README": "a copy of recall, as a finder's working tree\n"})
    cache = tmp_path / "cache"

    def run() -> dict:
        proc = run_cli(
            "--finder", str(tree), "--cache", str(cache), "--repo", "gin", "--type", "abbr3",
            "--json", cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["runs"][0]

    def entries() -> int:
        return len([p for p in (cache / KIND).iterdir() if p.is_dir()])

    first = run()
    weights = tree / "recall" / "finders" / "reference" / "weights.py"
    weights.write_text(weights.read_text().replace("BONUS_FIRST = 3.0", "BONUS_FIRST = -30.0"))
    changed = run()
    assert entries() == 1  # the same kept index, and new answers from the new weights
    assert changed["first"] < first["first"]
    store = tree / "recall" / "finders" / "reference" / "store.py"
    store.write_text(store.read_text() + "# a line the index reads\n")
    assert run()["first"] == changed["first"]
    assert entries() == 2


@pytest.mark.slow
def test_a_names_list_s_kept_index_is_known_by_its_names_and_the_declared_inputs(tmp_path):
    # a judgments run keeps each candidate list's index (the reference finder's
    # index-names) by the list's names, with no pin and not by the judgments rows, and, as
    # the preset declares index_inputs, by those files of the tree alone: a change of
    # weights.py reuses every list's kept index, one of store.py indexes each again
    from recall.inputs.judgments import candidates, read_judgments

    judged = ROOT / "tests" / "fixtures" / "zerobrane-judgments.tsv"
    lists = len({tuple(names) for names in candidates(read_judgments(judged)).values()})
    tree = tmp_path / "finder"
    shutil.copytree(ROOT / "recall", tree / "recall", ignore=shutil.ignore_patterns("__pycache__"))
    make_repo(tree, {"README": "a copy of recall, as a finder's working tree\n"})
    cache = tmp_path / "cache"

    def run(queries: Path = judged) -> dict:
        proc = run_cli(
            "--finder", str(tree), "--cache", str(cache), "--queries", str(queries), "--json",
            cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["judgments"]["runs"][0]

    def entries() -> int:
        return len([p for p in (cache / KIND).iterdir() if p.is_dir()])

    first = run()
    assert entries() == lists >= 2
    fewer = tmp_path / "fewer.tsv"  # other rows, over lists the first run kept
    fewer.write_text("".join(judged.read_text().splitlines(keepends=True)[:-1]))
    assert run(fewer)["n"] == first["n"] - 1
    assert entries() == lists
    weights = tree / "recall" / "finders" / "reference" / "weights.py"
    weights.write_text(weights.read_text().replace("BONUS_FIRST = 3.0", "BONUS_FIRST = -30.0"))
    weighed = run()
    assert entries() == lists  # the same kept indexes, and the answers of the new weights
    assert weighed["ranks"] != first["ranks"]
    store = tree / "recall" / "finders" / "reference" / "store.py"
    store.write_text(store.read_text() + "# a line the index reads\n")
    assert run() == weighed
    assert entries() == 2 * lists
