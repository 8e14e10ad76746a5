"""The one codec between the report's dataclasses and JSON: a report read back from the
JSON it wrote is the same value and writes the same bytes; what does not fit is refused
with the key at fault."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from helpers import PINS, golden_report

from recall.analysis.codec import decode
from recall.analysis.effort import EffortCounts
from recall.analysis.model import CorpusPin, Counts, Meta, Report, RunSummary
from recall.errors import RecallError


def _bytes(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def test_a_report_read_back_from_its_json_is_equal_and_writes_the_same_bytes():
    report = golden_report()
    written = _bytes(report.to_json())
    back = Report.from_json(json.loads(written))
    assert dataclasses.replace(back.ceiling, unmodelled=report.ceiling.unmodelled) == (
        report.ceiling
    )
    assert back.runs == report.runs and back.diffs == report.diffs
    assert back.meta == report.meta and isinstance(back.meta, Meta)
    assert back.corpus == report.corpus and isinstance(back.corpus["gin"], CorpusPin)
    assert _bytes(back.to_json()) == written


def test_meta_and_corpus_write_the_keys_a_run_wrote_as_a_dict_in_its_order():
    data = golden_report().to_json()
    assert list(data["meta"]) == [
        "recall", "python", "git", "ctags", "engine", "corpus_sha256", "queries_sha256", "config",
    ]  # fmt: skip
    assert data["meta"]["config"] is None and list(data["meta"]["engine"]) == ["source", "sha256"]
    assert data["corpus"]["gin"] == {**PINS["gin"].identity(), "split": "tune"}


def test_a_report_without_config_or_a_pin_s_split_reads_them_as_none_and_tune():
    data = golden_report().to_json()
    del data["meta"]["config"], data["corpus"]["gin"]["split"]
    back = Report.from_json(data)
    assert back.meta.config is None and back.corpus["gin"].split == "tune"
    assert back.to_json()["meta"]["config"] is None


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        (lambda m, c: m.pop("ctags"), "report.meta: no 'ctags'"),
        (lambda m, c: m.update(git=2), "report.meta.git: expected str, got 2"),
        (lambda m, c: m.update(engine="fzf"), "report.meta.engine: expected an object"),
        (
            lambda m, c: m["engine"].update(sha256="0"),
            "report.meta.engine.sha256: expected a SHA-256, got '0'",
        ),
        (
            lambda m, c: m.update(queries_sha256="A" * 64),
            "report.meta.queries_sha256: expected a SHA-256",
        ),
        (lambda m, c: m.update(config=3), "report.meta.config: expected str or None, got 3"),
        (lambda m, c: c["gin"].pop("url"), "report.corpus.gin: no 'url'"),
        (lambda m, c: c["gin"].update(sha="abc"), "report.corpus.gin.sha: expected a commit's"),
        (lambda m, c: c["gin"].update(split="train"), "report.corpus.gin.split: 'train' is none"),
    ],
)
def test_a_meta_or_pin_of_the_wrong_shape_is_refused_naming_its_key(change, fault):
    data = golden_report().to_json()
    change(data["meta"], data["corpus"])
    with pytest.raises(RecallError, match=f"^{re.escape(fault)}"):
        Report.from_json(data)


def test_a_flattened_part_sits_in_its_parent_s_object_at_its_place():
    data = golden_report().to_json()["runs"][0]
    keys = list(data)
    assert keys[:5] == ["label", "bin", "index_s", "query_s", "cached"]
    assert keys[5 : 5 + len(dataclasses.fields(Counts))] == [
        f.name for f in dataclasses.fields(Counts)
    ]
    assert "counts" not in data and RunSummary.from_json(data).counts.n == data["n"]


def test_a_section_not_asked_for_is_absent_and_reads_back_as_none():
    data = golden_report().to_json()
    assert "bench" not in data and "effort" not in data and "holdout" not in data
    back = Report.from_json(data)
    assert back.bench is None and back.effort is None and back.holdout is None


def test_a_float_field_keeps_a_whole_count_an_int_as_written():
    data = {"n": 2, "first": 1, "first_pct": 50.0, "first_keys": None, "top3": 2,
            "top3_pct": 100.0, "top3_keys": 1.5, "saved": 3, "typed": 8, "saved_pct": 37.5,
            "curve": [50.0, 100.0]}  # fmt: skip
    counts = EffortCounts.from_json(data)
    assert counts.first == 1 and isinstance(counts.first, int)
    assert counts.first_ci is None  # a report kept before ranges: the default
    assert counts.to_json() == data | {"first_ci": None, "top3_ci": None}


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        (lambda d: d["runs"][0].update(n="ten"), "report.runs[0].n: expected int, got 'ten'"),
        (lambda d: d["runs"][0].pop("label"), "report.runs[0]: no 'label'"),
        (lambda d: d["ceiling"].update(first_ci=[1]), "report.ceiling.first_ci: expected 2"),
        (lambda d: d.update(runs={}), "report.runs: expected an array"),
        (
            lambda d: d.update(split="train"),
            "report.split: expected one of 'tune', 'holdout' or None, got 'train'",
        ),
    ],
)
def test_a_value_that_does_not_fit_its_type_is_refused_naming_its_key(change, fault):
    data = golden_report().to_json()
    change(data)
    with pytest.raises(RecallError, match=f"^{fault}".replace("[", r"\[").replace("]", r"\]")):
        Report.from_json(data)


def test_a_report_of_another_schema_is_refused():
    data = golden_report().to_json() | {"schema": 1}
    with pytest.raises(RecallError, match="report schema 1: this recall reads schema 2"):
        Report.from_json(data)


def test_a_bool_is_not_read_as_a_number():
    with pytest.raises(RecallError, match="n: expected int, got True"):
        decode(Counts, dict.fromkeys(f.name for f in dataclasses.fields(Counts)) | {"n": True})
