"""The plain values of results and reports: a query's hits and result, a run's results,
and the report made of them.

They sit apart from the code that makes them (measure, report) and hold no I/O, so that
the stages that only read them (the results cache, merge, regress, render) import no
process, session, engine or git code.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall.analysis.effort import Effort
from recall.analysis.judgments import Judged
from recall.analysis.stats import ALPHA, Significance

TOP = 10  # the hits kept of each answer: enough for top-10 and for the report's examples


@dataclass(frozen=True)
class Hit:
    name: str
    file: str | None
    line: int | None


@dataclass(frozen=True)
class QueryResult:
    rank: int | None
    top: tuple[Hit, ...]
    error: str | None = None
    off_corpus: bool = False  # rows listed, none a name of the corpus (recall/finders/protocol.py)


@dataclass(frozen=True)
class RunResult:
    label: str
    bin: str
    index_s: float
    query_s: float
    results: tuple[QueryResult, ...]
    cached: bool = False  # read from the results cache or a saved run, not run now
    dirtied: tuple[str, ...] = ()  # corpora whose checkout this binary wrote into
    restarts: int = 0  # batch processes started again after one died or timed out

    @property
    def errors(self) -> int:
        return sum(1 for r in self.results if r.error)


# The report (schema 2, docs/report-json.md) ---------------------------------------------
#
# Each class is one part of the JSON report, and its to_json() gives that part's object.
# Where a part does not apply inside a section (no --accept, no regress cases), its key is
# present and null; a whole section that was not asked for (diff, bench, regress, misses)
# is absent from the top level.

SCHEMA = 2


@dataclass(frozen=True)
class Counts:
    """How a set of sourced rows ranked: counts, their percent of n, MRR and nDCG@10."""

    n: int
    first: int
    top10: int
    found: int
    errors: int
    first_pct: float
    top10_pct: float
    found_pct: float
    mrr: float
    ndcg10: float

    def to_json(self) -> dict:
        return {
            "n": self.n, "first": self.first, "top10": self.top10, "found": self.found,
            "errors": self.errors, "first_pct": self.first_pct, "top10_pct": self.top10_pct,
            "found_pct": self.found_pct, "mrr": self.mrr, "ndcg10": self.ndcg10,
        }  # fmt: skip


@dataclass(frozen=True)
class ErrorRow:
    repo: str
    query: str
    type: str
    error: str

    def to_json(self) -> dict:
        return {"repo": self.repo, "query": self.query, "type": self.type, "error": self.error}


@dataclass(frozen=True)
class OffCorpusRow:
    """A row whose answer named nothing in the corpus, with the first name it listed."""

    repo: str
    query: str
    type: str
    answer: str

    def to_json(self) -> dict:
        return {"repo": self.repo, "query": self.query, "type": self.type, "answer": self.answer}


@dataclass(frozen=True)
class FailingCase:
    """A regress case that fails, with what came first instead (`file:line name`)."""

    repo: str
    query: str
    expect: str
    first: str | None

    def to_json(self) -> dict:
        return {"repo": self.repo, "query": self.query, "expect": self.expect, "first": self.first}


@dataclass(frozen=True)
class RegressSummary:
    """One binary's verdicts on the regress cases."""

    cases: int
    holds: int
    fails: int
    not_applicable: int
    failing: tuple[FailingCase, ...]
    no_locations: bool = False  # the finder prints no file:line at all: every case n/a

    def to_json(self) -> dict:
        return {
            "cases": self.cases, "holds": self.holds, "fails": self.fails,
            "not_applicable": self.not_applicable,
            "failing": [case.to_json() for case in self.failing],
            "no_locations": self.no_locations,
        }  # fmt: skip


@dataclass(frozen=True)
class RegressSection:
    """Which regress file ran, how many of its cases, and how many it skipped (cases of
    repos the corpus does not pin)."""

    file: str
    cases: int
    skipped: int

    def to_json(self) -> dict:
        return {"file": self.file, "cases": self.cases, "skipped": self.skipped}


