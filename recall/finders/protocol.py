"""What a finder's answer means: its rows parsed, and the rank of the name meant.

Rank is counted among distinct names, so a finder that lists one name once per
definition is not penalised for its duplicates.

An answer *names nothing in the corpus* when it lists at least one row and no row's name
(in the whole list, not only its top 10) is one of the corpus's distinct names, the names
`{names}` lists. Such an answer is flagged (`QueryResult.off_corpus`): a few are a finder's
own business (a language server's standard-library symbols), but most of a run's answers
flagged means the harness is reading something else as names (fzy's `--show-scores`
prints a score first on each line, and `output = "lines"` takes it for the name).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import orjson

from recall.analysis.model import TOP, Hit, QueryResult
from recall.finders.engine import Engine


def rank_by_name(rows: Iterable[Hit], source: str, names: Collection[str] = ()) -> QueryResult:
    """Rank = position of source among distinct names; top = first TOP distinct names.
    With the corpus's names, an answer of which no row is one of them is off_corpus."""
    seen: set[str] = set()
    top: list[Hit] = []
    rank = None
    named = not names
    for hit in rows:
        if not named and hit.name in names:
            named = True
        if hit.name in seen:
            continue
        seen.add(hit.name)
        if len(top) < TOP:
            top.append(hit)
        if hit.name == source:
            rank = len(seen)
        if rank is not None and len(top) >= TOP and named:
            break
    return QueryResult(rank, tuple(top), off_corpus=bool(seen) and not named)


def rank_answer(
    engine: Engine, out: bytes, source: str, names: Collection[str] = ()
) -> QueryResult:
    """The rank of source in one per-query answer; raises ValueError on anything
    unparseable."""
    if engine.output == "lines":
        text = out.decode("utf-8")
        hits = (Hit(line.split("\t", 1)[0], None, None) for line in text.splitlines() if line)
        return rank_by_name(hits, source, names)
    return rank_json(orjson.loads(out), source, names)


def rank_json(data: object, source: str, names: Collection[str] = ()) -> QueryResult:
    """rank_by_name over a parsed JSON answer, a list of objects with a string `name` (and
    a `file` string and `line` integer where the finder has them); raises ValueError on
    anything else, wherever in the list it is.

    Answers are unlimited, so a list holds thousands of rows (a default run reads 200 MB
    of them): each row is checked, but only the top 10 become Hits, and names are counted
    only until the source is found (and looked up among the corpus's names only until one
    is)."""
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of results")
    seen: set[str] = set()
    top: list[Hit] = []
    rank = None
    named = not names
    for item in data:
        if type(item) is not dict or type(item.get("name")) is not str:
            raise ValueError("expected objects with a string 'name'")
        name = item["name"]
        if not named and name in names:
            named = True
        if rank is not None and len(top) >= TOP:
            continue
        if name in seen:
            continue
        seen.add(name)
        if len(top) < TOP:
            file, line = item.get("file"), item.get("line")
            top.append(Hit(name, file if type(file) is str else None,
                           line if type(line) is int else None))  # fmt: skip
        if name == source:
            rank = len(seen)
    return QueryResult(rank, tuple(top), off_corpus=bool(seen) and not named)
