import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, commit_files, make_repo, needs_ctags, needs_mirror, run_cli

from recall.build import build_base
from recall.commands.cache import entries, stale
from recall.corpus import Pin, checkout_key, fetch, release_in_use
from recall.engine import load_engine
from recall.symbols import checkout_symbols, ctags_identity

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
def test_prune_older_than_removes_entries_unused_that_long(filled):
    _, cache, pins = filled
    os.utime(cache / "results" / "r1.json", (OLD, OLD))
    chosen = stale(entries(cache), {"demo": pins["demo"], "gone": pins["gone"]}, ctags_identity(),
                   older_than_days=5, keep_builds=None, now=time.time())  # fmt: skip
    assert [(e.kind, e.key, e.note) for e in chosen] == [
        ("results", "r1.json", "unused for over 5 days")
    ]


@needs_ctags
def test_prune_skips_an_entry_a_running_harness_holds(filled):
    where, cache, pins = filled
    gone = checkout_key(pins["gone"])
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from recall.corpus import hold_in_use, use_lock;"
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
