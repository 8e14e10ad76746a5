"""docs/report.schema.json is generated from the report's types (recall/analysis/schema.py):
the committed file is what they give, and it holds what the codec writes."""

import json

import jsonschema
from conftest import ROOT
from helpers import golden_report

from recall.analysis.schema import report_schema, written


def test_the_committed_report_schema_is_what_the_types_generate():
    committed = (ROOT / "docs" / "report.schema.json").read_text()
    assert committed == written(), "run `make schema` to write docs/report.schema.json anew"


def test_a_computed_key_is_typed_by_its_property_and_an_omitted_one_is_not_required():
    schema = report_schema()
    top = schema["required"]
    assert "diff" not in top and "effort" not in top and "split" in top
    assert schema["properties"]["schema"] == {"const": 2}
    diff = schema["$defs"]["Diff"]
    assert diff["properties"]["verdict"] == {"$ref": "#/$defs/DiffVerdict"}
    assert schema["$defs"]["DiffVerdict"]["properties"]["test"] == {"const": "mcnemar_exact"}
    run = schema["$defs"]["RunSummary"]
    assert "counts" not in run["properties"] and run["properties"]["n"] == {"type": "integer"}


def test_the_generated_schema_holds_a_report_and_refuses_a_key_it_does_not_name():
    validator = jsonschema.Draft202012Validator(report_schema())
    data = json.loads(json.dumps(golden_report().to_json()))
    meta = data["meta"]
    assert validator.is_valid(data)
    assert not validator.is_valid(data | {"meta": meta | {"corpus_sha256": "b"}})
    data["runs"][0]["extra"] = 1
    assert not validator.is_valid(data)
