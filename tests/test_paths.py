import json
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, SUBSEQUENCE_ENGINE, SUBSEQUENCE_FINDER, commit_files, make_repo, run_cli

from recall.cache import keep_file
from recall.errors import RecallError
from recall.inputs.derive import load_settings
from recall.inputs.path_recipes import derive_path_rows
from recall.inputs.paths import (
    NAMES,
    PATHS,
    cached_paths,
    checkout_paths,
    domain_of,
    list_paths,
    paths_key,
)
from recall.inputs.queryset import QueryRow, read_queries


def test_the_candidates_are_the_tracked_files_without_submodules(tmp_path):
    repo = make_repo(tmp_path / "r", {"src/b.py": "b\n", "a.md": "a\n", "z/tab\there": "x\n"})
    (tmp_path / "r" / "untracked.py").write_text("u\n")
    sha = repo.head.commit.hexsha
    repo.git.update_index("--add", "--cacheinfo", f"160000,{sha},vendor/sub")
    assert list_paths(tmp_path / "r") == ["a.md", "src/b.py"]


def test_the_paths_are_kept_by_tree_and_a_corrupt_entry_is_listed_again(tmp_path, capsys):
    make_repo(tmp_path / "r", {"one.py": "1\n"})
    cache = tmp_path / "cache"
    assert cached_paths(tmp_path / "r", "tree-1", cache) == ["one.py"]
    make_repo(tmp_path / "other", {"two.py": "2\n"})
    assert cached_paths(tmp_path / "other", "tree-1", cache) == ["one.py"]  # kept, not listed
    (entry,) = (cache / "paths").glob("*.json")
    keep_file(entry, orjson.dumps({"not": "a list"}))  # its digest right, its content not
    assert cached_paths(tmp_path / "other", "tree-1", cache) == ["two.py"]
    assert "paths" in capsys.readouterr().err


def test_a_query_set_is_in_one_domain_and_mixing_them_is_refused():
    name = QueryRow("gin", "ctx", "abbr3", "Context")
    path = QueryRow("gin", "Context", "basecase", "context.go")
    hand = QueryRow("gin", "x", "hand", "")
    assert domain_of([name, hand]) == NAMES
    assert domain_of([path, hand]) == PATHS
    with pytest.raises(RecallError, match=r"mixes path rows .* with name rows"):
        domain_of([name, path], "q.tsv")


def test_the_committed_path_set_is_what_its_settings_make_from_gins_paths(real_cache, gin, pins):
    paths = checkout_paths(gin, real_cache)
    assert "context.go" in paths and all(not p.startswith(".git/") for p in paths)
    settings = load_settings(ROOT / "derive-paths.json", pins)["gin"]
    committed = [r for r in read_queries(ROOT / "paths.tsv") if r.repo == "gin"]
    assert committed == derive_path_rows("gin", paths, settings.n, settings.seed)


def _paths_run(finder: Path, cache: Path, *extra: str):
    return run_cli(
        "--finder", str(finder), "--corpus", str(ROOT / "corpus.json"), "--queries", "paths",
        "--cache", str(cache), "--repo", "gin", "--type", "basecase", *extra, cwd=finder,
    )  # fmt: skip


def test_a_diff_on_paths_fails_on_a_lost_path_and_passes_on_no_change(real_cache, gin, tmp_path):
    repo = make_repo(
        tmp_path / "f", {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": SUBSEQUENCE_ENGINE}
    )
    worse = SUBSEQUENCE_FINDER.replace("(len(n), n)", "(-len(n), n)")
    commit_files(repo, {"finder.py": worse}, "longest path first")
    proc = _paths_run(tmp_path / "f", real_cache, "--base", "HEAD~1", "--fail-on-loss")
    assert proc.returncode == 1, proc.stderr
    lost = proc.stdout.split("Lost #1:")[1]
    assert "basecase" in lost and ".go" in lost  # the sources named are paths

    commit_files(repo, {"finder.py": worse + "# a comment\n"}, "no ranking change")
    proc = _paths_run(tmp_path / "f", real_cache, "--base", "HEAD~1", "--fail-on-loss", "--json")
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)["diff"]
    assert (diff["up"], diff["down"], diff["top10_changed"]) == (0, 0, 0)