def _grouped_json(groups: dict[str, Counts]) -> dict:
    return {key: counts.to_json() for key, counts in groups.items()}


@dataclass(frozen=True)
class RunSummary:
    """One binary's numbers; its counts sit at the top of its JSON object, beside the
    groups, as schema 1 had them."""

    label: str
    bin: str
    index_s: float
    query_s: float
    cached: bool
    counts: Counts
    by_type: dict[str, Counts]
    by_repo: dict[str, Counts]
    by_language: dict[str, Counts]
    error_rows: tuple[ErrorRow, ...]
    dirtied: tuple[str, ...]
    regress: RegressSummary | None
    off_corpus: int = 0  # answers that named nothing in the corpus (recall/finders/protocol.py)
    off_corpus_first: tuple[OffCorpusRow, ...] = ()  # the first OFF_CORPUS_SHOWN of them
    restarts: int = 0  # batch processes started again after one died or timed out

    def to_json(self) -> dict:
        return {
            "label": self.label, "bin": self.bin, "index_s": self.index_s,
            "query_s": self.query_s, "cached": self.cached, **self.counts.to_json(),
            "by_type": _grouped_json(self.by_type), "by_repo": _grouped_json(self.by_repo),
            "by_language": _grouped_json(self.by_language),
            "error_rows": [row.to_json() for row in self.error_rows],
            "off_corpus": self.off_corpus,
            "off_corpus_first": [row.to_json() for row in self.off_corpus_first],
            "dirtied": list(self.dirtied),
            "restarts": self.restarts,
            "regress": self.regress.to_json() if self.regress else None,
        }  # fmt: skip


@dataclass(frozen=True)
class Change:
    """A sourced row whose rank differs between the baseline and a candidate."""

    repo: str
    query: str
    type: str
    source: str
    base_rank: int | None
    new_rank: int | None
    new_first: str | None  # the name the candidate puts first now

    def to_json(self) -> dict:
        return {
            "repo": self.repo, "query": self.query, "type": self.type, "source": self.source,
            "base_rank": self.base_rank, "new_rank": self.new_rank, "new_first": self.new_first,
        }  # fmt: skip


@dataclass(frozen=True)
class Lost(Change):
    """A source that lost #1 or the top 10, with where the baseline's hit defined it."""

    source_file: str | None = None
    source_line: int | None = None

    def to_json(self) -> dict:
        return super().to_json() | {
            "source_file": self.source_file,
            "source_line": self.source_line,
        }


@dataclass(frozen=True)
class Gained(Lost):
    """A source that gained #1 or entered the top 10: the lost row's mirror, its location
    from the candidate's hit that named it."""


@dataclass(frozen=True)
class Errored(Change):
    """A query the baseline answered and the candidate errored on."""

    error: str = ""

    def to_json(self) -> dict:
        return super().to_json() | {"error": self.error}


@dataclass(frozen=True)
class Stale:
    """An accepted loss that is no longer lost."""

    repo: str
    query: str
    source: str

    def to_json(self) -> dict:
        return {"repo": self.repo, "query": self.query, "source": self.source}


