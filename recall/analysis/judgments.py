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

from recall.analysis.stats import (
    ALPHA,
    VERDICT_TEST,
    Verdict,
    mcnemar_exact,
    spearman,
    spearman_interval,
    wilson,
)
from recall.inputs.judgments import Judgment, contested
from recall.inputs.queryset import QueryRow

Ranks = tuple[int | None, int | None]  # where preferred and other ranked (None: not found)
OUTCOME = "agreement"  # what a judgments diff's verdict is on


def agrees(ranks: Ranks) -> bool:
    """preferred strictly above other, an answer without other counting as above it."""
    preferred, other = ranks
    return preferred is not None and (other is None or preferred < other)


def neither(ranks: Ranks) -> bool:
    return ranks == (None, None)


@dataclass(frozen=True)
class Pair(Judgment):
    """A judgment as the report lists it: its row, its line in the file, and whether its
    reverse is in the file too."""

    contested: bool = False

    def to_json(self) -> dict:
        return {
            "domain": self.domain, "query": self.query, "preferred": self.preferred,
            "other": self.other, "source": self.source, "line": self.line,
            "contested": self.contested,
        }  # fmt: skip


@dataclass(frozen=True)
class Agreement:
    """Pairs judged (contested ones left out), those the finder agrees with, those where
    it found neither candidate, and the percent agreeing with its Wilson 95% interval."""

    n: int
    agree: int
    neither: int
    pct: float
    ci: tuple[float, float]

    def to_json(self) -> dict:
        return {
            "n": self.n, "agree": self.agree, "neither": self.neither, "pct": self.pct,
            "ci": list(self.ci),
        }  # fmt: skip


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
class JudgedRun:
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

    def to_json(self) -> dict:
        return {
            "label": self.label, **self.agreement.to_json(),
            "by_project": {k: a.to_json() for k, a in self.by_project.items()},
            "by_domain": {k: a.to_json() for k, a in self.by_domain.items()},
            "ranks": [list(r) for r in self.ranks],
            "contested_as_row": self.contested_as_row, "errors": self.errors,
        }  # fmt: skip


@dataclass(frozen=True)
class JudgmentChange:
    """A pair whose verdict differs between the baseline and a candidate, with the two
    ranks on each side."""

    pair: Pair
    base: Ranks
    new: Ranks

    def to_json(self) -> dict:
        return self.pair.to_json() | {
            "base_preferred": self.base[0], "base_other": self.base[1],
            "new_preferred": self.new[0], "new_other": self.new[1],
        }  # fmt: skip


@dataclass(frozen=True)
class JudgedDiff:
    """A candidate's verdicts against the baseline's: the judgments it lost (agreed in the
    baseline, not now) and gained, and McNemar's exact test on them. Its losses, what
    --fail-on-loss fails on: a lost judgment, or a query that errored in the candidate."""

    base: str
    new: str
    lost: tuple[JudgmentChange, ...]
    gained: tuple[JudgmentChange, ...]
    same: int
    verdict: Verdict
    candidate_errors: int

    @property
    def is_loss(self) -> bool:
        return bool(self.lost or self.candidate_errors)

    def verdict_line(self) -> str:
        return (
            f"verdict on judgments ({VERDICT_TEST}, two-sided, alpha {ALPHA:g}): "
            f"{self.verdict.phrase()}"
        )

    def counts_line(self) -> str:
        return f"judgments: {len(self.lost)} lost, {len(self.gained)} gained, {self.same} the same"

    def to_json(self) -> dict:
        return {
            "base": self.base, "new": self.new, "same": self.same,
            "lost": [c.to_json() for c in self.lost],
            "gained": [c.to_json() for c in self.gained],
            "candidate_errors": self.candidate_errors,
            "verdict": {
                "agreement": self.verdict.as_json(), "test": "mcnemar_exact", "alpha": ALPHA,
                "summary": self.verdict_line(),
            },
        }  # fmt: skip


@dataclass(frozen=True)
class Judged:
    """A judgments run: every pair of the file, how many distinct queries and candidate
    lists it ran (each list a pseudo-corpus: one index and one process a finder), each
    finder's verdicts, and each candidate's diff against the baseline."""

    pairs: tuple[Pair, ...]
    queries: int
    lists: int
    runs: tuple[JudgedRun, ...]
    diffs: tuple[JudgedDiff, ...] = ()
    split: str | None = None  # --split: the side whose pairs these are; None: the whole file
    sides: dict[str, tuple[str, ...]] = field(default_factory=dict)  # each side's projects

    @property
    def contested(self) -> int:
        return sum(1 for p in self.pairs if p.contested)

    def to_json(self) -> dict:
        return {
            "pairs": [p.to_json() for p in self.pairs], "queries": self.queries,
            "lists": self.lists, "contested": self.contested,
            "runs": [r.to_json() for r in self.runs], "diffs": [d.to_json() for d in self.diffs],
            "split": self.split, "sides": {k: list(v) for k, v in self.sides.items()},
        }  # fmt: skip


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
            lost.append(JudgmentChange(p, b, n))
        elif agrees(n) and not agrees(b):
            gained.append(JudgmentChange(p, b, n))
        else:
            same += 1
    verdict = Verdict(OUTCOME, len(gained), len(lost), mcnemar_exact(len(gained), len(lost)))
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


# The JSON report's `judgments` object read back (the HTML page and the results page draw
# from kept JSON), checked as far as the renderers rely on it.


def _ranks(value: list) -> Ranks:
    preferred, other = value
    return preferred, other


def _agreement(data: dict) -> Agreement:
    low, high = data["ci"]
    return Agreement(data["n"], data["agree"], data["neither"], data["pct"], (low, high))


def judged_from_json(data: dict) -> Judged:
    """The section as Judged.to_json() wrote it."""
    pairs = tuple(
        Pair(p["domain"], p["query"], p["preferred"], p["other"], p["source"], p["line"],
             p["contested"])
        for p in data["pairs"]
    )  # fmt: skip
    by_line = {p.line: p for p in pairs}
    runs = tuple(
        JudgedRun(
            r["label"], _agreement(r),
            {k: _agreement(a) for k, a in r["by_project"].items()},
            {k: _agreement(a) for k, a in r["by_domain"].items()},
            tuple(_ranks(x) for x in r["ranks"]), r["contested_as_row"], r["errors"],
        )
        for r in data["runs"]
    )  # fmt: skip

    def change(c: dict) -> JudgmentChange:
        return JudgmentChange(
            by_line[c["line"]], (c["base_preferred"], c["base_other"]),
            (c["new_preferred"], c["new_other"]),
        )  # fmt: skip

    diffs = tuple(
        JudgedDiff(
            d["base"], d["new"], tuple(change(c) for c in d["lost"]),
            tuple(change(c) for c in d["gained"]), d["same"],
            Verdict(OUTCOME, d["verdict"]["agreement"]["gained"],
                    d["verdict"]["agreement"]["lost"], d["verdict"]["agreement"]["p"]),
            d["candidate_errors"],
        )
        for d in data["diffs"]
    )  # fmt: skip
    sides = {k: tuple(v) for k, v in data.get("sides", {}).items()}  # added within schema 2
    return Judged(pairs, data["queries"], data["lists"], runs, diffs, data.get("split"), sides)


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
