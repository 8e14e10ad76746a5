"""A judgments run's numbers: how often each finder agrees with the maintainers' judgments.

The judgments set (recall/inputs/judgments.py) says, for a query, which candidate must rank
above which. A finder answered each query over its own candidates (one row a candidate,
each ranked by the harness's one rank rule); here every pair gets its verdict from the two
ranks (docs/queries.md, "The judgments set", and SPEC.md, "Judgments and the holdout"):

- it agrees when `preferred` ranks strictly above `other`, an answer without `other`
  counting as above it;
- an answer without `preferred` disagrees, and where neither is found the pair is counted
  apart as well as in the total (a finder that matches neither says nothing of the order,
  but a person typing the query sees neither);
- a pair whose reverse (same domain and query) is also in the file is contested: two tests
  that contradict each other, reported apart and left out of agreement.

Agreement is a count and a percent of the pairs, with Wilson's 95% interval, overall, by
source project (owner/repo) and by domain; a diff lists the judgments lost and gained and
judges the change with McNemar's exact test on them, as a name diff's verdict on #1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from recall.analysis.codec import Coded
from recall.analysis.stats import (
    McNemar,
    Verdict,
    mcnemar_exact,
    spearman,
    spearman_interval,
    verdict_line,
    wilson,
)
from recall.inputs.judgments import Judgment, contested
from recall.inputs.queryset import QueryRow
from recall.inputs.sides import Split

Ranks = tuple[int | None, int | None]  # where preferred and other ranked (None: not found)
OUTCOME = "agreement"  # what a judgments diff's verdict is on


def agrees(ranks: Ranks) -> bool:
    """preferred strictly above other, an answer without other counting as above it."""
    preferred, other = ranks
    return preferred is not None and (other is None or preferred < other)


def neither(ranks: Ranks) -> bool:
    return ranks == (None, None)


@dataclass(frozen=True)
class Pair(Judgment, Coded):
    """A judgment as the report lists it: its row, its line in the file, and whether its
    reverse is in the file too."""

    contested: bool = False


@dataclass(frozen=True)
class Agreement(Coded):
    """Pairs judged (contested ones left out), those the finder agrees with, those where
    it found neither candidate, and the percent agreeing with its Wilson 95% interval."""

    n: int
    agree: int
    neither: int
    pct: float
    ci: tuple[float, float]


def agreement(verdicts: Iterable[Ranks]) -> Agreement:
    """The agreement over these pairs' ranks (contested pairs already left out)."""
    ranks = list(verdicts)
    n, agree = len(ranks), sum(1 for r in ranks if agrees(r))
    low, high = wilson(agree, n)
    return Agreement(
        n, agree, sum(1 for r in ranks if neither(r)),
        round(100.0 * agree / n, 1) if n else 0.0, (round(100 * low, 1), round(100 * high, 1)),
    )  # fmt: skip


@dataclass(frozen=True)
class JudgedRun(Coded):
    """One finder's verdicts: its agreement overall, by source project and by domain; the
    two ranks of every pair (in the order of Judged.pairs, contested ones too), how many
    contested pairs it orders as their row says, and how many queries errored."""

    label: str
    agreement: Agreement
    by_project: dict[str, Agreement]
    by_domain: dict[str, Agreement]
    ranks: tuple[Ranks, ...]
    contested_as_row: int
    errors: int

    JSON_FLAT = frozenset({"agreement"})


@dataclass(frozen=True)
class JudgmentChange(Coded):
    """A pair whose verdict differs between the baseline and a candidate, with the two
    ranks on each side."""

    pair: Pair
    base_preferred: int | None
    base_other: int | None
    new_preferred: int | None
    new_other: int | None

    JSON_FLAT = frozenset({"pair"})

    @property
    def base(self) -> Ranks:
        return self.base_preferred, self.base_other

    @property
    def new(self) -> Ranks:
        return self.new_preferred, self.new_other


@dataclass(frozen=True)
class JudgedDiff(Coded):
    """A candidate's verdicts against the baseline's: the judgments it lost (agreed in the
    baseline, not now) and gained, and McNemar's exact test on them. Its losses, what
    --fail-on-loss fails on: a lost judgment, or a query that errored in the candidate."""

    base: str
    new: str
    lost: tuple[JudgmentChange, ...]
    gained: tuple[JudgmentChange, ...]
    same: int
    verdict: JudgedVerdict
    candidate_errors: int

    JSON_KEYS = ("base", "new", "same", "lost", "gained", "candidate_errors", "verdict")

    @property
    def is_loss(self) -> bool:
        return bool(self.lost or self.candidate_errors)

    def verdict_line(self) -> str:
        return self.verdict.summary

    def counts_line(self) -> str:
        return f"judgments: {len(self.lost)} lost, {len(self.gained)} gained, {self.same} the same"


@dataclass(frozen=True)
class JudgedVerdict(McNemar):
    """The verdict on the judgments agreed with, and the test that decides it."""

    agreement: Verdict

    JSON_KEYS = ("agreement", "test", "alpha", "summary")

    @property
    def summary(self) -> str:
        return verdict_line("verdict on judgments", (self.agreement, OUTCOME))


@dataclass(frozen=True)
class Judged(Coded):
    """A judgments run: every pair of the file, how many distinct queries and candidate
    lists it ran (each list a pseudo-corpus: one index and one process a finder), each
    finder's verdicts, and each candidate's diff against the baseline."""

    pairs: tuple[Pair, ...]
    queries: int
    lists: int
    runs: tuple[JudgedRun, ...]
    diffs: tuple[JudgedDiff, ...] = ()
    split: Split | None = None  # --split: the side whose pairs these are; None: the whole file
    sides: dict[str, tuple[str, ...]] = field(default_factory=dict)  # each side's projects

    JSON_KEYS = ("pairs", "queries", "lists", "contested", "runs", "diffs", "split", "sides")

    @property
    def contested(self) -> int:
        return sum(1 for p in self.pairs if p.contested)


