import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, commit_files, make_repo, needs_ctags, needs_mirror, run_cli
from helpers import DEEP, one_line_exit_2, tiny_pin

from recall.cache import FolderEntry, keep_file, locked, read_file, release_in_use, sweep_files
from recall.cache import _checked as checked
from recall.errors import RecallError
from recall.finders.engine import load_engine
from recall.inputs.corpus import MARKER, Pin, checkout_key, fetch
from recall.inputs.symbols import checkout_symbols, ctags_identity
from recall.running.build import build_base
from recall.workflows.cache import entries, stale

ENGINE = '[engine]\nbin = ["{python}", "{tree}/finder.py"]\nquery = ["{bin}", "{query}"]\n'
OLD = time.time() - 10 * 86400


@pytest.fixture
def filled(tmp_path: Path):
    """A cache holding two real checkouts, their symbols, two base builds and a result."""
    cache = tmp_path / "cache"
    pins = {}
    for name in ("demo", "gone"):
        repo = make_repo(tmp_path / name, {"m.py": f"def {name}_function():\n    pass\n"})
        pins[name] = Pin(name, (tmp_path / name).as_uri(), repo.head.commit.hexsha, "python")
        checkout_symbols(fetch(pins[name], cache), cache)
    finder = make_repo(tmp_path / "finder", {"finder.py": "print('[]')\n", "recall.toml": ENGINE})
    engine = load_engine(tmp_path / "finder" / "recall.toml")
    first = finder.head.commit.hexsha
    second = commit_files(finder, {"finder.py": "print('[ ]')\n"}, "second")
    build_base(tmp_path / "finder", first, engine, cache, sys.executable)
    build_base(tmp_path / "finder", second, engine, cache, sys.executable)
    release_in_use()  # this test process is not a running harness
    (cache / "results").mkdir()
    (cache / "results" / "r1.json").write_text("{}")
    kept = {"demo": {**pins["demo"].as_json()}}
    (tmp_path / "corpus.json").write_text(json.dumps(kept))
    return tmp_path, cache, pins


def _cache(where: Path, *args: str):
    return run_cli("cache", *args, "--cache", str(where / "cache"), cwd=where)


@needs_ctags
@pytest.mark.slow
def test_list_shows_every_checkout_build_symbols_and_results_entry_with_size_and_use(filled):
    where, _, pins = filled
    proc = _cache(where, "list")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    kinds = [r[0] for r in rows]
    assert kinds == ["corpora"] * 2 + ["builds"] * 2 + ["symbols"] * 2 + ["results", "total"]
    assert [r[1] for r in rows[:2]] == [checkout_key(pins["demo"]), checkout_key(pins["gone"])]
    assert rows[6][1] == "r1.json"
    assert all(r[2].endswith(("B", "KB", "MB")) for r in rows[:7])
    assert rows[-1][:2] == ["total", "7 entries"]
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    assert all(r[3].startswith(stamp) for r in rows[:7])


