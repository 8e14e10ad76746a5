"""recall/analysis/typing_report.py's report of a typing run, held end to end: `recall run
--queries typing` through the real CLI, the reference finder on gin's word-start sequences,
its effort in text, JSON (valid against the schema) and HTML (the k-curve, drawn by
Chromium), a self-diff with no change, and a weaker finder's diff listing the sources that
now need more keystrokes."""

import json
import re
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    needs_chromium,
    run_cli,
    tiny_suite,
)
from helpers import chromium, has_color, weaker_clone

from recall.analysis.model import Report
from recall.inputs.queryset import HAND, QueryRow
from recall.render.html import render_html
from recall.render.results_entry import Entry
from recall.render.results_page import render_results
from recall.running.session import BatchFeed, limit_of

SCHEMA = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs" / "report.schema.json").read_text())
)
GIN_STARTS = ("--queries", "typing", "--repo", "gin", "--type", "starts", "--no-regress")
CURVE_BLUE, CURVE_ORANGE = (8, 81, 156), (230, 85, 13)


def test_a_self_diff_of_the_typing_set_shows_no_change_in_every_form(real_cache, gin, tmp_path):
    wrapper = tmp_path / "finder.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m recall.finders.reference "$@"\n')
    wrapper.chmod(0o755)
    flags = ("--cache", str(real_cache), *GIN_STARTS, "--base-bin", str(wrapper))
    proc = run_cli(*flags, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    SCHEMA.validate(report)
    effort = report["effort"]
    base, candidate = effort["runs"]
    assert effort["sequences"] == candidate["n"] == 23  # gin's 25 names, 23 of two words
    assert effort["prompts"] < effort["steps"]  # shared prefixes asked once
    assert {k: v for k, v in base.items() if k != "label"} == {
        k: v for k, v in candidate.items() if k != "label"
    }
    assert 0 < candidate["first"] <= candidate["n"] and candidate["curve"][-1] > 0
    diff = effort["diffs"][0]
    assert (diff["more"], diff["fewer"], diff["same"], diff["more_keys"]) == (0, 0, 23, [])
    assert report["diff"]["top10_changed"] == 0

    text = run_cli(*flags)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Keystrokes to the name: 23 typing sequences")
    assert "sourced queries" not in text.stdout and "\nBy type" not in text.stdout  # none
    assert "\nSeconds\nbinary" in text.stdout
    assert "Keystrokes to #1, candidate against base: 0 sequences need more, 0 fewer" in (
        text.stdout
    )
    markdown = run_cli(*flags, "--markdown")
    assert "## Share of sequences at #1 within k keystrokes (%)" in markdown.stdout


@pytest.fixture(name="weaker")
def weaker_fixture(tmp_path: Path) -> Path:
    return weaker_clone(tmp_path)


@needs_chromium
def test_a_weaker_finder_needs_more_keystrokes_and_the_page_draws_the_k_curve(
    real_cache,
    gin,
    weaker,
    tmp_path,
):
    page = tmp_path / "typing.html"
    proc = run_cli(
        "--cache", str(real_cache), *GIN_STARTS, "--finder", str(weaker),
        "--base", "HEAD~1", "--json", "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    SCHEMA.validate(report)
    diff = report["effort"]["diffs"][0]
    assert diff["more"] == len(diff["more_keys"]) > 0
    for change in diff["more_keys"]:
        assert len(change["base_query"]) == change["base_keys"]
        assert change["new_keys"] is None or change["new_keys"] > change["base_keys"]
    html = page.read_text()
    assert html == render_html(Report.from_json(report))
    assert 'aria-label="k-curve"' in html and html.count("<polyline") == 3  # two runs, ceiling
    assert "<h1>recall: keystrokes to the name, " in html and "<h2>By type</h2>" not in html

    pixels, console = chromium(page, tmp_path)
    assert console == []
    assert has_color(pixels, CURVE_BLUE) and has_color(pixels, CURVE_ORANGE)
    assert 0.02 < 1 - np.all(pixels == 255, axis=2).mean() < 0.9


def test_a_weaker_finders_typing_diff_fails_on_loss_and_says_sequences(real_cache, gin, weaker):
    """Issue 44 item 8: `--queries typing --base master --fail-on-loss` exited 0 with 16
    sequences needing more keystrokes, and the diff's generic section printed `unchanged 0`
    and `ties 0` (the sources' counts of prompts that have no source)."""
    flags = ("--cache", str(real_cache), *GIN_STARTS, "--finder", str(weaker), "--base", "HEAD~1")
    proc = run_cli(*flags, "--fail-on-loss")
    assert proc.returncode == 1, proc.stderr
    diff = proc.stdout[proc.stdout.index("\nDiff: candidate against base HEAD~1") :]
    verdict, counts = diff.splitlines()[2:4]
    assert verdict.startswith("verdict on sequences (McNemar's exact test, two-sided, alpha 0.05")
    assert re.fullmatch(
        r"sequences: [1-9]\d* need more keystrokes to #1 \(\d+ never reach it now\), \d+ fewer, "
        r"\d+ the same; \d+ no longer reach the top 3; distinct queries whose top 10 changed: "
        r"\d+",
        counts,
    ), counts
    assert "unchanged 0" not in proc.stdout and "ties 0" not in proc.stdout
    assert "Lost #1:" not in diff  # the sources' lists: prompts have none
    report = json.loads(run_cli(*flags, "--json").stdout)
    SCHEMA.validate(report)
    effort = report["effort"]["diffs"][0]
    assert effort["verdict"]["summary"] == verdict
    assert effort["verdict"]["first"]["lost"] <= effort["more"] == len(effort["more_keys"])


def test_a_typing_file_whose_source_is_no_name_of_its_corpus_is_refused(real_cache, gin, tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("repo\tsequence\tstep\tquery\tsource\ngin\tprefix\t1\tb\tbindz\n")
    proc = run_cli("--cache", str(real_cache), "--queries", str(path), "--no-regress")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"recall: {path}:2: source 'bindz' (prefix) is not a name of gin at its pin"
    )
    assert "Keystrokes" not in proc.stdout


def test_the_results_page_of_a_typing_set_puts_each_finder_s_effort_side_by_side(real_cache, gin):
    proc = run_cli("--cache", str(real_cache), *GIN_STARTS, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    entries = [
        Entry.from_json(
            {"label": label, "version": "1", "command": "c", "note": "", "report": report}
        )
        for label in ("reference", "again")
    ]
    page = render_results(entries, {"cpu": "x"})
    assert page.startswith("# Results: keystrokes to the name")
    overall = [line for line in page.splitlines() if line.startswith(("| reference", "| again"))]
    mine = report["effort"]["runs"][0]
    row = f"| {mine['n']} | {mine['first']} ({mine['first_pct']:.1f}%) |"
    assert len(overall) >= 2 and all(row in line for line in overall[:2])
    assert "| ceiling |" in page


def test_bench_over_a_typing_set_is_refused_before_anything_runs(tmp_path):
    proc = run_cli("--cache", str(tmp_path), "--queries", "typing", "--bench", "1")
    assert proc.returncode == 2
    assert "is a typing set, with no hand rows to time" in proc.stderr
    assert not (tmp_path / "corpora").exists()


def test_a_hand_row_asks_for_the_top_10_and_a_sourced_row_for_everything():
    """A prompt of the typing set (a hand row) has no rank to find, so a finder is asked for
    the 10 names that are kept: a one-letter prefix costs it ten answers, not thousands."""
    hand, sourced = QueryRow("gin", "t", HAND, ""), QueryRow("gin", "tfl", "abbr3", "tfl_x")
    bodies = BatchFeed([hand, sourced]).bodies
    assert [json.loads(b'{"id":0,' + body)["limit"] for body in bodies] == [10, 0]
    assert (limit_of(hand), limit_of(sourced)) == (10, 0)


def test_a_typing_run_saved_and_merged_reports_the_same_effort(real_cache, gin, tmp_path):
    saved = tmp_path / "typing.save"
    flags = ("--cache", str(real_cache), *GIN_STARTS)
    ran = run_cli(*flags, "--save", str(saved), "--json")
    assert ran.returncode == 0, ran.stderr
    merged = run_cli("merge", *flags, str(saved), "--json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["effort"] == json.loads(ran.stdout)["effort"]


@pytest.mark.slow
def test_a_typing_set_s_shards_each_run_their_own_repos_steps_and_merge_to_the_whole(
    real_cache, gin, tmp_path
):
    """CI's matrix failed with a KeyError: each shard checked every step of the selection,
    whose other repos' corpora it had not fetched."""
    flags = ("--cache", str(real_cache), "--queries", "typing", "--repo", "gin", "--repo",
             "fmt", "--type", "starts", "--no-regress")  # fmt: skip
    whole = run_cli(*flags, "--json")
    assert whole.returncode == 0, whole.stderr
    for k in (1, 2):
        proc = run_cli(*flags, "--shard", f"{k}/2", "--save", str(tmp_path / f"{k}.json"))
        assert proc.returncode == 0, proc.stderr
    merged = run_cli("merge", *flags, str(tmp_path / "1.json"), str(tmp_path / "2.json"),
                     "--json")  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["effort"] == json.loads(whole.stdout)["effort"]


def test_history_bisect_and_explain_refuse_a_typing_set_naming_the_command(tmp_path):
    for argv in (
        ("history", "HEAD~1..HEAD"),
        ("bisect", "--good", "HEAD~1", "--bad", "HEAD", "--query", "gin:tst"),
        ("explain", "t", "--repo", "gin"),
    ):
        proc = run_cli(*argv, "--cache", str(tmp_path), "--queries", "typing")
        assert proc.returncode == 2
        last = proc.stderr.strip().splitlines()[-1]
        assert f"typing.tsv: a typing set, which recall {argv[0]} does not read" in last
        assert last.endswith("measures its keystrokes to the name")


def test_the_typing_page_leaves_the_language_servers_out_and_says_so(tmp_path):
    proc = run_cli(
        "results", "--queries", "typing", "--only", "gopls", "--render-only",
        "--reports", str(tmp_path), "--out", str(tmp_path / "page.md"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "recall: --only gopls: no such peer of a typing set's page (the language servers are "
        "left out of it)"
    )


# A finder that leaves a mark in its own folder each time it answers: whether any ran.
MARKING_FINDER = (
    "import pathlib\n(pathlib.Path(__file__).parent / 'ran').write_text('yes')\n"
    + SUBSEQUENCE_FINDER
)
TYPING_HEADER = "repo\tsequence\tstep\tquery\tsource\n"


def _tiny_typing(tmp_path: Path, body: str) -> tuple[dict, Path]:
    files = {"finder.py": MARKING_FINDER, "recall.toml": SUBSEQUENCE_ENGINE}
    suite = tiny_suite(tmp_path, ["alfu\tabbr2\talpha_function"], files)
    typing = tmp_path / "mine.tsv"
    typing.write_text(TYPING_HEADER + body)
    return suite, typing


def _run_typing(suite: dict, typing: Path, *extra: str):
    return run_cli(
        "--finder", str(suite["finder"]), "--corpus", str(suite["corpus"]),
        "--queries", str(typing), "--cache", str(suite["cache"]), "--no-regress", *extra,
        env={"RECALL_MIRROR": ""},  # the tiny pin is in no mirror: no fallback line
    )  # fmt: skip


def test_a_foreign_typing_file_s_sequences_the_model_does_not_type_are_named_not_counted(
    tmp_path,
):
    """Issue 42 items 10 and 7 on a real run: steps no name's text starts with (`T`, `Te`)
    ended in a ZeroDivisionError after every finder ran, with no report; a sequence the
    model cannot type toward a name sampling could not pick got a certain ceiling."""
    suite, typing = _tiny_typing(
        tmp_path,
        "tiny\tprefix\t1\tT\tBetaClass\ntiny\tprefix\t2\tTe\tBetaClass\n"
        "tiny\tprefix\t1\tg\tgamma_delta\ntiny\tprefix\t2\tga\tgamma_delta\n"
        "tiny\tstarts\t1\tz\talpha_function\n",
    )
    proc = _run_typing(suite, typing, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    SCHEMA.validate(report)
    effort = report["effort"]
    assert effort["runs"][0]["n"] == 3 and effort["ceiling"]["n"] == 1
    assert effort["left_out"] == {
        "count": 2,
        "first": [
            {"repo": "tiny", "sequence": "prefix", "source": "BetaClass", "typed": "Te"},
            {"repo": "tiny", "sequence": "starts", "source": "alpha_function", "typed": "z"},
        ],
    }
    page = tmp_path / "typing.html"
    text = _run_typing(suite, typing, "--html", str(page)).stdout
    assert "Left out of the ceiling: 2 sequences the typing model does not type" in text
    assert "Left out of the ceiling: 2 sequences the typing model" in page.read_text()


def test_a_typing_file_s_unknown_source_or_bad_step_is_refused_before_any_finder_runs(
    tmp_path,
):
    """Issue 42 item 11 (a step `²`: a ValueError from int()), and a source that is no
    name, refused once every finder had run: now one line, and no finder has answered."""
    for body, message in (
        ("tiny\tprefix\t\u00b2\tg\tgamma_delta\n",
         ":2: step must be a whole number from 1, got '\u00b2'"),
        ("tiny\tprefix\t1\tg\tgamma_delta\ntiny\tprefix\t1\tg\tgamma_deltax\n",
         ":3: source 'gamma_deltax' (prefix) is not a name of tiny at its pin"),
    ):  # fmt: skip
        suite, typing = _tiny_typing(tmp_path / str(len(body)), body)
        proc = _run_typing(suite, typing)
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
        assert proc.stderr == f"recall: {typing}{message}\n"
        assert not (suite["finder"] / "ran").exists()
