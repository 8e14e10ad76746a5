import json
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    commit_files,
    make_repo,
    needs_tool,
    run_cli,
)

from recall.inputs.queryset import read_queries

GOOD, ENGINE = SUBSEQUENCE_FINDER, SUBSEQUENCE_ENGINE


@pytest.fixture
def finder(tmp_path: Path):
    repo = make_repo(tmp_path / "finder", {"finder.py": GOOD, "recall.toml": ENGINE})
    return repo, tmp_path / "finder"


def _run(finder_dir: Path, cache: Path, *extra: str):
    return run_cli(
        "--finder", str(finder_dir), "--corpus", str(ROOT / "corpus.json"),
        "--queries", str(ROOT / "queries.tsv"), "--cache", str(cache),
        "--repo", "gin", "--type", "abbr3", *extra, cwd=finder_dir,
    )  # fmt: skip


def test_worse_commit_fails_on_loss_and_neutral_commit_passes(finder, real_cache, gin):
    repo, path = finder
    worse = GOOD.replace("(len(n), n)", "(-len(n), n)")
    commit_files(repo, {"finder.py": worse}, "rank longest first")
    proc = _run(path, real_cache, "--base", "HEAD~1", "--fail-on-loss")
    assert proc.returncode == 1, proc.stderr
    assert "Lost #1:" in proc.stdout
    lost = proc.stdout.split("Lost #1:")[1]
    assert "gin" in lost and "abbr3" in lost

    commit_files(repo, {"finder.py": worse + "# a comment\n"}, "no ranking change")
    proc = _run(path, real_cache, "--base", "HEAD~1", "--fail-on-loss", "--json")
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)["diff"]
    assert (diff["up"], diff["down"], diff["top10_changed"]) == (0, 0, 0)


def test_the_log_shows_the_verdict_and_the_counts_whatever_goes_to_stdout(finder, real_cache, gin):
    """Issue 44 item 2: with `--markdown >> "$GITHUB_STEP_SUMMARY"` and --fail-on-loss the
    job exited 1 and its log showed nothing of why. stderr now has each diff's verdict
    line and its lost and gained counts, and the losses --fail-on-loss failed on."""
    repo, path = finder
    commit_files(repo, {"finder.py": GOOD.replace("(len(n), n)", "(-len(n), n)")}, "worse")
    flags = ("--base", "HEAD~1", "--fail-on-loss", "--no-regress")
    report = None
    for form in ("--json", "--markdown", None):
        proc = _run(path, real_cache, *flags, *([form] if form else []))
        assert proc.returncode == 1
        if form == "--json":
            report = json.loads(proc.stdout)  # stdout holds the report alone
        assert report is not None
        diff = report["diff"]
        head = f"recall: candidate against {report['runs'][0]['label']}"
        lost = (len(diff["lost_first"]), len(diff["lost_top10"]))
        assert proc.stderr.splitlines()[-3:] == [
            f"{head}: {diff['verdict']['summary']}",
            f"{head}: lost #1 {lost[0]}, lost the top 10 {lost[1]}, gained #1 "
            f"{len(diff['gained_first'])}, entered the top 10 {len(diff['gained_top10'])}",
            f"recall: --fail-on-loss: exit 1: candidate: {lost[0]} lost #1"
            + (f", {lost[1]} lost the top 10" if lost[1] else ""),
        ]
        assert lost[0] > 0 and "regressed" in diff["verdict"]["summary"]
        assert head not in proc.stdout


def test_accepted_losses_do_not_fail_and_a_stale_accepted_row_is_reported(
    finder, real_cache, gin, tmp_path
):
    repo, path = finder
    commit_files(repo, {"finder.py": GOOD.replace("(len(n), n)", "(-len(n), n)")}, "worse")
    lost = json.loads(_run(path, real_cache, "--base", "HEAD~1", "--json").stdout)["diff"]
    rows = {(c["repo"], c["query"], c["source"]) for c in lost["lost_first"] + lost["lost_top10"]}
    accepted = tmp_path / "accepted.tsv"
    lines = ["repo\tquery\tsource", *("\t".join(r) for r in sorted(rows)), "gin\tzz\tZz"]
    accepted.write_text("\n".join(lines) + "\n")
    proc = _run(path, real_cache, "--base", "HEAD~1", "--fail-on-loss", "--accept", str(accepted))
    assert proc.returncode == 0, proc.stderr
    assert "Lost #1: 0" in proc.stdout and f"Accepted losses: {len(rows)}" in proc.stdout
    assert "Stale accepted losses (no longer lost): 1" in proc.stdout and "zz" in proc.stdout


