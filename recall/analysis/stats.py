"""Rank metrics and the significance of a change between two finder builds.

A ranking change moves a few queries out of thousands, so a bare "#1 went from 71.2% to
71.5%" does not tell a developer whether the change helped or the corpus got lucky. This
module turns two lists of ranks (one per build, paired by query) into the numbers a
decision record needs: how many queries won and lost, exact paired tests on those counts,
and bootstrap intervals on the change in #1 rate and MRR.

Everything here is pure and deterministic: the same ranks and seed give the same numbers
on every run, so a report can be regenerated and compared byte for byte. The exact tests
use integer arithmetic (math.comb) instead of SciPy, which is not a dependency; the
bootstrap uses NumPy, which is.

A rank is the 1-based position of the intended name, or None when it was not found.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from recall.analysis.codec import Coded

Rank = int | None

#: Confidence level of the intervals that compare() reports and summary() prints.
CONFIDENCE = 0.95

#: The significance level of a diff's verdict (Verdict): McNemar's exact test on #1 and on
#: the top 10, each at this level (docs/reports.md says why this test decides).
ALPHA = 0.05
VERDICT_TEST = "McNemar's exact test"
IMPROVED, REGRESSED, NO_CHANGE = "improved", "regressed", "no significant change"

# Elements of the resample index matrix drawn at once. The index matrix (int64) and the
# gathered differences (float64) together take 16 bytes per element, so 2**22 elements
# keep a chunk near 64 MB however many queries and resamples there are.
_CHUNK_ELEMENTS = 1 << 22


def _check_rank(rank: Rank) -> None:
    """Refuse ranks below 1: ranks are 1-based, and a 0 would silently score as perfect."""
    if rank is not None and rank < 1:
        raise ValueError(f"rank must be >= 1 or None, got {rank!r}")


def reciprocal_rank(rank: Rank) -> float:
    """1/rank, or 0.0 for a miss, so a miss weighs like a rank infinitely far down."""
    _check_rank(rank)
    return 0.0 if rank is None else 1.0 / rank


def mean_reciprocal_rank(ranks: Sequence[Rank]) -> float:
    """Mean of reciprocal_rank over all queries; 0.0 for no queries (nothing was found)."""
    if not ranks:
        return 0.0
    return math.fsum(reciprocal_rank(r) for r in ranks) / len(ranks)


def ndcg_at_10(rank: Rank) -> float:
    """nDCG@10 with one relevant item: 1/log2(rank+1) inside the top 10, else 0.0.

    With a single relevant name the ideal DCG is 1, so the normalised gain is just the
    discount at the name's position; anything past the first screen of 10 earns nothing.
    """
    _check_rank(rank)
    if rank is None or rank > 10:
        return 0.0
    return 1.0 / math.log2(rank + 1)


def mean_ndcg_at_10(ranks: Sequence[Rank]) -> float:
    """Mean of ndcg_at_10 over all queries; 0.0 for no queries."""
    if not ranks:
        return 0.0
    return math.fsum(ndcg_at_10(r) for r in ranks) / len(ranks)


def _binomial_two_sided(a: int, b: int) -> float:
    """Exact two-sided p-value of a split a:b under Binomial(a+b, 1/2).

    p = min(1, 2 * P(X <= min(a, b))). The tail is summed in exact integers and divided
    once (int / int is correctly rounded in Python), so there is no floating-point loss
    even for tens of thousands of discordant pairs. The binomial coefficients are built
    as a running product, comb(n, i+1) = comb(n, i) * (n-i) / (i+1), which gives the same
    integers as math.comb without recomputing each one from scratch.
    """
    if a < 0 or b < 0:
        raise ValueError(f"counts must be non-negative, got {a}, {b}")
    n = a + b
    if n == 0:
        return 1.0
    k = min(a, b)
    term = 1  # math.comb(n, 0)
    tail = 0
    for i in range(k + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    return min(1.0, (2 * tail) / (1 << n))


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test on wins vs losses, ties already dropped.

    Asks whether a change that moves ranks both ways moves them up more often than chance
    would; 1.0 when nothing moved, since there is no evidence either way.
    """
    return _binomial_two_sided(wins, losses)


def mcnemar_exact(gained: int, lost: int) -> float:
    """Exact McNemar test on the discordant pairs of a yes/no outcome (here: rank == 1).

    Queries that are #1 in both builds or in neither say nothing about the change; only
    the ones that gained or lost the outcome do, and under no effect each is a fair coin,
    so this is the same binomial form as the sign test. 1.0 when nothing changed.
    """
    return _binomial_two_sided(gained, lost)


