"""What a finder's answer means: its rows parsed, and the rank of the name meant.

Rank is counted among distinct names, so a finder that lists one name once per
definition is not penalised for its duplicates.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from recall.engine import Engine
from recall.model import TOP, Hit, QueryResult


def rank_by_name(rows: Iterable[Hit], source: str) -> QueryResult:
    """Rank = position of source among distinct names; top = first TOP distinct names."""
    seen: set[str] = set()
    top: list[Hit] = []
    rank = None
    for hit in rows:
        if hit.name in seen:
            continue
        seen.add(hit.name)
        if len(top) < TOP:
            top.append(hit)
        if hit.name == source:
            rank = len(seen)
            if len(top) >= TOP:
                break
    return QueryResult(rank, tuple(top))


def parse_output(engine: Engine, out: bytes) -> list[Hit]:
    """The ranked rows of one answer; raises ValueError on anything unparseable."""
    if engine.output == "lines":
        text = out.decode("utf-8")
        return [Hit(line.split("\t", 1)[0], None, None) for line in text.splitlines() if line]
    data = orjson.loads(out)
    return json_hits(data)


def json_hits(data: object) -> list[Hit]:
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of results")
    hits = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError("expected objects with a string 'name'")
        line = item.get("line")
        file = item.get("file")
        hits.append(
            Hit(
                item["name"],
                file if isinstance(file, str) else None,
                line if isinstance(line, int) and not isinstance(line, bool) else None,
            )
        )
    return hits
