"""Turning results into the report: pure functions from rows and runs to `model.Report`.

Every number the report prints is made here (and in `stats`, `ceiling`, `regress`,
`accept`, `bench`), once, from the measured runs; rendering (`recall.render`) only
formats them, so text, Markdown, JSON and HTML cannot disagree.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

from recall.analysis.accept import Key, apply_accepted
from recall.analysis.model import (
    AgainstCeiling,
    BenchSummary,
    CeilingCounts,
    CeilingSummary,
    CorpusPin,
    Counts,
    Diff,
    Errored,
    ErrorRow,
    Gained,
    Holdout,
    HoldoutView,
    Lost,
    Margin,
    Meta,
    Miss,
    OffCorpusRow,
    QueryResult,
    RegressSection,
    RegressSummary,
    Report,
    RunResult,
    RunSummary,
    UnknownSources,
)
from recall.analysis.regress import Case, broken, has_locations
from recall.analysis.regress import summarize as summarize_regress
from recall.analysis.stats import (
    better,
    compare,
    mean_ndcg_at_10,
    mean_reciprocal_rank,
    paired_se,
)
from recall.inputs.corpus import Pin
from recall.inputs.queryset import QueryRow
from recall.inputs.sides import HOLDOUT, SEEN, Split

OFF_CORPUS_SHOWN = 5  # rows quoted of a run's answers that named nothing in the corpus


def counts(rows: list[QueryRow], results: list[QueryResult]) -> Counts:
    ranks = [r.rank for row, r in zip(rows, results, strict=True) if row.sourced]
    n = len(ranks)
    first = sum(1 for r in ranks if r == 1)
    top10 = sum(1 for r in ranks if r is not None and r <= 10)
    found = sum(1 for r in ranks if r is not None)
    errors = sum(1 for row, r in zip(rows, results, strict=True) if r.error)

    def pct(k: int) -> float:
        return round(100.0 * k / n, 1) if n else 0.0

    return Counts(
        n=n, first=first, top10=top10, found=found, errors=errors,
        first_pct=pct(first), top10_pct=pct(top10), found_pct=pct(found),
        mrr=round(mean_reciprocal_rank(ranks), 4), ndcg10=round(mean_ndcg_at_10(ranks), 4),
    )  # fmt: skip


def _grouped(
    rows: list[QueryRow], results: list[QueryResult], key: Callable[[QueryRow], str]
) -> dict[str, Counts]:
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(key(row), []).append(i)
    return {
        name: counts([rows[i] for i in idx], [results[i] for i in idx])
        for name, idx in groups.items()
    }


def summarize(
    run: RunResult,
    rows: list[QueryRow],
    pins: dict[str, Pin],
    regress: RegressSummary | None = None,
) -> RunSummary:
    results = list(run.results)
    return RunSummary(
        label=run.label,
        bin=run.bin,
        index_s=round(run.index_s, 2),
        query_s=round(run.query_s, 2),
        cached=run.cached,
        counts=counts(rows, results),
        by_type=_grouped(rows, results, lambda r: r.type),
        by_repo=_grouped(rows, results, lambda r: r.repo),
        by_language=_grouped(rows, results, lambda r: pins[r.repo].language),
        error_rows=tuple(
            ErrorRow(row.repo, row.query, row.type, res.error)
            for row, res in zip(rows, results, strict=True)
            if res.error
        ),
        dirtied=tuple(run.dirtied),
        restarts=run.restarts,
        regress=regress,
        off_corpus=sum(1 for res in results if res.off_corpus),
        off_corpus_first=tuple(
            itertools.islice(
                (
                    OffCorpusRow(row.repo, row.query, row.type, res.top[0].name)
                    for row, res in zip(rows, results, strict=True)
                    if res.off_corpus and res.top
                ),
                OFF_CORPUS_SHOWN,
            )
        ),
    )


# Where a source's rank went, new rank minus base rank (negative: it moved up); "found"
# and "lost" are the moves between found and missed, "same" includes missed on both sides.
MOVE_BUCKETS = (
    ("up 10+", -(10**9), -10), ("up 5-9", -9, -5), ("up 2-4", -4, -2), ("up 1", -1, -1),
    ("same", 0, 0),
    ("down 1", 1, 1), ("down 2-4", 2, 4), ("down 5-9", 5, 9), ("down 10+", 10, 10**9),
)  # fmt: skip


def move_bucket(base_rank: int | None, new_rank: int | None) -> str:
    if base_rank is None or new_rank is None:
        if base_rank == new_rank:
            return "same"
        return "found" if base_rank is None else "lost"
    delta = new_rank - base_rank
    return next(name for name, low, high in MOVE_BUCKETS if low <= delta <= high)


def _first(result: QueryResult) -> str | None:
    return result.top[0].name if result.top else None


def _lost(row: QueryRow, base: QueryResult, new: QueryResult) -> Lost:
    """A lost row with where the source is defined, from the base's hit that named it."""
    hit = next((h for h in base.top if h.name == row.source), None)
    return Lost(
        row.repo, row.query, row.type, row.source, base.rank, new.rank, _first(new),
        source_file=hit.file if hit else None, source_line=hit.line if hit else None,
    )  # fmt: skip


