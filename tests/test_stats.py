"""Tests for recall.analysis.stats: every statistic against a value worked out by hand."""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction

import pytest

from recall.analysis import stats
from recall.analysis.stats import (
    Significance,
    Verdict,
    compare,
    mcnemar_exact,
    mean_ndcg_at_10,
    mean_reciprocal_rank,
    median_p90,
    ndcg_at_10,
    paired_bootstrap,
    paired_se,
    reciprocal_rank,
    sign_test,
)

# --- reciprocal rank and MRR -------------------------------------------------------------


def test_reciprocal_rank() -> None:
    assert reciprocal_rank(1) == 1.0
    assert reciprocal_rank(4) == 0.25
    assert reciprocal_rank(None) == 0.0


def test_mean_reciprocal_rank_by_hand() -> None:
    # (1 + 1/2 + 0 + 1/4) / 4 = 1.75 / 4 = 0.4375
    assert mean_reciprocal_rank([1, 2, None, 4]) == pytest.approx(0.4375)


def test_mean_reciprocal_rank_empty_and_all_missed() -> None:
    assert mean_reciprocal_rank([]) == 0.0
    assert mean_reciprocal_rank([None, None]) == 0.0


@pytest.mark.parametrize("bad", [0, -1])
def test_rank_below_one_is_refused(bad: int) -> None:
    # A 0 would otherwise divide by zero, or score as a perfect nDCG.
    with pytest.raises(ValueError):
        reciprocal_rank(bad)
    with pytest.raises(ValueError):
        ndcg_at_10(bad)


# --- nDCG@10 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rank", "expected"),
    [
        (1, 1.0),  # 1/log2(2) = 1
        (3, 0.5),  # 1/log2(4) = 1/2
        (7, 1 / 3),  # 1/log2(8) = 1/3
        (10, 1 / math.log2(11)),  # last rank that still counts
        (11, 0.0),  # past the top 10
        (None, 0.0),  # missed
    ],
)
def test_ndcg_at_10_by_hand(rank: int | None, expected: float) -> None:
    assert ndcg_at_10(rank) == pytest.approx(expected)


def test_mean_ndcg_at_10_by_hand() -> None:
    # (1 + 1/2 + 0 + 0) / 4 = 0.375
    assert mean_ndcg_at_10([1, 3, None, 11]) == pytest.approx(0.375)
    assert mean_ndcg_at_10([]) == 0.0


# --- sign test and McNemar ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (0, 5, 0.0625),  # n=5:  2 * C(5,0)/2^5 = 2/32
        (5, 0, 0.0625),  # symmetric
        (3, 0, 0.25),  # n=3:  2 * 1/8
        (1, 9, 22 / 1024),  # n=10: 2 * (C(10,0) + C(10,1))/2^10 = 2 * (1 + 10)/1024
        (9, 1, 22 / 1024),  # symmetric
        (2, 8, 112 / 1024),  # n=10: 2 * (1 + 10 + 45)/1024
        (2, 3, 1.0),  # n=5:  2 * (1 + 5 + 10)/32 = 1.0
        (5, 5, 1.0),  # n=10: 2 * 638/1024 > 1, capped at 1
        (0, 1, 1.0),  # n=1:  2 * 1/2 = 1
        (0, 0, 1.0),  # nothing moved: no evidence either way
        (0, 20, 2 / 2**20),  # n=20: 2 * 1/2^20
    ],
)
def test_sign_test_by_hand(wins: int, losses: int, expected: float) -> None:
    assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-12)


