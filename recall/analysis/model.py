"""The plain values of results and reports: a query's hits and result, a run's results,
and the report made of them.

They sit apart from the code that makes them (measure, report) and hold no I/O, so that
the stages that only read them (the results cache, merge, regress, render) import no
process, session, engine or git code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from recall.analysis.codec import Coded, Pattern, decode
from recall.analysis.effort import Effort
from recall.analysis.judgments import Judged
from recall.analysis.stats import McNemar, Significance, Verdict, verdict_line
from recall.errors import RecallError
from recall.inputs.sides import TUNE, Side, Split

TOP = 10  # the hits kept of each answer: enough for top-10 and for the report's examples
Sha256 = Annotated[str, Pattern("[0-9a-f]{64}", "a SHA-256")]  # a file's digest, in hex
CommitSha = Annotated[str, Pattern("[0-9a-f]{40}", "a commit's full sha")]


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
# Each class is one part of the JSON report, and the codec (codec.py) gives that part's
# object from its fields.
# Where a part does not apply inside a section (no --accept, no regress cases), its key is
# present and null; a whole section that was not asked for (diff, bench, regress, misses)
# is absent from the top level.

SCHEMA = 2


@dataclass(frozen=True)
class Counts(Coded):
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


@dataclass(frozen=True)
class ErrorRow(Coded):
    repo: str
    query: str
    type: str
    error: str


@dataclass(frozen=True)
class OffCorpusRow(Coded):
    """A row whose answer named nothing in the corpus, with the first name it listed."""

    repo: str
    query: str
    type: str
    answer: str


@dataclass(frozen=True)
class FailingCase(Coded):
    """A regress case that fails, with what came first instead (`file:line name`)."""

    repo: str
    query: str
    expect: str
    first: str | None


@dataclass(frozen=True)
class RegressSummary(Coded):
    """One binary's verdicts on the regress cases."""

    cases: int
    holds: int
    fails: int
    not_applicable: int
    failing: tuple[FailingCase, ...]
    no_locations: bool = False  # the finder prints no file:line at all: every case n/a


@dataclass(frozen=True)
class RegressSection(Coded):
    """Which regress file ran, how many of its cases, and how many it skipped (cases of
    repos the corpus does not pin)."""

    file: str
    cases: int
    skipped: int


@dataclass(frozen=True)
class RunSummary(Coded):
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

    JSON_KEYS = (
        "label", "bin", "index_s", "query_s", "cached", "counts", "by_type", "by_repo",
        "by_language", "error_rows", "off_corpus", "off_corpus_first", "dirtied", "restarts",
        "regress",
    )  # fmt: skip
    JSON_FLAT = frozenset({"counts"})


@dataclass(frozen=True)
class Change(Coded):
    """A sourced row whose rank differs between the baseline and a candidate."""

    repo: str
    query: str
    type: str
    source: str
    base_rank: int | None
    new_rank: int | None
    new_first: str | None  # the name the candidate puts first now


@dataclass(frozen=True)
class Lost(Change):
    """A source that lost #1 or the top 10, with where the baseline's hit defined it."""

    source_file: str | None = None
    source_line: int | None = None


@dataclass(frozen=True)
class Gained(Lost):
    """A source that gained #1 or entered the top 10: the lost row's mirror, its location
    from the candidate's hit that named it."""


@dataclass(frozen=True)
class Errored(Change):
    """A query the baseline answered and the candidate errored on."""

    error: str = ""


@dataclass(frozen=True)
class Stale(Coded):
    """An accepted loss that is no longer lost."""

    repo: str
    query: str
    source: str


@dataclass(frozen=True)
class Diff(Coded):
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

    JSON_KEYS = (
        "base", "new", "up", "down", "same", "top10_changed", "moves", "lost_first",
        "lost_top10", "new_errors", "significance", "candidate_errors", "accepted",
        "stale_accepted", "regress_broken", "explain_flags", "gained_first", "gained_top10",
        "verdict",
    )  # fmt: skip

    @property
    def verdict(self) -> DiffVerdict:
        return DiffVerdict(self.significance.first, self.significance.top10)