def test_many_binaries_keep_the_order_given_and_each_candidate_gets_its_diff(
    finder, real_cache, gin, tmp_path
):
    _repo, path = finder
    wrapper = tmp_path / "mine.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {path / "finder.py"} "$@"\n')
    wrapper.chmod(0o755)
    script = str(wrapper)
    flags = (
        "--base",
        "HEAD",
        "--same-program-ok",
        "--engine",
        "sub=recall.toml",
        "--bin",
        f"mine={script}",
    )
    proc = _run(path, real_cache, *flags, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [r["label"] for r in report["runs"]][1:] == ["sub", "mine"]
    assert [d["new"] for d in report["diffs"]] == ["sub", "mine"]
    assert report["diff"] == report["diffs"][0]
    assert report["diffs"][1]["up"] == report["diffs"][1]["down"] == 0
    text = _run(path, real_cache, *flags)
    header = next(line for line in text.stdout.splitlines() if line.startswith("type "))
    assert header.split()[-7:-5] == ["sub", "mine"]  # after the base, before the ceiling
    assert header.endswith("ceiling #1% / top 10%")


def test_two_binaries_with_one_label_are_refused(finder, real_cache):
    proc = _run(finder[1], real_cache, "--engine", "a=recall.toml", "--engine", "a=recall.toml")
    assert proc.returncode == 2 and "two binaries are labeled 'a'" in proc.stderr


def test_base_must_be_a_commit(finder, real_cache, gin):
    _repo, path = finder
    for ref in ("no-such-ref", "HEAD^{tree}", "--output=x"):
        proc = _run(path, real_cache, f"--base={ref}")
        assert proc.returncode == 2
        assert proc.stderr.startswith("recall: --base") and proc.stderr.count("\n") == 1
    assert not (path / "x").exists()


def test_a_base_of_the_same_code_as_the_working_tree_is_refused_up_front(finder, tmp_path):
    """Issue 44 item 7: `--base HEAD` on a clean tree measured the same code twice (about
    60 s on fzy) with no word; the same-program guard only covered a program on PATH. A
    base whose tree is the working tree's is refused before anything is built or fetched,
    for an engine that runs {tree}'s program too; untracked suite files beside recall.toml
    (read alike for both sides) change nothing, an edit does."""
    repo, path = finder
    cache = tmp_path / "cache"
    pin = {"url": "https://host.invalid/o/r", "sha": "a" * 40, "language": "python"}
    (path / "corpus.json").write_text(json.dumps({"far": pin}))  # untracked, as queries.tsv
    (path / "queries.tsv").write_text("repo\tquery\ttype\tsource\nfar\tabc\thand\t\n")
    repo.git.commit("--allow-empty", "-m", "a commit of the same tree")
    for ref in ("HEAD", "HEAD~1"):
        proc = run_cli("--base", ref, "--cache", str(cache), cwd=path, env={"RECALL_MIRROR": ""})
        assert proc.returncode == 2
        assert proc.stderr == (
            f"recall: --base {ref}: the working tree holds the same code as "
            f"{repo.commit(ref).hexsha[:12]} (tree {repo.head.commit.tree.hexsha[:12]}, nothing "
            "changed), so both sides would run one program and show no change; give another "
            "ref, change the tree, or --same-program-ok to measure it twice\n"
        )
        assert not cache.exists()  # nothing built, fetched or kept
    (path / "finder.py").write_text(GOOD + "# an edit\n")
    edited = run_cli("--base", "HEAD", "--cache", str(cache), cwd=path, env={"RECALL_MIRROR": ""})
    assert edited.returncode == 2  # past the check, both sides made: the pin cannot be fetched
    assert edited.stderr.splitlines()[-1].startswith("recall: fetch far: cannot fetch aaaaaaaa")
    assert (cache / "builds").is_dir()


def test_fail_on_loss_without_a_baseline_is_a_usage_error(finder, real_cache):
    proc = _run(finder[1], real_cache, "--fail-on-loss")
    assert proc.returncode == 2 and "needs a baseline" in proc.stderr


RUN_KEYS = {
    "label",
    "bin",
    "index_s",
    "query_s",
    "n",
    "first",
    "top10",
    "found",
    "errors",
    "first_pct",
    "top10_pct",
    "found_pct",
    "by_type",
    "by_repo",
    "by_language",
}
DIFF_KEYS = {"up", "down", "same", "top10_changed", "lost_first", "lost_top10"}
ROW_KEYS = {"repo", "query", "type", "source", "base_rank", "new_rank", "new_first"}


def test_reference_finder_against_itself_by_base_bin_json(real_cache, gin, tmp_path):
    import sys

    wrapper = tmp_path / "finder.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m recall.finders.reference "$@"\n')
    wrapper.chmod(0o755)
    proc = run_cli(
        "--cache", str(real_cache), "--repo", "gin", "--base-bin", str(wrapper), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {"schema", "meta", "corpus", "queries", "sourced", "runs", "diff"} <= set(report)
    base, candidate = report["runs"]
    assert set(candidate) >= RUN_KEYS and set(report["diff"]) >= DIFF_KEYS
    assert candidate["first"] <= candidate["top10"] <= candidate["found"] <= candidate["n"]
    assert sum(v["n"] for v in candidate["by_type"].values()) == candidate["n"]
    assert sum(v["n"] for v in candidate["by_repo"].values()) == candidate["n"]
    diff = report["diff"]
    assert (diff["up"], diff["down"], diff["top10_changed"]) == (0, 0, 0)
    assert base["first"] == candidate["first"] > 0


def test_reference_base_head_runs_both_sides_and_shows_no_change(real_cache, gin, tmp_path):
    clone = tmp_path / "clone"
    import git

    src = git.Repo(ROOT)
    if src.head.is_valid() is False:
        pytest.skip("the project repo has no commit yet")
    git.Repo.clone_from(ROOT, clone)
    proc = run_cli(
        "--cache", str(real_cache), "--repo", "gin", "--base", "HEAD",
        "--same-program-ok", "--json",
        "--corpus", str(clone / "corpus.json"), "--queries", str(clone / "queries.tsv"),
        cwd=clone,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    diff = report["diff"]
    assert (diff["up"], diff["down"], diff["top10_changed"]) == (0, 0, 0)
    assert report["runs"][0]["first"] == report["runs"][1]["first"] > 0


def test_an_unlabeled_engine_beside_labeled_ones_is_measured_where_it_stands(
    finder, real_cache, gin
):
    _repo, path = finder
    proc = _run(
        path, real_cache, "--engine", "sub=recall.toml", "--engine", "recall.toml", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert [r["label"] for r in json.loads(proc.stdout)["runs"]] == ["sub", "candidate"]


@needs_tool("fzf")
def test_labeled_engines_keep_the_working_tree_first_unless_no_candidate(finder, real_cache, gin):
    """Issue 44 item 4: in a repo with recall.toml, `--engine fzf=fzf --engine fzy=fzy`
    reported fzf and fzy and dropped the working tree's own build."""
    _repo, path = finder
    both = _run(path, real_cache, "--engine", "sub=recall.toml", "--engine", "fzf=fzf", "--json")
    assert both.returncode == 0, both.stderr
    runs = json.loads(both.stdout)["runs"]
    assert [r["label"] for r in runs] == ["candidate", "sub", "fzf"]
    assert runs[0]["by_type"] == runs[1]["by_type"]  # the tree's engine is recall.toml: sub's
    alone = _run(path, real_cache, "--engine", "sub=recall.toml", "--no-candidate", "--json")
    assert alone.returncode == 0, alone.stderr
    assert [r["label"] for r in json.loads(alone.stdout)["runs"]] == ["sub"]
    for extra in (("--engine", "recall.toml"), ("--bin", "x=/bin/true")):
        mixed = _run(path, real_cache, "--engine", "sub=recall.toml", "--no-candidate", *extra)
        assert mixed.returncode == 2
        assert mixed.stderr.startswith("recall: --no-candidate leaves the working tree's build")


def test_split_holdout_runs_only_the_holdout_corpora_and_every_report_says_so(
    finder, real_cache, gin, tmp_path
):
    """The split is whole corpora, each pin's side in corpus.json: with gin held out, its
    every row is the holdout's, the tune side has none, and every report names it."""
    _repo, path = finder
    every = [r for r in read_queries(ROOT / "queries.tsv") if (r.repo, r.type) == ("gin", "abbr3")]
    pins = json.loads((ROOT / "corpus.json").read_text())
    pins["gin"]["split"] = "holdout"
    held = tmp_path / "corpus.json"
    held.write_text(json.dumps(pins))
    page = tmp_path / "report.html"
    flags = ("--corpus", str(held), "--split", "holdout", "--misses", "--no-regress")
    proc = _run(path, real_cache, *flags, "--json", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["split"] == "holdout" and report["corpus"]["gin"]["split"] == "holdout"
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(report)
    assert report["queries"] == report["sourced"] == report["runs"][0]["n"] == len(every)
    assert report["holdout"]["fresh"] == {"corpora": ["gin"], "n": len(every), "margin": None}
    heading = f"recall: {len(every)} sourced queries of {len(every)} (the holdout split)"
    text = _run(path, real_cache, *flags).stdout.splitlines()
    assert heading in text and f"fresh holdout: gin ({len(every)} sourced rows)" in text
    assert f"## {heading}" in _run(path, real_cache, *flags, "--markdown").stdout.splitlines()
    assert f"<h1>{heading}</h1>" in page.read_text()
    assert "<p>seen holdout: none (0 sourced rows)</p>" in page.read_text()
    none = _run(path, real_cache, "--corpus", str(held), "--split", "tune")
    assert none.returncode == 2 and "no rows match the selection" in none.stderr

    tune = json.loads(_run(path, real_cache, "--split", "tune", "--json").stdout)
    assert tune["split"] == "tune" and tune["sourced"] == len(every) and "holdout" not in tune
    whole = _run(path, real_cache, "--json")
    assert json.loads(whole.stdout)["split"] is None
    assert json.loads(whole.stdout)["sourced"] == len(every)
    bad = _run(path, real_cache, "--split", "sealed")
    assert bad.returncode == 2 and "invalid choice: 'sealed'" in bad.stderr
