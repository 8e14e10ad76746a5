"""docs/report.schema.json, generated from the report's types by the codec's own rules, so
that the schema says what `Report.to_json()` writes and cannot drift from it:
`python -m recall.analysis.schema > docs/report.schema.json` (make schema) writes it, and
tests/test_schema.py holds the committed file to what this gives.

Every class is a definition named as the class, its docstring its description; a key is
required unless its class omits it at some value (JSON_OMIT); a flattened part's keys sit
in its parent's definition; a computed key takes its property's return type, a constant
its value; a string of a given form (`Annotated[str, Pattern(...)]`) its pattern.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from typing import Annotated, Any, Literal, Union

from recall.analysis.codec import encode, hints, keys, pattern
from recall.analysis.model import SCHEMA, Report


def report_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a report."""
    defs: dict[str, dict] = {}
    top = _object(Report, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"recall report, schema {SCHEMA}",
        "description": "The JSON object `recall run --json` and `recall merge --json` print, "
        "generated from the types of recall/analysis/model.py (recall/analysis/schema.py); "
        "docs/report-json.md explains every key.",
        **{k: v for k, v in top.items() if k != "description"},
        "$defs": dict(sorted(defs.items())),
    }


def _object(cls: type, defs: dict[str, dict]) -> dict:
    properties: dict[str, dict] = {}
    required: list[str] = []
    flat: frozenset[str] = getattr(cls, "JSON_FLAT", frozenset())
    omit: dict[str, object] = getattr(cls, "JSON_OMIT", {})
    fields = {f.name for f in dataclasses.fields(cls)}
    for key in keys(cls):
        if key in flat:
            part = _object(hints(cls)[key], defs)
            properties |= part["properties"]
            required += part["required"]
            continue
        if key in fields:
            properties[key] = _type(hints(cls)[key], defs)
        else:
            properties[key] = _computed(cls, key, defs)
        if key not in omit:
            required.append(key)
    doc = inspect.getdoc(cls) or ""
    return {
        **({"description": " ".join(doc.split())} if doc else {}),
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _computed(cls: type, key: str, defs: dict[str, dict]) -> dict:
    """A key the class computes: a property's or method's return type, or a constant."""
    member = inspect.getattr_static(cls, key)
    if isinstance(member, property) and member.fget is not None:
        return _type(typing.get_type_hints(member.fget)["return"], defs)
    if inspect.isfunction(member):
        return _type(typing.get_type_hints(member)["return"], defs)
    return {"const": encode(member)}


def _type(tp: Any, defs: dict[str, dict]) -> dict:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        rule = pattern(tp)
        return _type(args[0], defs) | ({"pattern": f"^{rule.regex}$"} if rule else {})
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # a placeholder against a class that holds its own kind
            defs[name] = _object(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type(a, defs) for a in args]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type(args[0], defs)}
        return {"type": "array", "prefixItems": [_type(a, defs) for a in args],
                "minItems": len(args), "maxItems": len(args)}  # fmt: skip
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(args[1], defs)}
    if origin is Literal:
        return {"enum": list(args)}
    simple = {int: "integer", float: "number", str: "string", bool: "boolean",
              type(None): "null"}  # fmt: skip
    if tp in simple:
        return {"type": simple[tp]}
    raise TypeError(f"no schema for {tp}")


def written() -> str:
    """The file's text, as docs/report.schema.json holds it."""
    return json.dumps(report_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(written(), end="")