def paired_bootstrap(
    base: Sequence[float],
    new: Sequence[float],
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Observed mean(new - base) and its percentile bootstrap interval.

    Queries are resampled as pairs (the same query index for both builds), so the
    interval reflects per-query differences rather than two independent spreads, which
    would be far wider. The index matrix is drawn in chunks of about 2**22 entries, so
    10,000 resamples of 20,000 queries stay well under 100 MB; the chunk size depends on
    the input length only, so a seed always gives the same numbers. Returns
    (observed, low, high); (0.0, 0.0, 0.0) for empty input.
    """
    if len(base) != len(new):
        raise ValueError(f"paired inputs differ in length: {len(base)} vs {len(new)}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    n = len(base)
    if n == 0:
        return (0.0, 0.0, 0.0)
    diffs = np.asarray(new, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    if not diffs.any():  # every resample's mean is 0.0: the draws would change nothing
        return (0.0, 0.0, 0.0)
    observed = float(diffs.mean())

    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // n)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        means[start : start + rows] = diffs[idx].mean(axis=1)

    alpha = 1.0 - confidence
    low, high = np.percentile(
        means, [100.0 * alpha / 2, 100.0 * (1.0 - alpha / 2)], method="linear"
    )
    return (observed, float(low), float(high))


def better(new: Rank, base: Rank) -> bool:
    """Whether rank `new` beats rank `base`: found beats missed, smaller beats larger."""
    if new is None:
        return False
    return base is None or new < base


def paired_se(a: Sequence[bool], b: Sequence[bool]) -> float:
    """The standard error, in points, of the difference of two shares measured on the same
    rows (a[i] and b[i] are row i's outcome for two finders): the spread of the per-row
    differences over the square root of n. Paired, so the rows both get or both miss, most
    of them, add nothing, and two finders close on every row are told apart."""
    n = len(a)
    if n != len(b):
        raise ValueError(f"paired inputs differ in length: {n} vs {len(b)}")
    if n < 2:
        return 0.0
    diffs = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / n
    variance = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    return 100.0 * math.sqrt(variance / n)


def shown_p(p: float) -> str:
    """`p=0.0039`; an exact p below what a float holds (thousands of discordant pairs, all
    one way) divides to 0.0, and is shown as the bound it is under, never as p=0."""
    return "p<1e-300" if p < 1e-300 else f"p={p:.2g}"


def in_top10(rank: Rank) -> bool:
    return rank is not None and rank <= 10


@dataclass(frozen=True)
class Verdict(Coded):
    """What a diff did to one outcome (#1, or the top 10): improved, regressed or no
    significant change, as McNemar's exact test on the queries that gained or lost the
    outcome decides at ALPHA. Only those queries say anything about the change, and a
    reader decides on #1 and the top 10, not on a move from rank 40 to 35 (the sign test
    counts that one). Its holder names the outcome it is on (#1, the top 10, ...)."""

    gained: int
    lost: int
    p: float

    JSON_KEYS = ("outcome", "gained", "lost", "p")

    @property
    def outcome(self) -> str:
        if self.p >= ALPHA or self.gained == self.lost:
            return NO_CHANGE
        return IMPROVED if self.gained > self.lost else REGRESSED

    def phrase(self, outcome_of: str) -> str:
        """`#1 regressed (3 gained, 18 lost, p=0.0015)`."""
        counts = f"{self.gained} gained, {self.lost} lost, {shown_p(self.p)}"
        return f"{outcome_of} {self.outcome} ({counts})"


def verdict_line(lead: str, *verdicts: tuple[Verdict, str]) -> str:
    """`verdict (McNemar's exact test, two-sided, alpha 0.05): #1 ...; top 10 ...`: the
    verdicts on their outcomes, naming the test that decides them."""
    said = "; ".join(verdict.phrase(outcome_of) for verdict, outcome_of in verdicts)
    return f"{lead} ({VERDICT_TEST}, two-sided, alpha {ALPHA:g}): {said}"


class McNemar(Coded):
    """A diff's verdicts as its JSON holds them: with the test that decides them, by name."""

    test = "mcnemar_exact"
    alpha = ALPHA


def _signed(value: float, digits: int) -> str:
    """Format with an explicit sign, never printing "-0.0" for a value that rounds to 0."""
    rounded = round(value, digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{rounded:+.{digits}f}"


@dataclass(frozen=True)
class Significance(Coded):
    """How a candidate build's ranks differ from a baseline's, with the evidence for it.

    Deltas are new minus base: `first_delta` is a fraction of queries (0.009 = +0.9
    points of #1 rate), `mrr_delta` is in MRR units. Intervals are (low, high) at
    CONFIDENCE.
    """

    wins: int
    ties: int
    losses: int
    sign_p: float
    gained_first: int
    lost_first: int
    mcnemar_p: float
    first_delta: float
    first_ci: tuple[float, float]
    mrr_delta: float
    mrr_ci: tuple[float, float]
    gained_top10: int = 0
    lost_top10: int = 0
    mcnemar_top10_p: float = 1.0

    JSON_KEYS = (
        "wins", "ties", "losses", "sign_p", "gained_first", "lost_first", "mcnemar_p",
        "first_delta", "first_ci", "mrr_delta", "mrr_ci", "gained_top10", "lost_top10",
        "mcnemar_top10_p", "summary",
    )  # fmt: skip

    @property
    def first(self) -> Verdict:
        return Verdict(self.gained_first, self.lost_first, self.mcnemar_p)

    @property
    def top10(self) -> Verdict:
        return Verdict(self.gained_top10, self.lost_top10, self.mcnemar_top10_p)

    def verdict_line(self) -> str:
        """The diff's verdict on #1 and on the top 10, naming the test that decides it."""
        return verdict_line("verdict", (self.first, "#1"), (self.top10, "top 10"))

    def summary(self) -> str:
        """One line for the text report and for pasting into a decision record."""
        pct = round(100 * CONFIDENCE)
        lo, hi = self.first_ci
        mlo, mhi = self.mrr_ci
        return (
            f"wins {self.wins}, losses {self.losses}, ties {self.ties}; "
            f"sign test {shown_p(self.sign_p)}; McNemar (#1) {shown_p(self.mcnemar_p)}; "
            f"Δ#1 {_signed(100 * self.first_delta, 1)} pts "
            f"[{pct}% CI {_signed(100 * lo, 1)}, {_signed(100 * hi, 1)}]; "
            f"ΔMRR {_signed(self.mrr_delta, 3)} [{_signed(mlo, 3)}, {_signed(mhi, 3)}]"
        )


def compare(
    base_ranks: Sequence[Rank],
    new_ranks: Sequence[Rank],
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> Significance:
    """Compare two builds' ranks, paired by query (position i is the same query in both).

    A win is a query whose rank got better in the new build (a found rank beats None,
    a smaller rank beats a larger one); two misses are a tie. The #1 rate and MRR
    intervals share the seed, so both are drawn from the same resampled query sets.
    """
    if len(base_ranks) != len(new_ranks):
        raise ValueError(f"rank lists differ in length: {len(base_ranks)} vs {len(new_ranks)}")
    wins = losses = ties = gained = lost = gained_top10 = lost_top10 = 0
    for base, new in zip(base_ranks, new_ranks, strict=True):
        _check_rank(base)
        _check_rank(new)
        if better(new, base):
            wins += 1
        elif better(base, new):
            losses += 1
        else:
            ties += 1
        if new == 1 and base != 1:
            gained += 1
        elif base == 1 and new != 1:
            lost += 1
        if in_top10(new) and not in_top10(base):
            gained_top10 += 1
        elif in_top10(base) and not in_top10(new):
            lost_top10 += 1

    first_base = [1.0 if r == 1 else 0.0 for r in base_ranks]
    first_new = [1.0 if r == 1 else 0.0 for r in new_ranks]
    first_delta, first_lo, first_hi = paired_bootstrap(
        first_base, first_new, resamples=resamples, seed=seed, confidence=CONFIDENCE
    )
    rr_base = [reciprocal_rank(r) for r in base_ranks]
    rr_new = [reciprocal_rank(r) for r in new_ranks]
    mrr_delta, mrr_lo, mrr_hi = paired_bootstrap(
        rr_base, rr_new, resamples=resamples, seed=seed, confidence=CONFIDENCE
    )
    return Significance(
        wins=wins,
        ties=ties,
        losses=losses,
        sign_p=sign_test(wins, losses),
        gained_first=gained,
        lost_first=lost,
        mcnemar_p=mcnemar_exact(gained, lost),
        first_delta=first_delta,
        first_ci=(first_lo, first_hi),
        mrr_delta=mrr_delta,
        mrr_ci=(mrr_lo, mrr_hi),
        gained_top10=gained_top10,
        lost_top10=lost_top10,
        mcnemar_top10_p=mcnemar_exact(gained_top10, lost_top10),
    )


def median_p90(values: Sequence[float]) -> tuple[float, float]:
    """Median and 90th percentile (linear interpolation), as the bench report gives latency.

    The method is named explicitly rather than left to NumPy's default, so a NumPy
    release that changes the default cannot shift reported latencies. (0.0, 0.0) for no
    values, like the other empty cases in this module.
    """
    if len(values) == 0:
        return (0.0, 0.0)
    median, p90 = np.percentile(np.asarray(values, dtype=np.float64), [50.0, 90.0], method="linear")
    return (float(median), float(p90))


#: The normal quantile of the 95% intervals below (Wilson's, Fisher's z).
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion k/n, as fractions (0.0, 0.0 for n = 0).

    Unlike the normal approximation it stays inside [0, 1] and keeps its coverage near a
    share of 0 or 1 and for small n (a source project with 2 pairs), where agreement
    shares of finders sit."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks of values, ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's of the average ranks (ties allowed); None
    where it is undefined (fewer than 3 values, or one side all equal)."""
    if len(x) != len(y):
        raise ValueError(f"paired inputs differ in length: {len(x)} vs {len(y)}")
    if len(x) < 3:
        return None
    rx, ry = np.asarray(average_ranks(x)), np.asarray(average_ranks(y))
    dx, dy = rx - rx.mean(), ry - ry.mean()
    scale = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    if scale == 0.0:
        return None
    return max(-1.0, min(1.0, float((dx * dy).sum()) / scale))


def spearman_interval(rho: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The 95% interval of Spearman's rho over n pairs: Fisher's z transform with Bonett
    and Wright's variance (1 + rho²/2) / (n - 3), which keeps its coverage for the rank
    correlation where Fisher's own 1 / (n - 3) is too narrow (Bonett & Wright 2000,
    Psychometrika 65:23-28). None for n <= 3, where it is undefined."""
    if n <= 3:
        return None
    clipped = max(-0.999999, min(0.999999, rho))
    half = z * math.sqrt((1 + clipped * clipped / 2) / (n - 3))
    centre = math.atanh(clipped)
    return (math.tanh(centre - half), math.tanh(centre + half))


# The ceilings' ranges (analysis/ceiling.py, and the typing set's in analysis/effort.py): the
# central 95% of the count a finder as good as the model would get.
LEVEL = 0.95


def count_distribution(chances: Iterable[float]) -> np.ndarray:
    """P(count = c) for c = 0..n, where row i is a hit with chance p_i, independently (the
    Poisson-binomial distribution), by adding one row at a time. Rows certain to hit or to
    miss only shift or keep it, so they cost nothing."""
    sure = never = 0
    dist = np.ones(1)
    for p in chances:
        if p >= 1.0:
            sure += 1
        elif p <= 0.0:
            never += 1
        else:
            grown = np.zeros(len(dist) + 1)
            grown[:-1] += dist * (1.0 - p)
            grown[1:] += dist * p
            dist = grown
    return np.concatenate([np.zeros(sure), dist, np.zeros(never)])


def standard_error(chances: Iterable[float]) -> float:
    """The spread of the count around its expectation sum(p): sqrt(sum p(1 - p))."""
    return float(np.sqrt(sum(p * (1.0 - p) for p in chances)))


def interval(chances: Iterable[float], level: float = LEVEL) -> tuple[int, int]:
    """The central `level` range [low, high] of the count, exactly: low the largest count
    with at most (1 - level) / 2 of the chance below it, high the smallest with at most that
    above it. A finder as good
    as the model lands in it at least `level` of the time; any finder, since none can beat
    the model's best ranking row by row, lands above high at most (1 - level) / 2 of it."""
    dist = count_distribution(chances)
    tail = (1.0 - level) / 2
    below = np.cumsum(dist)  # P(count <= c)
    above = 1.0 - below  # P(count > c)
    slack = 1e-12  # float sums must not move a bound across an exact tail
    low = int(np.searchsorted(below, tail - slack, side="right"))
    high = int(np.argmax(above <= tail - slack))
    return low, high