@dataclass(frozen=True)
class DiffVerdict(McNemar):
    """Improved, regressed or no significant change on #1 and on the top 10, and the
    test that decides it (stats.Verdict): the diff's `verdict`, written, not read back."""

    first: Verdict
    top10: Verdict

    JSON_KEYS = ("first", "top10", "test", "alpha", "summary")

    @property
    def summary(self) -> str:
        return verdict_line("verdict", (self.first, "#1"), (self.top10, "top 10"))


@dataclass(frozen=True)
class AgainstCeiling(Coded):
    """One finder on exactly the rows a ceiling covers: its #1 and top 10 there, and
    whether each is above the ceiling's 95% range (more than chance lets any finder get
    under the recipes' choice model: the model is wrong for those rows, or the finder's
    order suits this one sample)."""

    label: str
    first: int
    top10: int
    first_above: bool
    top10_above: bool


@dataclass(frozen=True)
class CeilingCounts(Coded):
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

    def against(self, label: str) -> AgainstCeiling | None:
        return next((f for f in self.finders if f.label == label), None)


@dataclass(frozen=True)
class LeftOut(Coded):
    """A sourced row the recipes cannot make (its type has no recipe, or no name, or not
    its own source, yields its query): no ceiling, and left out of both sides of it."""

    repo: str
    query: str
    type: str
    source: str


# The left-out rows a report names; JSON and HTML have the same few.
LEFT_OUT_SHOWN = 10


@dataclass(frozen=True)
class LeftOutRows(Coded):
    """How many sourced rows the ceiling leaves out, and the first LEFT_OUT_SHOWN of them."""

    count: int = 0
    first: tuple[LeftOut, ...] = ()


@dataclass(frozen=True)
class CeilingSummary(Coded):
    """The ceiling overall (its counts at the top of its object) and by type, repo and
    language, over the rows that have one; `left_out` are the sourced rows that have none."""

    counts: CeilingCounts
    by_type: dict[str, CeilingCounts]
    by_repo: dict[str, CeilingCounts]
    by_language: dict[str, CeilingCounts]
    left_out: LeftOutRows = LeftOutRows()
    # the keys (repo, query, type, source) of every left-out row: what the finders are
    # compared with the ceiling without (report.against_ceiling); not in the JSON
    unmodelled: frozenset[tuple[str, str, str, str]] = frozenset()

    JSON_KEYS = ("counts", "by_type", "by_repo", "by_language", "left_out")
    JSON_FLAT = frozenset({"counts"})


@dataclass(frozen=True)
class MedianP90(Coded):
    median: float
    p90: float


@dataclass(frozen=True)
class BenchRun(Coded):
    """One binary's latency: wall time and each phase its profile reports, in ms."""

    label: str
    wall_ms: MedianP90
    phases: dict[str, MedianP90]
    spread: float
    errors: int


@dataclass(frozen=True)
class BenchRatio(Coded):
    """new / base of the per-query medians: the median, and p10 and p90 as its spread."""

    base: str
    new: str
    median: float
    p10: float
    p90: float


# Above this median relative spread of a query's reps, (p75 - p25) / median, the machine
# was too noisy for differences of a few percent to mean anything: `noisy` below.
NOISE_SPREAD = 0.25


@dataclass(frozen=True)
class BenchSummary(Coded):
    reps: int
    queries: int
    noisy: bool
    runs: tuple[BenchRun, ...]
    ratios: tuple[BenchRatio, ...]  # each binary after the first against the first


@dataclass(frozen=True)
class Miss(Coded):
    """A sourced query whose source is not #1, and the name that is."""

    repo: str
    query: str
    type: str
    source: str
    rank: int | None
    first: str | None


# The rows of unknown sources a report lists by name; JSON and HTML have the same few.
UNKNOWN_SHOWN = 10


@dataclass(frozen=True)
class UnknownSource(Coded):
    """A row of a foreign query file whose source is not a name of its corpus at its pin:
    it counts as not found for every finder and for the ceiling."""

    repo: str
    query: str
    type: str
    source: str
    line: int  # in the query file (line 1 is the header)