@dataclass(frozen=True)
class Diff:
    """A candidate against the baseline. `accepted` and `stale_accepted` are None without
    --accept, `regress_broken` without regress cases, `explain_flags` when a side is a
    saved run that `recall explain` cannot run again."""

    base: str
    new: str
    up: int
    down: int
    same: int
    top10_changed: int
    moves: dict[str, int]
    lost_first: tuple[Lost, ...]
    lost_top10: tuple[Lost, ...]
    new_errors: tuple[Errored, ...]
    significance: Significance
    candidate_errors: int
    accepted: tuple[Lost, ...] | None = None
    stale_accepted: tuple[Stale, ...] | None = None
    regress_broken: tuple[FailingCase, ...] | None = None
    explain_flags: str | None = None
    gained_first: tuple[Gained, ...] = ()
    gained_top10: tuple[Gained, ...] = ()

    @property
    def is_loss(self) -> bool:
        """Lost #1 or top 10 (not accepted), a broken regress case, or any query that
        errored: what --fail-on-loss fails on."""
        return bool(
            self.lost_first or self.lost_top10 or self.regress_broken or self.candidate_errors
        )

    def to_json(self) -> dict:
        def rows(items: tuple[Lost, ...] | tuple[Stale, ...] | None) -> list | None:
            return None if items is None else [item.to_json() for item in items]

        return {
            "base": self.base, "new": self.new, "up": self.up, "down": self.down,
            "same": self.same, "top10_changed": self.top10_changed, "moves": dict(self.moves),
            "lost_first": rows(self.lost_first), "lost_top10": rows(self.lost_top10),
            "new_errors": [row.to_json() for row in self.new_errors],
            "significance": self.significance.as_json()
            | {"summary": self.significance.summary()},
            "candidate_errors": self.candidate_errors,
            "accepted": rows(self.accepted), "stale_accepted": rows(self.stale_accepted),
            "regress_broken": None
            if self.regress_broken is None
            else [case.to_json() for case in self.regress_broken],
            "explain_flags": self.explain_flags,
            "gained_first": rows(self.gained_first), "gained_top10": rows(self.gained_top10),
            "verdict": self.verdict_json(),
        }  # fmt: skip

    def verdict_json(self) -> dict:
        """Improved, regressed or no significant change on #1 and on the top 10, and the
        test that decides it (stats.Verdict)."""
        sig = self.significance
        return {
            "first": sig.first.as_json(), "top10": sig.top10.as_json(),
            "test": "mcnemar_exact", "alpha": ALPHA, "summary": sig.verdict_line(),
        }  # fmt: skip


@dataclass(frozen=True)
class AgainstCeiling:
    """One finder on exactly the rows a ceiling covers: its #1 and top 10 there, and
    whether each is above the ceiling's 95% range (more than chance lets any finder get
    under the recipes' choice model: the model is wrong for those rows, or the finder's
    order suits this one sample)."""

    label: str
    first: int
    top10: int
    first_above: bool
    top10_above: bool

    def to_json(self) -> dict:
        return {
            "label": self.label, "first": self.first, "top10": self.top10,
            "first_above": self.first_above, "top10_above": self.top10_above,
        }  # fmt: skip


@dataclass(frozen=True)
class CeilingCounts:
    """The best #1 and top 10 any finder can expect over n rows: sums of chances, with the
    standard error of each count and its 95% range ([low, high] counts: docs/queries.md),
    and each finder's counts on the same rows (filled in by `report.analyse`)."""

    n: int
    first: float
    top10: float
    first_pct: float
    top10_pct: float
    first_se: float = 0.0
    top10_se: float = 0.0
    first_ci: tuple[int, int] = (0, 0)
    top10_ci: tuple[int, int] = (0, 0)
    finders: tuple[AgainstCeiling, ...] = ()

    def to_json(self) -> dict:
        return {
            "n": self.n, "first": self.first, "top10": self.top10,
            "first_pct": self.first_pct, "top10_pct": self.top10_pct,
            "first_se": self.first_se, "top10_se": self.top10_se,
            "first_ci": list(self.first_ci), "top10_ci": list(self.top10_ci),
            "finders": [f.to_json() for f in self.finders],
        }  # fmt: skip

    def against(self, label: str) -> AgainstCeiling | None:
        return next((f for f in self.finders if f.label == label), None)


@dataclass(frozen=True)
class LeftOut:
    """A sourced row the recipes cannot make (its type has no recipe, or no name, or not
    its own source, yields its query): no ceiling, and left out of both sides of it."""

    repo: str
    query: str
    type: str
    source: str

    def to_json(self) -> dict:
        return {"repo": self.repo, "query": self.query, "type": self.type, "source": self.source}


# The left-out rows a report names; JSON and HTML have the same few.
LEFT_OUT_SHOWN = 10


