"""`recall explain`: one query through each binary, the top 10 side by side.

A lost row in a report says that a source fell; it does not say what took its place or
from where. Explain answers that for one query without running the whole query set.
No index is kept between runs (each run's {db} is removed afterwards), so explain
indexes the one corpus the query belongs to, once per binary.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from recall.analysis.model import TOP, QueryResult
from recall.errors import RecallError
from recall.finders.engine import finder_env, refuse_unfit, resolve_engine
from recall.inputs.corpus import Pin, cache_root, load_pins, mirror_root, select_pins
from recall.inputs.judgments import refuse_judgments
from recall.inputs.keystrokes import refuse_typing
from recall.inputs.paths import domain_of
from recall.inputs.queryset import HAND, QueryRow, query_set_path, read_queries
from recall.inputs.suite import locate
from recall.running.build import finder_root, make_binaries, own_tree
from recall.running.measure import check_named, open_corpus
from recall.running.session import Session
from recall.running.values import Corpus, FinderBuild
from recall.terminal import safe_output, shown
from recall.workflows.options import ExplainOptions


@dataclass(frozen=True)
class Side:
    label: str
    bin: str
    index_s: float
    result: QueryResult


@dataclass(frozen=True)
class Explained:
    """One query explained: its JSON (`as_json`, with the environment the finder ran
    with) and each binary's side, which the text is rendered from."""

    data: dict
    sides: list[Side]


def explain(options: ExplainOptions) -> Explained:
    """The query through each binary the options name, top 10 each, with the row's
    source marked: the Python API's `recall.explain`, and `recall explain`."""
    found = locate("explain", finder=options.finder, corpus=options.data.corpus,
                   queries=options.data.queries)  # fmt: skip
    corpus, queries = Path(found.corpus), query_set_path(found.queries or "")
    (pin,) = select_pins(load_pins(corpus), [options.repo], corpus)
    refuse_typing(queries, "recall explain")
    refuse_judgments(queries, "recall explain")
    rows = read_queries(queries, None) if queries.exists() else []
    row = pick_row(rows, pin.name, options.query, options.source, options.type)
    cache = cache_root(options.data.cache)
    root = finder_root(Path(found.finder))
    domain = domain_of([*rows, row])
    engine = resolve_engine(options.engine, root, domain)  # the default in the set's mode
    refuse_unfit([engine], domain)  # what `recall run` refuses before it runs
    root = own_tree(
        engine, root, named=found.finder_named, base=options.base, base_bin=options.base_bin
    )
    target = open_corpus(pin, cache, mirror_root(options.data.mirror), domain)
    strict = found.committed
    check_source(row, target.names, bool(options.source), rows, queries, strict)
    binaries = make_binaries(
        root, engine, cache, bin_path=options.bin, base=options.base, base_bin=options.base_bin,
        build_timeout=options.build_timeout,
    )  # fmt: skip
    sides = [explain_one(b, target, row, options.timeout) for b in binaries]
    for side in sides:  # what `recall run` refuses (a names finder given paths, say)
        check_named(side.label, [side.result])
    data = as_json(pin, row, sides)
    data["environment"] = finder_env(engine, os.environ)  # what the finder ran with
    return Explained(data, sides)


def pick_row(
    rows: list[QueryRow], repo: str, query: str, source: str | None, kind: str | None = None
) -> QueryRow:
    """The query's row: --source wins (with --type, the exact row a report printed), else
    the first sourced row of the set, else hand."""
    if source:
        kind = kind or next(
            (r.type for r in rows if (r.repo, r.query, r.source) == (repo, query, source)), "given"
        )
        return QueryRow(repo, query, kind, source)
    matches = [r for r in rows if r.repo == repo and r.query == query]
    sourced = [r for r in matches if r.sourced]
    if sourced:
        return sourced[0]
    return QueryRow(repo, query, HAND, "")


def check_source(
    row: QueryRow,
    names: list[str],
    given: bool,
    rows: list[QueryRow],
    queries: Path,
    strict: bool = True,
) -> None:
    """The source must be a name of the corpus at its pin, as `run` demands of every row
    of a committed set: a source that is not (a typo, a name from another pin) would read
    as the finder's miss. given: it came from --source (always held to this); else it is a
    row of the query set, named by its line, and a foreign set's row (strict False) is
    shown as run counts it, not found."""
    if not row.source or row.source in set(names) or not (given or strict):
        return
    if given:
        where = f"--source {row.source!r}"
    else:
        where = f"{queries}:{rows.index(row) + 2}: source {row.source!r}"
    raise RecallError(f"{where} is not a name of {row.repo} at its pin")


def explain_one(binary: FinderBuild, corpus: Corpus, row: QueryRow, timeout: float) -> Side:
    """The row through one binary, in a session of its own (its index built for this)."""
    session = Session(binary, corpus, timeout)
    try:
        index_s = session.index()
        if binary.engine.batch:
            (result,) = session.query_batch([row])
        else:
            result = session.query_one(row)
    finally:
        session.close()
    return Side(binary.label, " ".join(binary.bin_argv()), index_s, result)


def as_json(pin: Pin, row: QueryRow, sides: list[Side]) -> dict:
    return {
        "repo": pin.name,
        "query": row.query,
        "type": row.type,
        "source": row.source or None,
        "index": "built for this query (explain never reuses a kept index)",
        "sides": [
            {
                "label": side.label,
                "bin": side.bin,
                "index_s": round(side.index_s, 3),
                "rank": side.result.rank,
                "error": side.result.error,
                "top": [
                    {"rank": i, "name": h.name, "file": h.file, "line": h.line}
                    for i, h in enumerate(side.result.top, 1)
                ],
            }
            for side in sides
        ],
    }


def _cell(rank: int, hit, source: str) -> str:
    where = f"{hit.file}:{hit.line}" if hit.file else "-"
    if hit.file and hit.line is None:
        where = hit.file
    mark = "*" if hit.name == source else " "
    return f"{rank:>2}{mark} {shown(hit.name)}  {shown(where)}"


def _standing(side: Side, source: str) -> str:
    if side.result.error:
        return f"error: {shown(side.result.error)}"
    if not source:
        return "no source (a hand row)"
    rank = side.result.rank
    return f"{shown(source)} not found" if rank is None else f"{shown(source)} is #{rank}"


def render(data: dict, sides: list[Side]) -> str:
    """The top 10 of each side in columns; `*` marks the source."""
    source = data["source"] or ""
    lines = [
        f"recall explain {shown(shlex.quote(data['query']))} --repo {data['repo']}"
        f"  (type {data['type']}, source {shown(source) or '-'})",
        "index: built for this query in a throwaway {db} (explain never reuses a kept index)",
        "",
    ]
    columns = [
        [shown(side.label), *(_cell(i, h, source) for i, h in enumerate(side.result.top, 1))]
        for side in sides
    ]
    standings = [_standing(side, source) for side in sides]
    widths = [max(len(c) for c in [*col, st]) for col, st in zip(columns, standings, strict=True)]
    depth = max(len(col) for col in columns)
    for i in range(min(depth, TOP + 1)):
        cells = [col[i] if i < len(col) else "" for col in columns]
        lines.append("   ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    lines.append("   ".join(s.ljust(w) for s, w in zip(standings, widths, strict=True)).rstrip())
    return safe_output("\n".join(lines) + "\n")