def pairs_of(judgments: Sequence[Judgment]) -> tuple[Pair, ...]:
    disputed = contested(judgments)
    return tuple(
        Pair(j.domain, j.query, j.preferred, j.other, j.source, j.line, j in disputed)
        for j in judgments
    )


# One answer a run gave: a row's rank and error (an error is a rank of None as well).
Answer = tuple[int | None, str | None]


def pair_ranks(rows: Sequence[QueryRow], answers: Sequence[Answer]) -> Callable[[Pair], Ranks]:
    """Each pair's two ranks, from the rows of its query (one a candidate)."""
    rank = {
        (row.type, row.query, row.source): answer[0]
        for row, answer in zip(rows, answers, strict=True)
    }
    return lambda p: (rank[(p.domain, p.query, p.preferred)], rank[(p.domain, p.query, p.other)])


def errored(rows: Sequence[QueryRow], answers: Sequence[Answer]) -> dict[tuple[str, str], str]:
    """The (domain, query)s whose answer was an error, with its first error."""
    found: dict[tuple[str, str], str] = {}
    for row, (_rank, error) in zip(rows, answers, strict=True):
        if error:
            found.setdefault((row.type, row.query), error)
    return found


def judged_run(
    label: str, pairs: Sequence[Pair], rows: Sequence[QueryRow], answers: Sequence[Answer]
) -> JudgedRun:
    ranks_of = pair_ranks(rows, answers)
    ranks = tuple(ranks_of(p) for p in pairs)
    judged = [(p, r) for p, r in zip(pairs, ranks, strict=True) if not p.contested]

    def by(key: Callable[[Pair], str]) -> dict[str, Agreement]:
        groups: dict[str, list[Ranks]] = {}
        for p, r in judged:
            groups.setdefault(key(p), []).append(r)
        return {k: agreement(groups[k]) for k in sorted(groups, key=str.casefold)}

    return JudgedRun(
        label, agreement(r for _p, r in judged), by(lambda p: p.project),
        by(lambda p: p.domain),
        ranks, sum(1 for p, r in zip(pairs, ranks, strict=True) if p.contested and agrees(r)),
        len(errored(rows, answers)),
    )  # fmt: skip


def judged_diff(
    pairs: Sequence[Pair], base: JudgedRun, new: JudgedRun, candidate_errors: int
) -> JudgedDiff:
    lost, gained, same = [], [], 0
    for p, b, n in zip(pairs, base.ranks, new.ranks, strict=True):
        if p.contested:
            continue
        if agrees(b) and not agrees(n):
            lost.append(JudgmentChange(p, *b, *n))
        elif agrees(n) and not agrees(b):
            gained.append(JudgmentChange(p, *b, *n))
        else:
            same += 1
    verdict = JudgedVerdict(Verdict(len(gained), len(lost), mcnemar_exact(len(gained), len(lost))))
    return JudgedDiff(
        base.label, new.label, tuple(lost), tuple(gained), same, verdict, candidate_errors
    )


def judge(
    judgments: Sequence[Judgment], rows: Sequence[QueryRow],
    runs: Sequence[tuple[str, Sequence[Answer]]], *, baseline: bool,
) -> Judged:  # fmt: skip
    """Every finder's verdicts on the judgments (runs: each label and its answers to rows,
    in row order), and with a baseline (the first run) each later run's diff against it."""
    pairs = pairs_of(judgments)
    judged = tuple(judged_run(label, pairs, rows, answers) for label, answers in runs)
    diffs = (
        tuple(judged_diff(pairs, judged[0], run, run.errors) for run in judged[1:])
        if baseline
        else ()
    )
    return Judged(
        pairs, len({(r.type, r.query) for r in rows}), len({r.repo for r in rows}), judged, diffs
    )


# How far recall's own sets agree with the judgments: the results page -------------------


@dataclass(frozen=True)
class SetCorrelation:
    """Across the finders measured on both, Spearman's rank correlation between a query
    set's #1 share (a typing set's: the sequences that reach #1) and the judgments'
    agreement, with its 95% interval (stats.spearman_interval); None where undefined."""

    set: str
    finders: tuple[str, ...]
    rho: float | None
    ci: tuple[float, float] | None


def set_correlation(
    name: str, shares: dict[str, float], agreed: dict[str, float]
) -> SetCorrelation:
    """shares: each finder's #1% on the set; agreed: each finder's agreement %."""
    finders = tuple(label for label in agreed if label in shares)
    rho = spearman([shares[f] for f in finders], [agreed[f] for f in finders])
    ci = spearman_interval(rho, len(finders)) if rho is not None else None
    return SetCorrelation(name, finders, rho, ci)


def disputed_by(pairs: Sequence[Pair], runs: Sequence[JudgedRun]) -> list[tuple[int, int]]:
    """The uncontested pairs that the most of these runs disagree with: (pair index, how
    many disagree), every pair with the largest count above 0, in file order."""
    counts = [
        (i, sum(1 for r in runs if not agrees(r.ranks[i])))
        for i, p in enumerate(pairs)
        if not p.contested
    ]
    most = max((n for _i, n in counts), default=0)
    return [(i, n) for i, n in counts if n == most and most > 0]
