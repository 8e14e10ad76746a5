"""Keystrokes to the name: how much a person types before the finder shows what they meant.

The typing set (recall/inputs/keystrokes.py) gives, for each sampled name, sequences of prefixes
typed one keystroke at a time. The finders answered each distinct prefix once; here the
answers are mapped back to every step that typed it, and each sequence gets the first
step at which its source is #1 and the first at which it is in the top 3 (visible without
scrolling), or None: never within the sequence. From those: the share of sequences that
reach #1 within k keystrokes (k = 1..10, the k-curve), the mean keystrokes of those that
reach it, and the keystrokes saved against typing the whole name (the keystroke saving
rate of query auto-completion research), overall and by sequence kind, repo and language.

The ceiling, which needs the corpora's names, is recall/analysis/keystroke_ceiling.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from recall.analysis.codec import Coded
from recall.analysis.stats import McNemar, Verdict, interval, mcnemar_exact, verdict_line

CURVE = tuple(range(1, 11))  # k of the k-curve: the share at #1 within k keystrokes
VISIBLE = 3  # the top 3: what a picker shows without scrolling
CHANGES_SHOWN = 20  # a diff's sequences that need more keystrokes, in text and Markdown
LEFT_OUT_SHOWN = 10  # the sequences without a ceiling a report names (JSON and HTML too)


@dataclass(frozen=True)
class TypedSequence:
    """One way of typing toward a source: its steps' queries, one keystroke more each."""

    repo: str
    kind: str
    source: str
    queries: tuple[str, ...]


class Step(Protocol):
    """A step of the typing set (recall/inputs/keystrokes.py's TypingRow), as read here."""

    @property
    def repo(self) -> str: ...
    @property
    def sequence(self) -> str: ...
    @property
    def query(self) -> str: ...
    @property
    def source(self) -> str: ...


def typed_sequences(rows: Iterable[Step]) -> list[TypedSequence]:
    """The typing set's steps gathered into their sequences, in file order."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        grouped.setdefault((row.repo, row.sequence, row.source), []).append(row.query)
    return [TypedSequence(*key, tuple(queries)) for key, queries in grouped.items()]


@dataclass(frozen=True)
class Reach:
    """Keystrokes until the source is #1 and until it is in the top 3 (None: never)."""

    first: int | None
    top3: int | None


def reach(sequence: TypedSequence, answers: Callable[[str, str], Sequence[str]]) -> Reach:
    """The first step at which the source is #1, and in the top 3, given each query's
    distinct names in ranked order (`answers(repo, query)`)."""
    first = top3 = None
    for step, query in enumerate(sequence.queries, start=1):
        names = answers(sequence.repo, query)
        if top3 is None and sequence.source in names[:VISIBLE]:
            top3 = step
        if len(names) > 0 and names[0] == sequence.source:
            first = step
            break
    return Reach(first, top3)


@dataclass(frozen=True)
class Chances:
    """The chance that a sequence's source is first #1 (and first in the top 3) at each of
    its steps: for a finder one step is certain or none is (never); for the ceiling they
    are the best a finder can expect."""

    first: tuple[float, ...]
    top3: tuple[float, ...]


def certain(reach_: Reach, length: int) -> Chances:
    def at(step: int | None) -> tuple[float, ...]:
        return tuple(1.0 if s == step else 0.0 for s in range(1, length + 1))

    return Chances(at(reach_.first), at(reach_.top3))


@dataclass(frozen=True)
class EffortCounts(Coded):
    """How a group of sequences went: how many reach #1 and the top 3, in how many
    keystrokes on average (of those that reach it; None when none does), the k-curve
    (percent at #1 within k keystrokes, k = 1..10), and the keystrokes saved against
    typing each whole name (a sequence that never reaches #1 saves none). A finder's counts
    are whole; the ceiling's are expected counts (sums of chances, rounded to 0.01), with
    the 95% range of each count, as the name sets' ceilings have (None for a finder's)."""

    n: int
    first: float
    first_pct: float
    first_keys: float | None
    top3: float
    top3_pct: float
    top3_keys: float | None
    saved: float
    typed: int
    saved_pct: float
    curve: tuple[float, ...]
    first_ci: tuple[int, int] | None = None
    top3_ci: tuple[int, int] | None = None

    def above(self, ceiling: EffortCounts | None) -> tuple[bool, bool]:
        """Whether this finder's #1 and top 3 counts are above the ceiling's 95% range on
        the same sequences: more than chance gives any finder under the typing model."""
        if ceiling is None:
            return False, False
        return (
            ceiling.first_ci is not None and self.first > ceiling.first_ci[1],
            ceiling.top3_ci is not None and self.top3 > ceiling.top3_ci[1],
        )


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def _count(value: float) -> float:
    """A whole count as an int (a finder's), an expected one rounded to 0.01."""
    return int(value) if float(value).is_integer() else round(value, 2)