@dataclass(frozen=True)
class CeilingSummary:
    """The ceiling overall (its counts at the top of its object) and by type, repo and
    language, over the rows that have one; `left_out` are the sourced rows that have none."""

    counts: CeilingCounts
    by_type: dict[str, CeilingCounts]
    by_repo: dict[str, CeilingCounts]
    by_language: dict[str, CeilingCounts]
    left_out: tuple[LeftOut, ...] = ()

    def to_json(self) -> dict:
        def of(groups: dict[str, CeilingCounts]) -> dict:
            return {key: c.to_json() for key, c in groups.items()}

        return self.counts.to_json() | {
            "by_type": of(self.by_type),
            "by_repo": of(self.by_repo),
            "by_language": of(self.by_language),
            "left_out": {
                "count": len(self.left_out),
                "first": [row.to_json() for row in self.left_out[:LEFT_OUT_SHOWN]],
            },
        }


@dataclass(frozen=True)
class MedianP90:
    median: float
    p90: float

    def to_json(self) -> dict:
        return {"median": self.median, "p90": self.p90}


@dataclass(frozen=True)
class BenchRun:
    """One binary's latency: wall time and each phase its profile reports, in ms."""

    label: str
    wall_ms: MedianP90
    phases: dict[str, MedianP90]
    spread: float
    errors: int

    def to_json(self) -> dict:
        return {
            "label": self.label, "wall_ms": self.wall_ms.to_json(),
            "phases": {name: phase.to_json() for name, phase in self.phases.items()},
            "spread": self.spread, "errors": self.errors,
        }  # fmt: skip


@dataclass(frozen=True)
class BenchRatio:
    """new / base of the per-query medians: the median, and p10 and p90 as its spread."""

    base: str
    new: str
    median: float
    p10: float
    p90: float

    def to_json(self) -> dict:
        return {"base": self.base, "new": self.new, "median": self.median, "p10": self.p10,
                "p90": self.p90}  # fmt: skip


# Above this median relative spread of a query's reps, (p75 - p25) / median, the machine
# was too noisy for differences of a few percent to mean anything: `noisy` below.
NOISE_SPREAD = 0.25


@dataclass(frozen=True)
class BenchSummary:
    reps: int
    queries: int
    noisy: bool
    runs: tuple[BenchRun, ...]
    ratios: tuple[BenchRatio, ...]  # each binary after the first against the first

    def to_json(self) -> dict:
        return {
            "reps": self.reps, "queries": self.queries, "noisy": self.noisy,
            "runs": [run.to_json() for run in self.runs],
            "ratios": [r.to_json() for r in self.ratios],
        }  # fmt: skip


@dataclass(frozen=True)
class Miss:
    """A sourced query whose source is not #1, and the name that is."""

    repo: str
    query: str
    type: str
    source: str
    rank: int | None
    first: str | None

    def to_json(self) -> dict:
        return {
            "repo": self.repo, "query": self.query, "type": self.type, "source": self.source,
            "rank": self.rank, "first": self.first,
        }  # fmt: skip


# The rows of unknown sources a report lists by name; JSON and HTML have the same few.
UNKNOWN_SHOWN = 10