def test_the_reference_path_mode_against_itself_shows_no_change(real_cache, gin, tmp_path):
    wrapper = tmp_path / "paths.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m recall.finders.reference.paths "$@"\n')
    wrapper.chmod(0o755)
    proc = run_cli(
        "--engine", "reference-paths", "--queries", "paths", "--cache", str(real_cache),
        "--repo", "gin", "--type", "fragment", "--base-bin", str(wrapper), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    base, candidate = report["runs"]
    assert (report["diff"]["up"], report["diff"]["down"], report["diff"]["top10_changed"]) == (
        0, 0, 0,
    )  # fmt: skip
    assert base["first"] == candidate["first"] > candidate["n"] / 2
    assert set(candidate["by_type"]) == {"fragment"}
    assert 0 < report["ceiling"]["first"] <= report["ceiling"]["n"]


@pytest.mark.slow
def test_path_shards_merge_into_the_unsharded_run_and_a_merge_of_another_set_says_so(
    real_cache, gin, tmp_path
):
    flags = ("--engine", "reference-paths", "--queries", "paths", "--cache", str(real_cache),
             "--repo", "gin", "--repo", "ripgrep", "--type", "basecase")  # fmt: skip
    files = [str(tmp_path / f"{k}.json") for k in (1, 2)]
    for k, path in enumerate(files, 1):
        shard = run_cli(*flags, "--shard", f"{k}/2", "--save", path)
        assert shard.returncode == 0, shard.stderr
    whole = run_cli(*flags, "--json")
    merged = run_cli("merge", "--queries", "paths", "--cache", str(real_cache), *files, "--json")
    assert merged.returncode == 0, merged.stderr
    counts = [{k: v for k, v in json.loads(p.stdout)["runs"][0].items() if not k.endswith("_s")}
              for p in (whole, merged)]  # fmt: skip
    assert counts[0] == counts[1] and counts[0]["n"] > 20
    default = run_cli("merge", "--cache", str(real_cache), *files)
    assert default.returncode == 2
    assert "merge: queries.tsv has no rows of the shards' selection" in default.stderr
    assert "(give the --queries the shards ran with)" in default.stderr
    whole_types = run_cli("merge", "--cache", str(real_cache), *files, "--type", "abbr3")
    assert whole_types.returncode == 2
    assert (
        f"merge {files[0]}: ran other data than queries.tsv has now (give the --corpus and "
        "--queries the shards ran with)" in whole_types.stderr
    )


@pytest.mark.slow
def test_the_path_set_without_an_engine_runs_the_default_finders_path_mode(real_cache, gin):
    """Issue 44 item 6: `--queries paths` with no --engine ran the reference finder's name
    mode, which answered nothing, and the run blamed the engine description."""
    proc = run_cli(
        "--queries", "paths", "--repo", "gin", "--type", "basecase", "--cache", str(real_cache),
        "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["meta"]["engine"]["source"] == "preset:reference-paths"
    (run,) = report["runs"]
    assert run["first"] > run["n"] / 2


def test_the_reference_finders_name_mode_is_refused_for_the_path_set_up_front(tmp_path):
    proc = run_cli(
        "--engine", "reference", "--queries", "paths", "--repo", "gin", "--cache", str(tmp_path)
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "recall: --engine reference: the reference finder's name mode ranks the symbols it "
        "indexes, not file paths: the path set needs its path mode, --engine reference-paths "
        "(the default for --queries paths)\n"
    )
    assert list(tmp_path.iterdir()) == []  # refused before anything was fetched or built


def test_a_language_server_is_refused_for_the_path_set(tmp_path):
    proc = run_cli(
        "--engine", "gopls", "--queries", "paths", "--repo", "gin", "--cache", str(tmp_path)
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "kind lsp ranks symbol names, not file paths" in proc.stderr


def test_pin_with_queries_paths_samples_the_pins_tracked_paths(tmp_path):
    files = {
        "src/components/ButtonGroup.py": "def group():\n    pass\n",
        "src/lib/router_table.py": "def route():\n    pass\n",
        "docs/getting_started.md": "# start\n",
    }
    upstream = make_repo(tmp_path / "upstream", files)
    where = tmp_path / "project"
    where.mkdir()
    proc = run_cli(
        "pin", "demo", (tmp_path / "upstream").as_uri(), upstream.head.commit.hexsha,
        "--language", "python", "--n", "3", "--queries", "paths",
        "--cache", str(tmp_path / "cache"), cwd=where,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = read_queries(where / "paths.tsv")
    assert {r.source for r in rows} == set(files)
    assert {r.type for r in rows} == {
        "baseprefix", "wordstarts", "dirinitials", "fragment", "extfirst", "basetypo", "basecase",
    }  # fmt: skip
    assert json.loads((where / "derive-paths.json").read_text())["recipes"] == "paths"
    check = run_cli("derive", "all", "--check", "--cache", str(tmp_path / "cache"), cwd=where)
    assert check.returncode == 0, check.stderr + check.stdout
    assert "paths.tsv: up to date" in check.stdout


def test_cache_lists_paths_and_prune_removes_those_of_no_current_checkout(tmp_path):
    from recall.cache import release_in_use
    from recall.inputs.corpus import Pin, fetch

    cache, pins = tmp_path / "cache", {}
    for name in ("demo", "gone"):
        repo = make_repo(tmp_path / name, {f"{name}/main.py": "x = 1\n"})
        pins[name] = Pin(name, (tmp_path / name).as_uri(), repo.head.commit.hexsha, "python")
        assert checkout_paths(fetch(pins[name], cache), cache) == [f"{name}/main.py"]
    release_in_use()  # this test process is not a running harness
    (tmp_path / "corpus.json").write_text(json.dumps({"demo": pins["demo"].as_json()}))
    listed = run_cli("cache", "list", "--cache", str(cache), cwd=tmp_path)
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()].count("paths") == 2
    proc = run_cli("cache", "prune", "--cache", str(cache), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    removed = [line.split("\t")[1] for line in proc.stdout.splitlines()[:-1]]
    assert removed == ["corpora", "paths"]
    (kept,) = (cache / "paths").glob("*.json")
    demo = fetch(pins["demo"], cache)
    assert kept.name == f"{paths_key(demo.tree)}.json"