def _mean_step(chances: list[tuple[float, ...]]) -> tuple[float, float | None]:
    """The expected number of sequences that get there and their mean keystrokes."""
    reached = sum(sum(c) for c in chances)
    keys = sum(step * p for c in chances for step, p in enumerate(c, start=1))
    return reached, (round(keys / reached, 2) if reached > 1e-9 else None)


def counts(pairs: list[tuple[TypedSequence, Chances]], *, ranged: bool = False) -> EffortCounts:
    """The numbers of a group of sequences from their chances; ranged: with the 95% range
    of the #1 and top 3 counts (the ceiling's), each sequence getting there with the sum
    of its chances, independently: the name sets' ceilings' method (stats.interval)."""
    n = len(pairs)
    first, first_keys = _mean_step([c.first for _s, c in pairs])
    top3, top3_keys = _mean_step([c.top3 for _s, c in pairs])
    typed = sum(len(s.source) for s, _c in pairs)
    saved = sum(
        max(0, len(s.source) - step) * p
        for s, c in pairs
        for step, p in enumerate(c.first, start=1)
    )
    return EffortCounts(
        n=n, first=_count(first), first_pct=_pct(first, n), first_keys=first_keys,
        top3=_count(top3), top3_pct=_pct(top3, n), top3_keys=top3_keys,
        saved=_count(saved), typed=typed, saved_pct=_pct(saved, typed),
        curve=tuple(_pct(sum(sum(c.first[:k]) for _s, c in pairs), n) for k in CURVE),
        first_ci=interval(sum(c.first) for _s, c in pairs) if ranged else None,
        top3_ci=interval(sum(c.top3) for _s, c in pairs) if ranged else None,
    )  # fmt: skip


@dataclass(frozen=True)
class EffortRun(Coded):
    """One finder's effort (or the ceiling's): overall, and by sequence kind, repo and
    language."""

    label: str
    counts: EffortCounts
    by_sequence: dict[str, EffortCounts]
    by_repo: dict[str, EffortCounts]
    by_language: dict[str, EffortCounts]

    JSON_FLAT = frozenset({"counts"})


def effort_run(
    label: str, sequences: list[TypedSequence], chances: list[Chances],
    languages: dict[str, str], *, ranged: bool = False,
) -> EffortRun:  # fmt: skip
    """One finder's effort (or, ranged, the ceiling's) overall and by group."""
    pairs = list(zip(sequences, chances, strict=True))

    def by(key: Callable[[TypedSequence], str]) -> dict[str, EffortCounts]:
        groups: dict[str, list[tuple[TypedSequence, Chances]]] = {}
        for pair in pairs:
            groups.setdefault(key(pair[0]), []).append(pair)
        return {name: counts(group, ranged=ranged) for name, group in groups.items()}

    return EffortRun(
        label, counts(pairs, ranged=ranged), by(lambda s: s.kind), by(lambda s: s.repo),
        by(lambda s: languages[s.repo]),
    )  # fmt: skip


@dataclass(frozen=True)
class EffortChange(Coded):
    """A sequence that needs more keystrokes than in the baseline to reach #1 (or, in
    `lost_top3`, the top 3): the step at which it used to get there (its query), and now
    (None: never within the sequence)."""

    repo: str
    sequence: str
    source: str
    base_keys: int
    base_query: str
    new_keys: int | None


