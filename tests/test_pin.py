import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    ROOT,
    commit_files,
    make_repo,
    mirror_dir,
    needs_ctags,
    needs_mirror,
    run_cli,
)

from recall.inputs.keystrokes import read_typing
from recall.inputs.queryset import read_queries

V1 = {
    "lib/app.py": "def parse_config_file():\n    pass\n\n\ndef render_template_string():\n"
    "    pass\n\n\ndef old_helper_function():\n    pass\n",
    "lib/more.py": "class RequestHandlerBase:\n    pass\n\n\ndef compute_checksum_value():\n"
    "    pass\n",
}
V2 = {"lib/more.py": "class RequestHandlerBase:\n    pass\n\n\ndef brand_new_function():\n"
      "    pass\n"}  # fmt: skip
HAND = ["old_helper_function", "mod.old_helper_function", "olhefu", "RequestHandlerBase"]


@pytest.fixture
def project(tmp_path: Path):
    """An upstream repo with two commits and an empty project folder to pin it in."""
    upstream = make_repo(tmp_path / "upstream", V1)
    first = upstream.head.commit.hexsha
    upstream.index.remove(["lib/app.py"], working_tree=True)
    second = commit_files(upstream, V2, "drop app.py, add a function")
    (tmp_path / "project").mkdir()
    return tmp_path, (tmp_path / "upstream").as_uri(), first, second


def _pin(where: Path, *args: str):
    return run_cli(
        "pin", *args, "--language", "python", "--cache", str(where.parent / "cache"),
        cwd=where,
    )  # fmt: skip


@needs_ctags
def test_pin_of_a_new_repo_writes_the_pin_its_n_and_rows_that_derive_all_agrees_with(project):
    tmp, url, first, _ = project
    where = tmp / "project"
    proc = _pin(where, "demo", url, first, "--n", "3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"corpus.json: demo {first[:12]} (added)"
    rows = read_queries(where / "queries.tsv")
    assert len({r.source for r in rows}) == 3 and {r.repo for r in rows} == {"demo"}
    assert f"{len(rows)} rows added, 0 removed, 0 kept" in proc.stdout.splitlines()[1]
    assert json.loads((where / "corpus.json").read_text()) == {
        "demo": {"url": url, "sha": first, "language": "python", "split": "holdout"}
    }
    assert json.loads((where / "derive.json").read_text()) == {
        "repos": {"demo": {"n": 3, "seed": 1}}
    }
    check = run_cli("derive", "all", "--check", "--cache", str(tmp / "cache"), cwd=where)
    assert check.returncode == 0, check.stderr


@needs_ctags
def test_moving_a_pin_keeps_hand_rows_and_names_those_whose_target_is_gone(project):
    tmp, url, first, second = project
    where = tmp / "project"
    assert _pin(where, "demo", url, first, "--n", "10").returncode == 0
    before = read_queries(where / "queries.tsv")
    with open(where / "queries.tsv", "a") as handle:
        handle.writelines(f"demo\t{q}\thand\t\n" for q in HAND)
    proc = _pin(where, "demo", url, second)
    assert proc.returncode == 0, proc.stderr
    after = read_queries(where / "queries.tsv")
    assert [r.query for r in after if r.type == "hand"] == HAND
    derived = [r for r in after if r.type != "hand"]
    assert {r.source for r in derived} == {"RequestHandlerBase", "brand_new_function"}
    kept = len(set(before) & set(derived))
    assert proc.stdout.splitlines()[1] == (
        f"queries.tsv: demo: {len(derived) - kept} rows added, {len(before) - kept} removed, "
        f"{kept} kept; 4 hand rows kept"
    )
    assert proc.stdout.splitlines()[2:] == [
        f"2 hand rows of demo aim at a name gone at {second[:12]}:",
        "  old_helper_function\told_helper_function",
        "  mod.old_helper_function\told_helper_function",
    ]
    assert json.loads((where / "derive.json").read_text())["repos"]["demo"]["n"] == 10


@needs_ctags
@pytest.mark.parametrize("side", ["tune", "holdout", "seen"])
def test_a_new_corpus_joins_the_holdout_and_a_moved_pin_keeps_its_side(project, side):
    """SPEC.md: a corpus pinned later joins the holdout and never leaves it; a pin moved to
    a new sha (or pinned again at its own, in another set) is the same corpus, on its side."""
    tmp, url, first, second = project
    where = tmp / "project"
    old = {"url": url, "sha": first, "language": "python", "split": side}
    (where / "corpus.json").write_text(json.dumps({"old": old}))
    assert _pin(where, "demo", url, first, "--n", "2").returncode == 0
    assert _pin(where, "old", url, second, "--n", "2").returncode == 0
    assert _pin(where, "old", url, second, "--queries", "typed").returncode == 0
    pins = json.loads((where / "corpus.json").read_text())
    assert pins == {"old": {**old, "sha": second}, "demo": {**old, "split": "holdout"}}


@needs_ctags
def test_a_repo_new_to_a_set_samples_with_the_seed_its_repos_share(project):
    """The typed set's repos share seed 2 and the path set's seed 3: a repo pinned into one
    of them later samples with that seed, not the default set's 1."""
    tmp, url, first, _ = project
    where = tmp / "project"
    (where / "corpus.json").write_text(
        json.dumps({"old": {"url": url, "sha": first, "language": "python"}})
    )
    (where / "derive-typed.json").write_text(
        json.dumps({"recipes": "typed", "repos": {"old": {"n": 1, "seed": 2}}})
    )
    assert _pin(where, "demo", url, first, "--queries", "typed", "--n", "2").returncode == 0
    repos = json.loads((where / "derive-typed.json").read_text())["repos"]
    assert repos == {"old": {"n": 1, "seed": 2}, "demo": {"n": 2, "seed": 2}}


@needs_ctags
def test_a_pin_that_cannot_be_fetched_or_is_malformed_changes_no_file(project):
    tmp, url, first, _ = project
    where = tmp / "project"
    assert _pin(where, "demo", url, first, "--n", "2").returncode == 0
    files = {n: (where / n).read_bytes() for n in ("corpus.json", "derive.json", "queries.tsv")}
    missing = _pin(where, "demo", url, "f" * 40)
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1].startswith("recall: fetch demo: cannot fetch ffffff")
    short = _pin(where, "demo", url, "abc123")
    assert short.returncode == 2
    assert short.stderr.strip() == (
        "recall: corpus.json: repo 'demo': field 'sha' must be 40 lowercase hex digits, "
        "got 'abc123'"
    )
    assert {n: (where / n).read_bytes() for n in files} == files
    assert sorted(p.name for p in where.iterdir()) == sorted(files)


