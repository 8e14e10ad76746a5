"""A judgments set's run as a report: each finder's seconds, errors and answers naming
nothing in its list, and the judgments section (recall/analysis/judgments.py).

Its rows are candidates, not sourced queries: their #1 and top 10 would count how often a
candidate came first, which says nothing, so a report's counts and groups are empty and
its numbers are the agreement. An error or an answer naming no candidate is listed once
a query, under the name of the query's candidate list (the pseudo-corpus it ran on, as a
finder's own error names it).
"""

from __future__ import annotations

import dataclasses
import itertools

from recall.analysis import ceiling
from recall.analysis.judgments import judge
from recall.analysis.model import (
    ErrorRow,
    Meta,
    OffCorpusRow,
    QueryResult,
    Report,
    RunResult,
    RunSummary,
)
from recall.analysis.report import OFF_CORPUS_SHOWN, counts
from recall.inputs.judgments import Judgment, on_side, projects_by_side
from recall.inputs.queryset import QueryRow
from recall.inputs.sides import Split

NO_CEILING = ceiling.summary([], {}, {})  # no recipe makes a judgment: nothing to bound


def judgments_report(
    meta: Meta, judgments: list[Judgment], rows: list[QueryRow], runs: list[RunResult], *,
    baseline: bool, split: Split | None = None,
) -> Report:  # fmt: skip
    """The report of runs (the baseline first, with one) over the judged rows: the rows
    of the pairs of the --split side (every pair of the file without it), which the report
    judges, naming the projects of each side."""
    answers = [[(r.rank, r.error) for r in run.results] for run in runs]
    judged = judge(
        on_side(judgments, split), rows,
        list(zip((run.label for run in runs), answers, strict=True)), baseline=baseline,
    )  # fmt: skip
    judged = dataclasses.replace(judged, split=split, sides=projects_by_side(judgments))
    return Report(
        meta=meta, corpus={}, queries=judged.queries, sourced=0,
        runs=tuple(_summary(run, rows) for run in runs), ceiling=NO_CEILING, judgments=judged,
        split=split,
    )  # fmt: skip


def _summary(run: RunResult, rows: list[QueryRow]) -> RunSummary:
    """A finder's seconds and the queries it failed on, each once (its candidates' rows
    share one answer)."""
    asked: dict[tuple[str, str, str], QueryResult] = {}
    for row, result in zip(rows, run.results, strict=True):
        asked.setdefault((row.repo, row.type, row.query), result)
    errors = tuple(
        ErrorRow(repo, query, domain, result.error)
        for (repo, domain, query), result in asked.items()
        if result.error
    )
    off = [
        OffCorpusRow(repo, query, domain, result.top[0].name)
        for (repo, domain, query), result in asked.items()
        if result.off_corpus and result.top
    ]
    return RunSummary(
        label=run.label, bin=run.bin, index_s=round(run.index_s, 2),
        query_s=round(run.query_s, 2), cached=run.cached, counts=counts([], []), by_type={},
        by_repo={}, by_language={}, error_rows=errors, dirtied=tuple(run.dirtied),
        regress=None, off_corpus=len(off),
        off_corpus_first=tuple(itertools.islice(off, OFF_CORPUS_SHOWN)), restarts=run.restarts,
    )  # fmt: skip
