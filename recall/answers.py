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


def rank_answer(engine: Engine, out: bytes, source: str) -> QueryResult:
    """The rank of source in one per-query answer; raises ValueError on anything
    unparseable."""
    if engine.output == "lines":
        text = out.decode("utf-8")
        hits = (Hit(line.split("\t", 1)[0], None, None) for line in text.splitlines() if line)
        return rank_by_name(hits, source)
    return rank_json(orjson.loads(out), source)


def rank_json(data: object, source: str) -> QueryResult:
    """rank_by_name over a parsed JSON answer, a list of objects with a string `name` (and
    a `file` string and `line` integer where the finder has them); raises ValueError on
    anything else, wherever in the list it is.

    Answers are unlimited, so a list holds thousands of rows (a default run reads 200 MB
    of them): each row is checked, but only the top 10 become Hits, and names are counted
    only until the source is found."""
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of results")
    seen: set[str] = set()
    top: list[Hit] = []
    rank = None
    for item in data:
        if type(item) is not dict or type(item.get("name")) is not str:
            raise ValueError("expected objects with a string 'name'")
        if rank is not None and len(top) >= TOP:
            continue
        name = item["name"]
        if name in seen:
            continue
        seen.add(name)
        if len(top) < TOP:
            file, line = item.get("file"), item.get("line")
            top.append(Hit(name, file if type(file) is str else None,
                           line if type(line) is int else None))  # fmt: skip
        if name == source:
            rank = len(seen)
    return QueryResult(rank, tuple(top))
