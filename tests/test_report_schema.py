"""The JSON report's contract: every report the CLI prints, and every part the model can
hold, validates against the committed schema (docs/report.schema.json), and the top-level
keys stay the ones docs/report-json.md names."""

import dataclasses
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, SUBSEQUENCE_ENGINE, SUBSEQUENCE_FINDER, make_repo, run_cli
from helpers import golden_report

from recall.analysis.ceiling import summary as ceiling_summary
from recall.analysis.model import SCHEMA, Meta, QueryResult, Report, RunResult
from recall.analysis.report import analyse
from recall.inputs.corpus import Pin
from recall.inputs.queryset import QueryRow
from recall.workflows.bench import summarize_bench

SCHEMA_PATH = ROOT / "docs" / "report.schema.json"
VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
TOP_KEYS = {
    "schema", "meta", "corpus", "queries", "sourced", "runs", "ceiling", "unknown_sources", "split",
}  # fmt: skip
OPTIONAL_TOP_KEYS = {"diff", "diffs", "regress", "bench", "misses", "effort", "holdout"}
GIN_ABBR3 = ("--repo", "gin", "--type", "abbr3")


def _valid(report: dict) -> dict:
    errors = sorted(VALIDATOR.iter_errors(report), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    return report


def _json(*args: str, cwd: Path = ROOT) -> dict:
    proc = run_cli(*args, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return _valid(json.loads(proc.stdout))


@pytest.fixture(scope="module")
def reference_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference finder as a binary built by hand, for a baseline by --base-bin."""
    wrapper = tmp_path_factory.mktemp("bin") / "finder.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m recall.finders.reference "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_the_schema_is_itself_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


def test_the_schema_refuses_a_schema_1_report_and_an_unknown_key(real_cache, gin):
    report = _json("--cache", str(real_cache), *GIN_ABBR3, "--no-regress")
    assert not VALIDATOR.is_valid(report | {"schema": 1})
    assert not VALIDATOR.is_valid(report | {"extra": 0})
    run = report["runs"][0]
    assert not VALIDATOR.is_valid(report | {"runs": [{k: v for k, v in run.items() if k != "mrr"}]})


def test_a_plain_run_with_regress_cases_and_misses_has_the_pinned_top_level_keys(real_cache, gin):
    report = _json("--cache", str(real_cache), *GIN_ABBR3, "--misses")
    assert report["schema"] == SCHEMA == 2
    assert set(report) == TOP_KEYS | {"regress", "misses"}
    assert report["regress"]["cases"] == report["runs"][0]["regress"]["cases"] > 0
    assert len(report["misses"]) == report["runs"][0]["n"] - report["runs"][0]["first"]


def test_a_run_without_regress_cases_has_only_the_required_keys(real_cache, gin):
    report = _json("--cache", str(real_cache), *GIN_ABBR3, "--no-regress")
    assert set(report) == TOP_KEYS
    assert report["runs"][0]["regress"] is None


def test_a_diff_with_accepted_losses_and_a_saved_baseline_validate(
    real_cache, gin, reference_bin, tmp_path
):
    accepted = tmp_path / "accepted.tsv"
    accepted.write_text("repo\tquery\tsource\ngin\tnone\tNone\n")
    saved = tmp_path / "saved.json"
    report = _json(
        "--cache", str(real_cache), *GIN_ABBR3, "--base-bin", str(reference_bin),
        "--accept", str(accepted), "--save", str(saved),
    )  # fmt: skip
    assert set(report) == TOP_KEYS | {"regress", "diff", "diffs"}
    assert report["diffs"] == [report["diff"]]
    diff = report["diff"]
    assert diff["accepted"] == [] and diff["stale_accepted"] == [
        {"repo": "gin", "query": "none", "source": "None"}
    ]
    assert diff["regress_broken"] == []
    assert diff["explain_flags"].startswith(f"--finder {ROOT} --base-bin {reference_bin} ")
    against = _json("--cache", str(real_cache), *GIN_ABBR3, "--against", str(saved))
    assert against["diff"]["explain_flags"] is None and against["diff"]["accepted"] is None
    assert against["runs"][0]["cached"] and against["runs"][0]["label"].startswith("saved ")


def test_a_bench_validates(real_cache, gin, tmp_path):
    """The fixture finder, whose query process starts in milliseconds: a bench times a
    process per hand query, and the reference finder's would take seconds."""
    finder = tmp_path / "finder"
    make_repo(finder, {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": SUBSEQUENCE_ENGINE})
    report = _json("--cache", str(real_cache), "--repo", "gin", "--type", "hand", "--bench", "1",
                   "--no-regress", "--finder", str(finder))  # fmt: skip
    assert set(report) == TOP_KEYS | {"bench"}
    assert report["bench"]["ratios"] == [] and len(report["bench"]["runs"]) == 1


def test_a_merged_report_validates_and_matches_the_unsharded_run_but_the_seconds(
    real_cache, gin, tmp_path
):
    shard = tmp_path / "shard.json"
    proc = run_cli("--cache", str(real_cache), *GIN_ABBR3, "--shard", "1/1", "--save",
                      str(shard))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    merged = _json("merge", "--cache", str(real_cache), *GIN_ABBR3, str(shard))
    whole = _json("--cache", str(real_cache), *GIN_ABBR3)

    def numbers(report: dict) -> dict:
        return report | {
            "runs": [run | {"index_s": 0, "query_s": 0, "cached": False} for run in report["runs"]]
        }

    assert numbers(merged) == numbers(whole)


def test_the_model_s_every_part_validates_errors_misses_bench_and_regress_rows(real_cache, gin):
    meta = Meta.from_json(_json("--cache", str(real_cache), *GIN_ABBR3, "--no-regress")["meta"])
    golden = dataclasses.replace(golden_report(), meta=meta).to_json()
    assert _valid(golden)["diff"]["accepted"] and golden["diff"]["regress_broken"]
    assert golden["diff"]["lost_first"] and golden["runs"][1]["regress"]["failing"]

    rows = [QueryRow("gin", "q0", "abbr3", "A"), QueryRow("gin", "q1", "hand", "")]
    answered = QueryResult(1, ())
    broke = QueryResult(None, (), error="exit 3")
    runs = [RunResult("base", "b", 0.0, 0.0, (answered, answered)),
            RunResult("new", "n", 0.0, 0.0, (broke, broke))]  # fmt: skip
    pins = {"gin": Pin("gin", "https://github.com/gin-gonic/gin", "a" * 40, "go")}
    bench = summarize_bench(["base", "new"], [[[1.0]], [[2.0]]], [[{"load": [0.5]}], [{}]],
                            [0, 1], reps=1)  # fmt: skip
    report = analyse(
        meta, pins, rows, runs, baseline=True, cases=[], case_results=[(), ()], regress=None,
        accepted=None, explain_flags=["--base main"], ceiling=ceiling_summary(rows, {}, {}),
        bench=bench, show_misses=True,
    )  # fmt: skip
    data = _valid(report.to_json())
    assert data["runs"][1]["error_rows"] and data["diff"]["new_errors"]
    assert data["misses"] == [{"repo": "gin", "query": "q0", "type": "abbr3", "source": "A",
                               "rank": None, "first": None}]  # fmt: skip
    assert data["bench"]["ratios"][0]["median"] == 2.0
    assert isinstance(report, Report)
    held = {"gin": dataclasses.replace(pins["gin"], split="holdout")}
    holdout = analyse(
        meta, held, rows, runs, baseline=False, cases=[], case_results=[(), ()], regress=None,
        accepted=None, explain_flags=[], ceiling=ceiling_summary(rows, {}, {}), split="holdout",
    )  # fmt: skip
    data = _valid(holdout.to_json())
    assert data["corpus"]["gin"]["split"] == "holdout"
    assert data["holdout"]["fresh"]["margin"]["other"] == "new"
    assert data["holdout"]["seen"] == {"corpora": [], "n": 0, "margin": None}


def test_a_kept_report_of_schema_1_is_refused_naming_the_file_and_the_schema(tmp_path):
    kept = tmp_path / "reference.json"
    report = {"schema": 1, "queries": 1, "sourced": 1, "runs": []}
    kept.write_text(json.dumps({"label": "reference", "version": "v", "command": "c",
                                "note": "n", "report": report}))  # fmt: skip
    proc = run_cli("results", "--render-only", "--reports", str(tmp_path), "--only",
                      "reference", "--out", str(tmp_path / "page.md"))  # fmt: skip
    assert proc.returncode == 2
    assert f"recall: {kept}: a kept report of schema 1, and this recall reads schema 2" in (
        proc.stderr
    )
    assert not (tmp_path / "page.md").exists()


def test_a_typing_run_adds_effort_and_the_schema_holds_its_every_key(real_cache, gin):
    report = _json(
        "--cache", str(real_cache), "--queries", "typing", "--repo", "gin", "--type", "starts",
        "--no-regress",
    )  # fmt: skip
    assert set(report) == TOP_KEYS | {"effort"} and set(report) <= TOP_KEYS | OPTIONAL_TOP_KEYS
    effort = report["effort"]
    assert [run["label"] for run in effort["runs"]] == ["candidate"] and effort["diffs"] == []
    run = effort["runs"][0]
    assert not VALIDATOR.is_valid(report | {"effort": effort | {"runs": [run | {"extra": 0}]}})
    short = {k: v for k, v in run.items() if k != "first_keys"}
    assert not VALIDATOR.is_valid(report | {"effort": effort | {"runs": [short]}})