def _gained(row: QueryRow, base: QueryResult, new: QueryResult) -> Gained:
    """A gained row with where the source is defined, from the candidate's hit."""
    hit = next((h for h in new.top if h.name == row.source), None)
    return Gained(
        row.repo, row.query, row.type, row.source, base.rank, new.rank, _first(new),
        source_file=hit.file if hit else None, source_line=hit.line if hit else None,
    )  # fmt: skip


def _in_top10(rank: int | None) -> bool:
    return rank is not None and rank <= 10


def diff(rows: list[QueryRow], base: RunResult, new: RunResult) -> Diff:
    up = down = same = top10_changed = 0
    lost_first: list[Lost] = []
    lost_top10: list[Lost] = []
    gained_first: list[Gained] = []
    gained_top10: list[Gained] = []
    newly_errored: list[Errored] = []
    base_ranks, new_ranks = [], []
    moves = dict.fromkeys(["found", *(name for name, _, _ in MOVE_BUCKETS), "lost"], 0)
    for row, b, n in zip(rows, base.results, new.results, strict=True):
        if [h.name for h in b.top] != [h.name for h in n.top]:
            top10_changed += 1
        if n.error and not b.error:
            newly_errored.append(
                Errored(
                    row.repo,
                    row.query,
                    row.type,
                    row.source,
                    b.rank,
                    n.rank,
                    _first(n),
                    error=n.error,
                )
            )
        if not row.sourced:
            continue
        base_ranks.append(b.rank)
        new_ranks.append(n.rank)
        moves[move_bucket(b.rank, n.rank)] += 1
        if better(n.rank, b.rank):
            up += 1
        elif better(b.rank, n.rank):
            down += 1
        else:
            same += 1
        if b.rank == 1 and n.rank != 1:
            lost_first.append(_lost(row, b, n))
        if _in_top10(b.rank) and not _in_top10(n.rank):
            lost_top10.append(_lost(row, b, n))
        if n.rank == 1 and b.rank != 1:
            gained_first.append(_gained(row, b, n))
        if _in_top10(n.rank) and not _in_top10(b.rank):
            gained_top10.append(_gained(row, b, n))
    return Diff(
        base=base.label, new=new.label, up=up, down=down, same=same,
        top10_changed=top10_changed, moves=moves, lost_first=tuple(lost_first),
        lost_top10=tuple(lost_top10), new_errors=tuple(newly_errored),
        significance=compare(base_ranks, new_ranks), candidate_errors=new.errors,
        gained_first=tuple(gained_first), gained_top10=tuple(gained_top10),
    )  # fmt: skip


def misses(rows: list[QueryRow], run: RunResult) -> tuple[Miss, ...]:
    return tuple(
        Miss(row.repo, row.query, row.type, row.source, res.rank, _first(res))
        for row, res in zip(rows, run.results, strict=True)
        if row.sourced and res.rank != 1
    )


NO_UNKNOWN_SOURCES = UnknownSources()


def against_ceiling(
    bound: CeilingSummary, rows: list[QueryRow], runs: list[RunResult], pins: dict[str, Pin]
) -> CeilingSummary:
    """The ceiling with every finder's #1 and top 10 on exactly its rows (the sourced rows
    it does not leave out), overall and per group, each flagged when above the ceiling's
    95% range: a count that chance gives no finder more than 2.5% of the time under the
    recipes' choice model, so that model is wrong there."""
    modelled = [
        i for i, row in enumerate(rows)
        if row.sourced and (row.repo, row.query, row.type, row.source) not in bound.unmodelled
    ]  # fmt: skip
    axes: dict[str, Callable[[QueryRow], str]] = {
        "all": lambda r: "all", "type": lambda r: r.type, "repo": lambda r: r.repo,
        "language": lambda r: pins[r.repo].language,
    }  # fmt: skip

    def tally(run: RunResult, axis: str) -> dict[str, tuple[int, int]]:
        hits: dict[str, list[int]] = {}
        for i in modelled:
            rank = run.results[i].rank
            cell = hits.setdefault(axes[axis](rows[i]), [0, 0])
            cell[0] += rank == 1
            cell[1] += _in_top10(rank)
        return {key: (first, top10) for key, (first, top10) in hits.items()}

    tallies = [{axis: tally(run, axis) for axis in axes} for run in runs]

    def judged(cell: CeilingCounts, axis: str, key: str) -> CeilingCounts:
        finders = []
        for run, tallied in zip(runs, tallies, strict=True):
            first, top10 = tallied[axis].get(key, (0, 0))
            finders.append(AgainstCeiling(
                run.label, first, top10,
                first_above=cell.n > 0 and first > cell.first_ci[1],
                top10_above=cell.n > 0 and top10 > cell.top10_ci[1],
            ))  # fmt: skip
        return dataclasses.replace(cell, finders=tuple(finders))

    def of(axis: str, by: dict[str, CeilingCounts]) -> dict[str, CeilingCounts]:
        return {key: judged(cell, axis, key) for key, cell in by.items()}

    return dataclasses.replace(
        bound,
        counts=judged(bound.counts, "all", "all"),
        by_type=of("type", bound.by_type),
        by_repo=of("repo", bound.by_repo),
        by_language=of("language", bound.by_language),
    )