@dataclass(frozen=True)
class EffortDiff(Coded):
    """A candidate's keystrokes to #1 against the baseline's, sequence by sequence, and
    the sequences that reach #1 and the top 3 in one build and never in the other, whose
    verdicts (McNemar's exact test, as a name diff's on #1 and the top 10) judge the
    change. Its losses, what --fail-on-loss fails on: a sequence that needs more
    keystrokes to #1 (never reaching it now included) or no longer reaches the top 3."""

    base: str
    new: str
    more: int
    fewer: int
    same: int
    more_keys: tuple[EffortChange, ...]
    lost_top3: tuple[EffortChange, ...]
    verdict: EffortVerdict

    @property
    def is_loss(self) -> bool:
        return bool(self.more_keys or self.lost_top3)

    def counts_line(self) -> str:
        never = sum(1 for c in self.more_keys if c.new_keys is None)
        return (
            f"sequences: {self.more} need more keystrokes to #1 ({never} never reach it now), "
            f"{self.fewer} fewer, {self.same} the same; {len(self.lost_top3)} no longer reach "
            "the top 3"
        )


@dataclass(frozen=True)
class EffortVerdict(McNemar):
    """The verdicts on the sequences that reach #1 and on those that reach the top 3."""

    first: Verdict
    top3: Verdict

    JSON_KEYS = ("first", "top3", "test", "alpha", "summary")

    @property
    def summary(self) -> str:
        """The verdict line, as a name diff's."""
        return verdict_line(
            "verdict on sequences", (self.first, "#1 reached"), (self.top3, "top 3 reached")
        )


def _keys(first: int | None) -> float:
    return float("inf") if first is None else float(first)


def _verdict(before: list[int | None], after: list[int | None]) -> Verdict:
    """McNemar's exact test on the sequences that reach the outcome in one build only."""
    gained = sum(1 for b, a in zip(before, after, strict=True) if b is None and a is not None)
    lost = sum(1 for b, a in zip(before, after, strict=True) if b is not None and a is None)
    return Verdict(gained, lost, mcnemar_exact(gained, lost))


def effort_diff(
    base: str, new: str, sequences: list[TypedSequence], old: list[Reach], now: list[Reach]
) -> EffortDiff:
    """Which sequences need more keystrokes to #1 now (never counts as more than any
    number), fewer, or the same; which no longer reach the top 3; and the verdicts on
    reaching #1 and the top 3."""
    more: list[EffortChange] = []
    lost_top3: list[EffortChange] = []
    fewer = same = 0
    for sequence, before, after in zip(sequences, old, now, strict=True):
        if _keys(after.first) > _keys(before.first):
            assert before.first is not None  # more than a number: it had one
            more.append(
                EffortChange(
                    sequence.repo, sequence.kind, sequence.source, before.first,
                    sequence.queries[before.first - 1], after.first,
                )
            )  # fmt: skip
        elif _keys(after.first) < _keys(before.first):
            fewer += 1
        else:
            same += 1
        if before.top3 is not None and after.top3 is None:
            lost_top3.append(
                EffortChange(
                    sequence.repo, sequence.kind, sequence.source, before.top3,
                    sequence.queries[before.top3 - 1], None,
                )
            )  # fmt: skip
    return EffortDiff(
        base, new, len(more), fewer, same, tuple(more), tuple(lost_top3),
        EffortVerdict(
            _verdict([r.first for r in old], [r.first for r in now]),
            _verdict([r.top3 for r in old], [r.top3 for r in now]),
        ),
    )  # fmt: skip


@dataclass(frozen=True)
class LeftOutSequence(Coded):
    """A sequence the typing model cannot type toward its source (a foreign file's: its
    steps are no prefixes of the text that way types for the name, or the way does not
    apply to it): it has no ceiling, and is named. `typed` is its last step's query."""

    repo: str
    sequence: str
    source: str
    typed: str


@dataclass(frozen=True)
class LeftOutSequences(Coded):
    """How many sequences the ceiling leaves out, and the first LEFT_OUT_SHOWN of them."""

    count: int = 0
    first: tuple[LeftOutSequence, ...] = ()


@dataclass(frozen=True)
class Effort(Coded):
    """The typing set's section of a report: every finder's effort, the ceiling's (over
    the sequences the typing model makes; `left_out` the others), and each candidate's
    changes against the baseline."""

    sequences: int
    steps: int
    prompts: int  # the distinct (repo, query) the finders answered
    runs: tuple[EffortRun, ...]
    ceiling: EffortRun
    diffs: tuple[EffortDiff, ...] = ()
    left_out: LeftOutSequences = LeftOutSequences()

    JSON_KEYS = (
        "sequences", "steps", "prompts", "curve_k", "runs", "ceiling", "diffs", "left_out"
    )  # fmt: skip
    curve_k = CURVE