@needs_ctags
@pytest.mark.slow
def test_prune_removes_unpinned_checkouts_their_symbols_and_surplus_builds_only(filled):
    where, cache, pins = filled
    demo, gone = checkout_key(pins["demo"]), checkout_key(pins["gone"])
    builds = sorted((cache / "builds").glob("*.inuse"), key=lambda p: p.stat().st_mtime)
    os.utime(builds[0], (OLD, OLD))  # the first build was used long ago
    os.utime(cache / "builds" / builds[0].stem / ".recall-built", (OLD, OLD))
    before = [(e.kind, e.key) for e in entries(cache)]
    dry = _cache(where, "prune", "--keep-builds", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert [(e.kind, e.key) for e in entries(cache)] == before
    proc = _cache(where, "prune", "--keep-builds", "1")
    assert proc.returncode == 0, proc.stderr
    removed = [line.split("\t")[1:3] for line in proc.stdout.splitlines()[:-1]]
    assert [r[0] for r in dry.stdout.splitlines()[:-1]] != []
    assert ["corpora", gone] in removed and ["builds", builds[0].stem] in removed
    assert [k for k, _ in removed] == ["corpora", "builds", "symbols"]
    left = [(e.kind, e.key) for e in entries(cache)]
    assert ("corpora", demo) in left and ("results", "r1.json") in left
    assert len([k for k, _ in left if k == "builds"]) == 1, (proc.stdout, left)
    assert not (cache / "corpora" / gone).exists()
    assert proc.stdout.splitlines()[-1].startswith("freed ")
    assert (
        dry.stdout.splitlines()[-1].replace("would free", "freed") == proc.stdout.splitlines()[-1]
    )


@needs_ctags
@pytest.mark.slow
def test_prune_older_than_removes_entries_unused_that_long(filled):
    _, cache, pins = filled
    os.utime(cache / "results" / "r1.json", (OLD, OLD))
    chosen = stale(entries(cache), {"demo": pins["demo"], "gone": pins["gone"]}, ctags_identity(),
                   older_than_days=5, keep_builds=None, now=time.time())  # fmt: skip
    assert [(e.kind, e.key, e.note) for e in chosen] == [
        ("results", "r1.json", "unused for over 5 days")
    ]


@needs_ctags
@pytest.mark.slow
def test_prune_skips_an_entry_a_running_harness_holds(filled):
    where, cache, pins = filled
    gone = checkout_key(pins["gone"])
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path;"
         " from recall.cache import hold_in_use, use_lock;"
         f"hold_in_use(use_lock(Path({str(cache)!r}), 'corpora', {gone!r})); print('held', "
         "flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        proc = _cache(where, "prune")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[0].startswith(f"busy, kept\tcorpora\t{gone}\t")
        assert (cache / "corpora" / gone / "m.py").is_file()
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    again = _cache(where, "prune")
    assert again.stdout.splitlines()[0].startswith(f"removed\tcorpora\t{gone}\t")
    assert not (cache / "corpora" / gone).exists()


@needs_ctags
@pytest.mark.slow
def test_explain_marks_its_checkout_in_use(filled):
    where, cache, pins = filled
    mark = cache / "corpora" / f"{checkout_key(pins['demo'])}.inuse"
    (where / "queries.tsv").write_text("repo\tquery\ttype\tsource\n")
    proc = run_cli(
        "explain", "demfun", "--repo", "demo", "--engine", "reference",
        "--cache", str(cache), "--queries", str(where / "queries.tsv"), "--finder", str(ROOT),
        cwd=where,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "demo_function" in proc.stdout
    assert time.time() - mark.stat().st_mtime < 60


@needs_mirror
def test_list_on_the_real_cache_shows_the_gin_checkout(gin, real_cache):
    proc = run_cli("cache", "list", "--cache", str(real_cache))
    assert proc.returncode == 0, proc.stderr
    row = next(
        line.split("\t") for line in proc.stdout.splitlines() if line.startswith("corpora\tgin")
    )
    assert row[2].endswith("MB")


@needs_ctags
def test_prune_removes_a_checkout_of_the_old_name_only_layout_and_keeps_the_pins(filled):
    """Checkouts are kept by pin (corpora/NAME-SHA12): a folder named by repo alone is
    from the layout before, which a fetch of another pin would rebuild under a run."""
    where, cache, pins = filled
    demo = checkout_key(pins["demo"])
    shutil.copytree(cache / "corpora" / demo, cache / "corpora" / "demo", symlinks=True)
    proc = _cache(where, "prune")
    assert proc.returncode == 0, proc.stderr
    removed = {tuple(line.split("\t")[1:3]): line for line in proc.stdout.splitlines()[:-1]}
    assert "kept by repo name only" in removed["corpora", "demo"]
    assert ("corpora", demo) not in removed and (cache / "corpora" / demo / "m.py").is_file()
    assert not (cache / "corpora" / "demo").exists()


@needs_ctags
def test_prune_of_an_entry_that_is_a_link_removes_the_link_only_and_says_so(filled, tmp_path):
    """Issue 31 class 11: a symlink entry was "removed", yet came back to be removed again
    on the next prune (its folder renamed aside, then never deleted); the place it points
    at is never followed into."""
    where, cache, pins = filled
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the cache's")
    (cache / "corpora" / "linked").symlink_to(elsewhere)
    first = _cache(where, "prune")
    assert first.returncode == 0, first.stderr
    (line,) = [x for x in first.stdout.splitlines() if "\tlinked\t" in x]
    assert line.startswith("removed the link\tcorpora\tlinked\t")
    assert f"only the link: {elsewhere} is left as it was" in line
    assert not (cache / "corpora" / "linked").is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "not the cache's"
    again = _cache(where, "prune")
    assert again.stdout.splitlines() == ["freed 0 B"], again.stdout
    left = [p.name for p in (cache / "corpora").iterdir() if p.is_dir() or p.is_symlink()]
    assert left == [checkout_key(pins["demo"])]


# The one cache-entry mechanism (recall/cache.py) -----------------------------------------


def _entry(tmp_path: Path, key: str = "k1") -> FolderEntry:
    return FolderEntry(tmp_path / "cache", "builds", key, ".recall-built")


def _maker(log: list[str], text: str = "made"):
    def make(folder: Path) -> None:
        log.append(text)
        (folder / "tree").mkdir()
        (folder / "tree" / "out.txt").write_text(text)

    return make


def test_a_folder_entry_is_made_once_and_then_found_whole(tmp_path):
    log: list[str] = []
    first = _entry(tmp_path).get(_maker(log))
    again = _entry(tmp_path).get(_maker(log))
    assert first == again and log == ["made"]
    assert (first / "tree" / "out.txt").read_text() == "made"
    marker = json.loads((first / ".recall-built").read_text())
    assert set(marker) == {"key", "digest", "note"} and marker["key"] == "k1"
    release_in_use()


def test_a_folder_entry_edited_on_disk_is_dropped_with_one_warning_and_made_again(tmp_path, capsys):
    """Class 5: an entry still well-formed but not what was made (a build's file edited)
    does not match its digest: one warning line naming it, dropped, made again."""
    log: list[str] = []
    path = _entry(tmp_path).get(_maker(log))
    (path / "tree" / "out.txt").write_text("edited")
    checked.cache_clear()  # as a new process
    capsys.readouterr()
    again = _entry(tmp_path).get(_maker(log, "made again"))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "does not match its digest" in err
    assert (again / "tree" / "out.txt").read_text() == "made again"
    assert log == ["made", "made again"]
    release_in_use()


def test_a_folder_without_its_marker_is_a_half_entry_made_again_silently(tmp_path, capsys):
    log: list[str] = []
    half = _entry(tmp_path).path / "tree"
    half.mkdir(parents=True)
    (half / "out.txt").write_text("half")
    path = _entry(tmp_path).get(_maker(log))
    assert (path / "tree" / "out.txt").read_text() == "made" and log == ["made"]
    assert capsys.readouterr().err == ""
    release_in_use()


def test_a_killed_makers_temporary_folder_is_swept_unless_its_key_is_being_made(tmp_path):
    root = tmp_path / "cache" / "builds"
    idle, busy = root / ".tmp-idle-abcd1234", root / ".tmp-busy-abcd1234"
    idle.mkdir(parents=True)
    busy.mkdir()
    with locked(root / "busy.lock"):  # another maker of "busy" is alive
        _entry(tmp_path).get(_maker([]))
    assert not idle.exists() and busy.exists()
    release_in_use()


def test_a_failed_make_leaves_no_entry_and_no_temporary_folder(tmp_path):
    def fails(folder: Path) -> None:
        (folder / "tree").mkdir()
        raise RecallError("build failed")

    with pytest.raises(RecallError):
        _entry(tmp_path).get(fails)
    assert sorted(p.name for p in (tmp_path / "cache" / "builds").iterdir() if p.is_dir()) == []
    release_in_use()


def test_a_file_entry_edited_on_disk_is_dropped_with_one_warning(tmp_path, capsys):
    path = tmp_path / "results" / "entry.json"
    assert keep_file(path, b'{"rank": 3}')
    assert read_file(path) == b'{"rank": 3}'
    path.write_bytes(path.read_bytes().replace(b"3", b"1"))
    assert read_file(path) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and not path.exists()


def test_a_file_entry_that_cannot_be_written_is_one_warning_and_no_error(tmp_path, capsys):
    """A read-only or full cache must not lose the work: keep_file says so and returns."""
    blocked = tmp_path / "results"
    blocked.write_text("a file where the folder should be")
    assert keep_file(blocked / "entry.json", b"{}") is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot keep cache entry" in err
    assert str(blocked / "entry.json") in err


def test_killed_writes_temporary_files_are_swept_once_old(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    old, new = folder / ".entry.json.abc", folder / ".other.json.def"
    old.write_text("x")
    new.write_text("y")
    os.utime(old, (OLD, OLD))
    sweep_files(folder)
    assert not old.exists() and new.exists()


def test_work_done_elsewhere_that_cannot_be_kept_is_one_warning_and_no_entry(tmp_path, capsys):
    """A kept index copied into a full cache: the warning names the entry, nothing half
    made stays, and the caller goes on with the index it made."""

    def full(folder: Path) -> None:
        (folder / "db").mkdir()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    entry = _entry(tmp_path)
    with entry.locked():
        assert entry.keep(full) is False
    err = capsys.readouterr().err
    why = "(No space left on device): not kept"
    assert err == f"recall: warning: cannot keep cache entry {entry.path} {why}\n"
    assert [p.name for p in entry.root.iterdir() if p.is_dir()] == []


def test_the_cache_mechanism_loads_no_git():
    """recall.cache holds the locks and in-use marks itself (corpus imports cache, not the
    other way round), so a cache user that reads no corpus does not pay for GitPython."""
    probe = "import sys, recall.cache; print('git' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60,
    )  # fmt: skip
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("marker", [b"[]", b'{"sha": 5, "tree": 7}', DEEP])
def test_cache_list_and_prune_survive_a_checkout_marker_of_the_wrong_shape(tmp_path, marker):
    pin = tiny_pin(tmp_path)
    cache = tmp_path / "cache"
    checkout = fetch(pin, cache)
    (checkout.path / ".git" / MARKER).write_bytes(marker)
    found = entries(cache)
    chosen = stale(
        found, {"tiny": pin}, {"version": "6.0"}, older_than_days=None, keep_builds=None, now=0
    )
    assert [(e.key, e.note) for e in chosen] == [
        (checkout_key(pin), "holds another sha than the pin")
    ]


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_prune_older_than_a_number_of_days_that_is_not_finite_is_one_line_exit_2(tmp_path, value):
    proc = run_cli("cache", "prune", f"--older-than={value}", "--cache", str(tmp_path))
    one_line_exit_2(proc, "--older-than")