def _exact_reference(a: int, b: int) -> float:
    """The textbook formula, straight from math.comb, to check the running product."""
    n = a + b
    tail = sum(math.comb(n, i) for i in range(min(a, b) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@pytest.mark.parametrize(("a", "b"), [(37, 63), (120, 80), (400, 430), (1, 2000)])
def test_sign_test_matches_math_comb(a: int, b: int) -> None:
    assert sign_test(a, b) == pytest.approx(_exact_reference(a, b), rel=1e-12)


def test_sign_test_large_n_is_exact_and_finite() -> None:
    # 20,000 discordant pairs: float arithmetic on C(n, k) / 2^n would overflow.
    p = sign_test(10_000, 10_500)
    assert 0.0 < p < 0.001
    assert sign_test(10_000, 10_000) == 1.0


@pytest.mark.parametrize(
    ("gained", "lost", "expected"),
    [
        (0, 6, 0.03125),  # n=6: 2 * 1/64
        (1, 5, 0.21875),  # n=6: 2 * (1 + 6)/64 = 14/64
        (4, 0, 0.125),  # n=4: 2 * 1/16
        (1, 1, 1.0),  # n=2: 2 * (1 + 2)/4 > 1, capped
        (0, 0, 1.0),  # no discordant pairs
    ],
)
def test_mcnemar_exact_by_hand(gained: int, lost: int, expected: float) -> None:
    assert mcnemar_exact(gained, lost) == pytest.approx(expected, rel=1e-12)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        sign_test(-1, 3)
    with pytest.raises(ValueError):
        mcnemar_exact(2, -1)


# --- paired bootstrap ----------------------------------------------------------------------

BASE = [0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.2, 1.0, 0.5, 0.0, 1.0, 0.33]
NEW = [0.5, 1.0, 1.0, 0.25, 0.5, 0.2, 0.2, 1.0, 1.0, 0.0, 1.0, 0.5]


def test_bootstrap_observed_is_mean_difference() -> None:
    observed, _, _ = paired_bootstrap(BASE, NEW, resamples=200)
    expected = sum(n - b for b, n in zip(BASE, NEW, strict=True)) / len(BASE)
    assert observed == pytest.approx(expected)


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    first = paired_bootstrap(BASE, NEW, resamples=2_000, seed=7)
    again = paired_bootstrap(BASE, NEW, resamples=2_000, seed=7)
    assert first == again  # identical, not merely close
    other = paired_bootstrap(BASE, NEW, resamples=2_000, seed=8)
    assert other[0] == first[0]  # the observed difference does not depend on the seed
    assert other[1:] != first[1:]  # the interval does


def test_bootstrap_interval_contains_observed() -> None:
    observed, low, high = paired_bootstrap(BASE, NEW, resamples=5_000, seed=0)
    assert low < observed < high


def test_bootstrap_wider_confidence_gives_wider_interval() -> None:
    _, lo90, hi90 = paired_bootstrap(BASE, NEW, resamples=5_000, confidence=0.90)
    _, lo99, hi99 = paired_bootstrap(BASE, NEW, resamples=5_000, confidence=0.99)
    assert lo99 <= lo90 and hi90 <= hi99
    assert hi99 - lo99 > hi90 - lo90


def test_bootstrap_zero_variance_gives_zero_width_interval() -> None:
    # Every per-query difference is 0.5, so every resampled mean is exactly 0.5.
    assert paired_bootstrap([0.0] * 50, [0.5] * 50, resamples=500) == (0.5, 0.5, 0.5)
    assert paired_bootstrap([0.3] * 9, [0.3] * 9, resamples=500) == (0.0, 0.0, 0.0)


def test_bootstrap_empty_input() -> None:
    assert paired_bootstrap([], []) == (0.0, 0.0, 0.0)


def test_bootstrap_many_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Force one resample row per chunk: the chunk loop must fill every resample.
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 1)
    observed, low, high = paired_bootstrap(BASE, NEW, resamples=1_001, seed=3)
    assert low < observed < high
    assert paired_bootstrap(BASE, NEW, resamples=1_001, seed=3) == (observed, low, high)


@pytest.mark.parametrize(
    "kwargs", [{"resamples": 0}, {"confidence": 0.0}, {"confidence": 1.0}, {"confidence": 95}]
)
def test_bootstrap_refuses_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        paired_bootstrap(BASE, NEW, **kwargs)  # type: ignore[arg-type]


def test_bootstrap_refuses_unpaired_input() -> None:
    with pytest.raises(ValueError, match="length"):
        paired_bootstrap([1.0, 2.0], [1.0])


# --- compare -------------------------------------------------------------------------------

#            q0 q1 q2    q3    q4 q5    q6 q7
BASE_RANKS = [1, 2, None, 5, 3, None, 1, 4]
NEW_RANKS = [1, 1, 7, None, 3, None, 2, 2]
# q0 1->1 tie; q1 2->1 win (gained #1); q2 None->7 win; q3 5->None loss;
# q4 3->3 tie; q5 None->None tie; q6 1->2 loss (lost #1); q7 4->2 win.


def test_compare_counts_with_none_handling() -> None:
    sig = compare(BASE_RANKS, NEW_RANKS, resamples=500)
    assert (sig.wins, sig.losses, sig.ties) == (3, 2, 3)
    assert (sig.gained_first, sig.lost_first) == (1, 1)
    # sign test, n=5, min(3, 2) = 2: 2 * (C(5,0) + C(5,1) + C(5,2))/32 = 2 * 16/32, capped at 1
    assert sig.sign_p == 1.0
    # McNemar, n=2: 2 * (1 + 2)/4 > 1, capped
    assert sig.mcnemar_p == 1.0


def test_compare_deltas_by_hand() -> None:
    sig = compare(BASE_RANKS, NEW_RANKS, resamples=2_000)
    # #1 rate: base q0, q6 = 2/8; new q0, q1 = 2/8; change 0
    assert sig.first_delta == pytest.approx(0.0)
    # reciprocal-rank differences: 0, +1/2, +1/7, -1/5, 0, 0, -1/2, +1/4 (from 1/4 to 1/2)
    assert sig.mrr_delta == pytest.approx((0.5 + 1 / 7 - 0.2 - 0.5 + 0.25) / 8)
    assert sig.mrr_delta == pytest.approx(
        mean_reciprocal_rank(NEW_RANKS) - mean_reciprocal_rank(BASE_RANKS)
    )
    assert sig.first_ci[0] <= sig.first_delta <= sig.first_ci[1]
    assert sig.mrr_ci[0] <= sig.mrr_delta <= sig.mrr_ci[1]


def test_compare_self_diff_shows_no_change() -> None:
    sig = compare(BASE_RANKS, BASE_RANKS, resamples=500)
    assert (sig.wins, sig.losses, sig.ties) == (0, 0, len(BASE_RANKS))
    assert sig.sign_p == 1.0 and sig.mcnemar_p == 1.0
    assert (sig.first_delta, sig.first_ci) == (0.0, (0.0, 0.0))
    assert (sig.mrr_delta, sig.mrr_ci) == (0.0, (0.0, 0.0))


def test_compare_every_query_found_first() -> None:
    sig = compare([None] * 10, [1] * 10, resamples=500)
    assert (sig.wins, sig.losses, sig.ties) == (10, 0, 0)
    assert sig.gained_first == 10
    # n=10: 2 * 1/1024
    assert sig.sign_p == pytest.approx(2 / 1024)
    assert sig.mcnemar_p == pytest.approx(2 / 1024)
    assert (sig.first_delta, sig.first_ci) == (1.0, (1.0, 1.0))


def test_compare_found_beats_missed_but_not_first_is_no_gain() -> None:
    sig = compare([None, 3], [9, None], resamples=100)
    assert (sig.wins, sig.losses, sig.ties) == (1, 1, 0)
    assert (sig.gained_first, sig.lost_first) == (0, 0)


def test_compare_is_deterministic() -> None:
    assert compare(BASE_RANKS, NEW_RANKS, seed=5, resamples=1_000) == compare(
        BASE_RANKS, NEW_RANKS, seed=5, resamples=1_000
    )


def test_compare_empty() -> None:
    sig = compare([], [])
    assert (sig.wins, sig.losses, sig.ties) == (0, 0, 0)
    assert sig.sign_p == 1.0 and sig.mcnemar_p == 1.0
    assert sig.first_ci == (0.0, 0.0) and sig.mrr_ci == (0.0, 0.0)


def test_compare_refuses_unpaired_or_bad_ranks() -> None:
    with pytest.raises(ValueError, match="length"):
        compare([1, 2], [1])
    with pytest.raises(ValueError):
        compare([0], [1])


# --- Significance output -------------------------------------------------------------------

EXAMPLE = Significance(
    wins=12,
    ties=985,
    losses=3,
    sign_p=0.035,
    gained_first=10,
    lost_first=1,
    mcnemar_p=0.11,
    first_delta=0.009,
    first_ci=(0.002, 0.016),
    mrr_delta=0.008,
    mrr_ci=(0.002, 0.014),
)


def test_summary_line() -> None:
    assert EXAMPLE.summary() == (
        "wins 12, losses 3, ties 985; sign test p=0.035; McNemar (#1) p=0.11; "
        "Δ#1 +0.9 pts [95% CI +0.2, +1.6]; ΔMRR +0.008 [+0.002, +0.014]"
    )


def test_summary_never_prints_negative_zero() -> None:
    sig = dataclasses.replace(
        EXAMPLE, first_delta=-0.0001, first_ci=(-0.02, 0.0), mrr_delta=-0.0, mrr_ci=(-0.01, 0.0)
    )
    line = sig.summary()
    assert "Δ#1 +0.0 pts [95% CI -2.0, +0.0]" in line
    assert "ΔMRR +0.000 [-0.010, +0.000]" in line
    assert "-0.0 " not in line


def test_significance_json_has_its_keys_lists_and_summary_and_reads_back() -> None:
    data = EXAMPLE.to_json()
    assert list(data) == [
        "wins",
        "ties",
        "losses",
        "sign_p",
        "gained_first",
        "lost_first",
        "mcnemar_p",
        "first_delta",
        "first_ci",
        "mrr_delta",
        "mrr_ci",
        "gained_top10",
        "lost_top10",
        "mcnemar_top10_p",
        "summary",
    ]
    assert data["first_ci"] == [0.002, 0.016]
    assert data["mrr_ci"] == [0.002, 0.014]
    assert data["summary"] == EXAMPLE.summary()
    assert Significance.from_json(json.loads(json.dumps(data))) == EXAMPLE


# --- latency summary -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # sorted 1..5: median 3; p90 at position 0.9 * 4 = 3.6 -> 4 + 0.6 * (5 - 4) = 4.6
        ([1.0, 2.0, 3.0, 4.0, 5.0], (3.0, 4.6)),
        # sorted 1..4: median (2 + 3)/2; p90 at 0.9 * 3 = 2.7 -> 3 + 0.7 * (4 - 3) = 3.7
        ([4.0, 1.0, 3.0, 2.0], (2.5, 3.7)),
        ([10.0], (10.0, 10.0)),
        ([], (0.0, 0.0)),
    ],
)
def test_median_p90_by_hand(values: list[float], expected: tuple[float, float]) -> None:
    assert median_p90(values) == pytest.approx(expected)