def analyse(
    meta: Meta, pins: dict[str, Pin], rows: list[QueryRow], runs: list[RunResult], *,
    baseline: bool, cases: list[Case], case_results: list[tuple[QueryResult, ...]],
    regress: RegressSection | None, accepted: list[Key] | None,
    explain_flags: list[str | None], ceiling: CeilingSummary,
    bench: BenchSummary | None = None, show_misses: bool = False,
    unknown_sources: UnknownSources = NO_UNKNOWN_SOURCES, split: Split | None = None,
) -> Report:  # fmt: skip
    """The report over `runs` in the order given. With a baseline (the first run) each
    later run is diffed against it: its regress cases that broke, its losses with the
    accepted ones set apart, and `explain_flags[i]` for the i-th diff's explain lines.
    `case_results[i]` are runs[i]'s answers to the regress cases."""
    located = [
        has_locations((*run.results, *answers))
        for run, answers in zip(runs, case_results, strict=True)
    ]
    judged = [
        summarize_regress(cases, list(answers), where) if regress else None
        for answers, where in zip(case_results, located, strict=True)
    ]
    summaries = tuple(
        summarize(run, rows, pins, verdicts) for run, verdicts in zip(runs, judged, strict=True)
    )
    diffs: list[Diff] = []
    if baseline:
        later = zip(runs[1:], case_results[1:], located[1:], explain_flags, strict=True)
        for run, answers, where, flags in later:
            d = diff(rows, runs[0], run)
            if cases:
                lost = broken(
                    cases, list(case_results[0]), list(answers),
                    base_located=located[0], new_located=where,
                )  # fmt: skip
                d = dataclasses.replace(d, regress_broken=lost)
            if accepted is not None:
                d = apply_accepted(d, accepted)
            diffs.append(dataclasses.replace(d, explain_flags=flags))
    return Report(
        meta=meta,
        corpus={
            name: CorpusPin(pin.url, pin.sha, pin.language, pin.split) for name, pin in pins.items()
        },
        queries=len(rows),
        sourced=sum(1 for r in rows if r.sourced),
        runs=summaries,
        ceiling=against_ceiling(ceiling, rows, runs, pins),
        diffs=tuple(diffs),
        regress=regress,
        bench=bench,
        misses=misses(rows, runs[-1]) if show_misses else None,
        unknown_sources=unknown_sources,
        split=split,
        holdout=holdout(rows, runs, pins) if split == HOLDOUT else None,
    )


def holdout(rows: list[QueryRow], runs: list[RunResult], pins: dict[str, Pin]) -> Holdout:
    """The corpora of each view of the holdout among the rows, and on each the first
    run's margin over the best of the others."""

    def view(side: str) -> HoldoutView:
        corpora = tuple(name for name, pin in pins.items() if pin.split == side)
        picked = [i for i, row in enumerate(rows) if row.sourced and row.repo in corpora]
        present = tuple(name for name in corpora if any(rows[i].repo == name for i in picked))
        return HoldoutView(present, len(picked), margin(picked, runs))

    return Holdout(fresh=view(HOLDOUT), seen=view(SEEN))


def margin(picked: list[int], runs: list[RunResult]) -> Margin | None:
    """The first run's #1 on the picked rows against the best other run's (the first of
    them on a tie), paired by row; None with one run or no row."""
    if len(runs) < 2 or not picked:
        return None
    firsts = [[run.results[i].rank == 1 for i in picked] for run in runs]
    best = max(range(1, len(runs)), key=lambda k: (sum(firsts[k]), -k))
    n = len(picked)
    first_pct, other_pct = 100.0 * sum(firsts[0]) / n, 100.0 * sum(firsts[best]) / n
    return Margin(
        label=runs[0].label, other=runs[best].label, n=n, first_pct=round(first_pct, 1),
        other_pct=round(other_pct, 1), points=round(first_pct - other_pct, 1),
        se=round(paired_se(firsts[0], firsts[best]), 1),
    )  # fmt: skip