@needs_mirror
def test_repinning_gin_at_its_own_sha_leaves_every_file_byte_identical(tmp_path, gin, real_cache):
    for name in ("corpus.json", "derive.json", "queries.tsv"):
        shutil.copy(ROOT / name, tmp_path / name)
    proc = run_cli(
        "pin", "gin", gin.pin.url, gin.pin.sha, "--language", "go",
        "--cache", str(real_cache), "--mirror", str(mirror_dir()), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "(unchanged)" in proc.stdout and " 0 rows added, 0 removed, " in proc.stdout
    for name in ("corpus.json", "derive.json", "queries.tsv"):
        assert (tmp_path / name).read_bytes() == (ROOT / name).read_bytes(), name


def _start_pin(where: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "recall", "pin", *args, "--language", "python",
         "--cache", str(where.parent / "cache")],
        cwd=where, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@needs_ctags
@pytest.mark.slow
def test_two_pins_of_different_repos_at_once_both_land(project):
    tmp, url, first, second = project
    where = tmp / "project"
    procs = [_start_pin(where, name, url, sha, "--n", "3") for name, sha in
             (("one", first), ("two", second), ("three", first))]  # fmt: skip
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert set(json.loads((where / "corpus.json").read_text())) == {"one", "two", "three"}
    assert set(json.loads((where / "derive.json").read_text())["repos"]) == {"one", "two", "three"}
    assert {r.repo for r in read_queries(where / "queries.tsv")} == {"one", "two", "three"}
    check = run_cli("derive", "all", "--check", "--cache", str(tmp / "cache"), cwd=where)
    assert check.returncode == 0, check.stderr


@needs_ctags
def test_a_pin_whose_query_set_cannot_be_written_changes_no_file(project):
    tmp, url, first, second = project
    where = tmp / "project"
    assert _pin(where, "demo", url, first, "--n", "2").returncode == 0
    files = {n: (where / n).read_bytes() for n in ("corpus.json", "derive.json", "queries.tsv")}
    (where / "blocker").write_text("a file where a folder should be")
    proc = _pin(where, "demo", url, second, "--queries", "blocker/queries.tsv")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == "recall: blocker/queries.tsv: Not a directory"
    assert {n: (where / n).read_bytes() for n in files} == files
    assert sorted(p.name for p in where.iterdir()) == sorted([*files, "blocker"])


@needs_ctags
def test_a_language_that_leaves_a_repo_no_rows_needs_force(project):
    tmp, url, first, _ = project
    where = tmp / "project"
    assert _pin(where, "demo", url, first, "--n", "3").returncode == 0
    files = {n: (where / n).read_bytes() for n in ("corpus.json", "derive.json", "queries.tsv")}
    wrong = run_cli("pin", "demo", url, first, "--language", "go",
                       "--cache", str(tmp / "cache"), cwd=where)  # fmt: skip
    assert wrong.returncode == 2
    assert wrong.stderr.startswith(
        f"recall: pin demo --language go: no name at {first[:12]} can be sampled, so all "
    )
    assert wrong.stderr.count("\n") == 1 and "--force" in wrong.stderr
    assert {n: (where / n).read_bytes() for n in files} == files
    forced = run_cli("pin", "demo", url, first, "--language", "go", "--force",
                        "--cache", str(tmp / "cache"), cwd=where)  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    assert json.loads((where / "corpus.json").read_text())["demo"]["language"] == "go"
    assert [r for r in read_queries(where / "queries.tsv") if r.repo == "demo"] == []


@needs_ctags
def test_pin_with_queries_typed_writes_the_typed_set_with_its_own_recipes(project):
    tmp, url, first, _ = project
    where = tmp / "project"
    proc = _pin(where, "demo", url, first, "--n", "3", "--queries", "typed")
    assert proc.returncode == 0, proc.stderr
    assert not (where / "typed").exists() and not (where / "queries.tsv").exists()
    rows = read_queries(where / "typed.tsv")
    assert {r.type for r in rows} >= {"prefix", "drop", "double"}
    assert not {r.type for r in rows} & {"abbr3", "consonants", "glob"}
    assert json.loads((where / "derive-typed.json").read_text()) == {
        "recipes": "typed",
        "repos": {"demo": {"n": 3, "seed": 1}},
    }
    assert "typed.tsv: demo:" in proc.stdout
    check = run_cli("derive", "all", "--check", "--cache", str(tmp / "cache"), cwd=where)
    assert check.returncode == 0, check.stderr + check.stdout
    assert "typed.tsv: up to date" in check.stdout


@needs_ctags
def test_pin_with_queries_typing_writes_the_typing_set_from_a_quarter_of_the_default_n(project):
    tmp, url, first, second = project
    where = tmp / "project"
    assert _pin(where, "demo", url, first, "--n", "5").returncode == 0
    proc = _pin(where, "demo", url, first, "--queries", "typing")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((where / "derive-typing.json").read_text()) == {
        "recipes": "typing",
        "repos": {"demo": {"n": 1, "seed": 1}},
    }
    steps = read_typing(where / "typing.tsv")
    sources = {r.source for r in read_queries(where / "queries.tsv")}
    assert len({r.source for r in steps}) == 1 and {r.source for r in steps} <= sources
    assert f"typing.tsv: demo: {len(steps)} rows added, 0 removed, 0 kept" in proc.stdout
    check = run_cli("derive", "all", "--check", "--cache", str(tmp / "cache"), cwd=where)
    assert check.returncode == 0, check.stderr + check.stdout
    assert "typing.tsv: up to date" in check.stdout
    moved = _pin(where, "demo", url, second, "--queries", "typing", "--n", "2")
    assert moved.returncode == 0, moved.stderr
    assert json.loads((where / "derive-typing.json").read_text())["repos"]["demo"]["n"] == 2
    assert {r.source for r in read_typing(where / "typing.tsv")} <= {
        "RequestHandlerBase", "brand_new_function"
    }  # fmt: skip
    check = run_cli("derive", "all", "--check", "--cache", str(tmp / "cache"), cwd=where)
    assert "typing.tsv: up to date" in check.stdout  # queries.tsv is of the first pin still