# --- The verdict ---------------------------------------------------------------------------


def test_the_verdict_on_first_and_top10_is_mcnemars_exact_test_at_alpha():
    # issue 32's fzy case: more wins than losses (a sign test says "better"), yet #1
    # lost 18 and gained 3: McNemar on #1 says regressed; the top 10 did not move
    base = [1] * 18 + [2] * 3 + [30] * 35 + [1] * 100
    new = [2] * 18 + [1] * 3 + [20] * 35 + [1] * 100
    sig = compare(base, new, resamples=200)
    assert (sig.wins, sig.losses) == (38, 18) and sig.sign_p < 0.05
    assert (sig.gained_first, sig.lost_first) == (3, 18)
    assert sig.first.outcome == "regressed" and sig.first.p == sig.mcnemar_p < 0.05
    assert (sig.gained_top10, sig.lost_top10, sig.top10.outcome) == (0, 0, "no significant change")
    assert sig.verdict_line() == (
        "verdict (McNemar's exact test, two-sided, alpha 0.05): #1 regressed "
        "(3 gained, 18 lost, p=0.0015); top 10 no significant change (0 gained, 0 lost, p=1)"
    )


def test_the_top10_verdict_counts_entering_and_leaving_the_top_10():
    sig = compare([11] * 9 + [None], [10] * 9 + [3], resamples=100)
    assert (sig.gained_top10, sig.lost_top10) == (10, 0)
    assert sig.top10.outcome == "improved" and sig.mcnemar_top10_p == pytest.approx(2 / 1024)
    assert sig.first.outcome == "no significant change"