@dataclass(frozen=True)
class UnknownSources(Coded):
    """How many such rows ran, and the first UNKNOWN_SHOWN of them in file order."""

    count: int = 0
    first: tuple[UnknownSource, ...] = ()


@dataclass(frozen=True)
class Margin(Coded):
    """The first finder's #1 against the best of the others (by #1) on the same rows, in
    points, with the standard error of the difference paired by row (stats.paired_se)."""

    label: str
    other: str
    n: int
    first_pct: float
    other_pct: float
    points: float
    se: float


@dataclass(frozen=True)
class HoldoutView(Coded):
    """One view of the holdout a --split holdout report ran: its corpora (whole, as the
    pins' sides say: docs/queries.md), their sourced rows, and the margin (None with one
    finder, or no sourced row)."""

    corpora: tuple[str, ...]
    n: int
    margin: Margin | None


@dataclass(frozen=True)
class Holdout(Coded):
    """The holdout's two views: the fresh corpora, which no tuning has read, and the seen
    ones, held out but read while tuning; each apart, since only the fresh one says what
    a finder does on code no one has seen."""

    fresh: HoldoutView
    seen: HoldoutView


@dataclass(frozen=True)
class EngineMeta(Coded):
    """The finder's engine: where its description came from (a preset, a recall.toml) and
    the SHA-256 of what it says."""

    source: str
    sha256: Sha256


@dataclass(frozen=True)
class Meta(Coded):
    """What ran: recall, Python, git and ctags versions, the engine and the digests of the
    corpus and query files, and the recall.toml read (null: none; a report that lacks the
    key reads as none)."""

    recall: str
    python: str
    git: str
    ctags: str
    engine: EngineMeta
    corpus_sha256: Sha256
    queries_sha256: Sha256
    config: str | None = None


@dataclass(frozen=True)
class CorpusPin(Coded):
    """A corpus as corpus.json pins it; split: its side of the tune/holdout split (holdout:
    fresh; seen: held out, read while tuning; a pin that lacks the key is on tune, as in
    corpus.json)."""

    url: str
    sha: CommitSha
    language: str
    split: Side = TUNE


@dataclass(frozen=True)
class Report(Coded):
    """Everything a run reports. `diffs` holds each candidate's diff against the baseline
    (empty without one); the JSON's `diff` is the first of them, as the contract names it."""

    meta: Meta
    corpus: dict[str, CorpusPin]  # by the pin's name
    queries: int
    sourced: int
    runs: tuple[RunSummary, ...]
    ceiling: CeilingSummary
    diffs: tuple[Diff, ...] = ()
    regress: RegressSection | None = None
    bench: BenchSummary | None = None
    misses: tuple[Miss, ...] | None = None  # with --misses: the last binary's
    unknown_sources: UnknownSources = UnknownSources()
    split: Split | None = None  # --split: the side of the tune/holdout split shown; None: all
    effort: Effort | None = (
        None  # a typing set's keystrokes to the name (recall/analysis/effort.py)
    )
    judgments: Judged | None = None  # a judgments set's agreement (recall/analysis/judgments.py)
    holdout: Holdout | None = None  # --split holdout: its corpora and margins

    JSON_KEYS = (
        "schema", "meta", "corpus", "queries", "sourced", "runs", "ceiling", "unknown_sources",
        "split", "diff", "diffs", "regress", "bench", "misses", "effort", "judgments",
        "holdout",
    )  # fmt: skip
    # absent, not null: a section that was not asked for (the diff's with no baseline)
    JSON_OMIT = dict.fromkeys(
        ("diff", "regress", "bench", "misses", "effort", "judgments", "holdout")
    ) | {"diffs": ()}
    schema = SCHEMA

    @property
    def diff(self) -> Diff | None:
        """The first candidate's diff, as the contract names it (`diffs` holds them all)."""
        return self.diffs[0] if self.diffs else None

    @classmethod
    def from_json(cls, data: object) -> Report:
        """A report as `recall --json` writes it (schema 2); RecallError on another."""
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema != SCHEMA:
            raise RecallError(f"report schema {schema!r}: this recall reads schema {SCHEMA}")
        return decode(cls, data)

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