@dataclass(frozen=True)
class UnknownSource:
    """A row of a foreign query file whose source is not a name of its corpus at its pin:
    it counts as not found for every finder and for the ceiling."""

    repo: str
    query: str
    type: str
    source: str
    line: int  # in the query file (line 1 is the header)

    def to_json(self) -> dict:
        return {"repo": self.repo, "query": self.query, "type": self.type,
                "source": self.source, "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class UnknownSources:
    """How many such rows ran, and the first UNKNOWN_SHOWN of them in file order."""

    count: int = 0
    first: tuple[UnknownSource, ...] = ()

    def to_json(self) -> dict:
        return {"count": self.count, "first": [row.to_json() for row in self.first]}


@dataclass(frozen=True)
class Margin:
    """The first finder's #1 against the best of the others (by #1) on the same rows, in
    points, with the standard error of the difference paired by row (stats.paired_se)."""

    label: str
    other: str
    n: int
    first_pct: float
    other_pct: float
    points: float
    se: float

    def to_json(self) -> dict:
        return {
            "label": self.label, "other": self.other, "n": self.n, "first_pct": self.first_pct,
            "other_pct": self.other_pct, "points": self.points, "se": self.se,
        }  # fmt: skip


@dataclass(frozen=True)
class HoldoutView:
    """One view of the holdout a --split holdout report ran: its corpora (whole, as the
    pins' sides say: docs/queries.md), their sourced rows, and the margin (None with one
    finder, or no sourced row)."""

    corpora: tuple[str, ...]
    n: int
    margin: Margin | None

    def to_json(self) -> dict:
        return {
            "corpora": list(self.corpora), "n": self.n,
            "margin": self.margin.to_json() if self.margin else None,
        }  # fmt: skip


@dataclass(frozen=True)
class Holdout:
    """The holdout's two views: the fresh corpora, which no tuning has read, and the seen
    ones, held out but read while tuning; each apart, since only the fresh one says what
    a finder does on code no one has seen."""

    fresh: HoldoutView
    seen: HoldoutView

    def to_json(self) -> dict:
        return {"fresh": self.fresh.to_json(), "seen": self.seen.to_json()}


@dataclass(frozen=True)
class Report:
    """Everything a run reports. `diffs` holds each candidate's diff against the baseline
    (empty without one); the JSON's `diff` is the first of them, as the contract names it."""

    meta: dict
    corpus: dict[str, dict]
    queries: int
    sourced: int
    runs: tuple[RunSummary, ...]
    ceiling: CeilingSummary
    diffs: tuple[Diff, ...] = ()
    regress: RegressSection | None = None
    bench: BenchSummary | None = None
    misses: tuple[Miss, ...] | None = None  # with --misses: the last binary's
    unknown_sources: UnknownSources = UnknownSources()
    split: str | None = None  # --split: the side of the tune/holdout split shown; None: all
    effort: Effort | None = (
        None  # a typing set's keystrokes to the name (recall/analysis/effort.py)
    )
    judgments: Judged | None = None  # a judgments set's agreement (recall/analysis/judgments.py)
    holdout: Holdout | None = None  # --split holdout: its corpora and margins

    @property
    def is_loss(self) -> bool:
        """What --fail-on-loss fails on: any diff's loss (Diff.is_loss), for a typing set
        any sequence's (EffortDiff.is_loss), for a judgments set any judgment's
        (JudgedDiff.is_loss)."""
        efforts = self.effort.diffs if self.effort else ()
        judged = self.judgments.diffs if self.judgments else ()
        return (
            any(d.is_loss for d in self.diffs)
            or any(d.is_loss for d in efforts)
            or any(d.is_loss for d in judged)
        )

    def to_json(self) -> dict:
        out: dict = {
            "schema": SCHEMA,
            "meta": self.meta,
            "corpus": self.corpus,
            "queries": self.queries,
            "sourced": self.sourced,
            "runs": [run.to_json() for run in self.runs],
            "ceiling": self.ceiling.to_json(),
            "unknown_sources": self.unknown_sources.to_json(),
            "split": self.split,
        }
        if self.diffs:
            out["diff"] = self.diffs[0].to_json()
            out["diffs"] = [d.to_json() for d in self.diffs]
        if self.regress is not None:
            out["regress"] = self.regress.to_json()
        if self.bench is not None:
            out["bench"] = self.bench.to_json()
        if self.misses is not None:
            out["misses"] = [m.to_json() for m in self.misses]
        if self.effort is not None:
            out["effort"] = self.effort.to_json()
        if self.judgments is not None:
            out["judgments"] = self.judgments.to_json()
        if self.holdout is not None:
            out["holdout"] = self.holdout.to_json()
        return out