@pytest.mark.parametrize(
    ("gained", "lost", "p", "outcome"),
    [(10, 1, 0.011, "improved"), (1, 10, 0.011, "regressed"),
     (10, 1, 0.05, "no significant change"), (3, 3, 0.0, "no significant change"),
     (0, 0, 1.0, "no significant change")],
)  # fmt: skip
def test_a_verdict_needs_p_below_alpha_and_a_side(gained, lost, p, outcome):
    assert Verdict(gained, lost, p).outcome == outcome


def test_a_p_value_below_a_floats_range_is_shown_as_a_bound_not_as_zero():
    sig = compare([1] * 1600, [2] * 1600, resamples=10)
    assert sig.mcnemar_p == 0.0  # 2 / 2**1600 underflows
    assert "McNemar (#1) p<1e-300" in sig.summary() and "p=0;" not in sig.summary()
    assert sig.first.phrase("#1") == "#1 regressed (0 gained, 1600 lost, p<1e-300)"


def test_the_paired_standard_error_is_the_spread_of_the_row_differences_in_points():
    # differences 1, 1, -1 and seven 0s: mean 0.1, sample variance 2.9 / 9
    a = [True] * 8 + [False, False]
    b = [True] * 6 + [False, False, False, True]
    assert paired_se(a, b) == pytest.approx(100 * (2.9 / 9 / 10) ** 0.5)
    assert paired_se(a, a) == 0.0  # the same outcome on every row: no doubt at all
    assert paired_se([True], [False]) == 0.0  # one row: no spread to measure
    with pytest.raises(ValueError, match="differ in length"):
        paired_se(a, b[:3])
