"""The statistics behind "model A beats model B", checked against hand-worked and published values."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from bench_plugin.report.statistics import (
    PairKey,
    PairwiseGame,
    bradley_terry,
    fastchat_win_rates,
    flakiness_label,
    holm_adjust,
    mean_ci,
    paired_difference,
    pass_at_k,
    pass_hat_k,
    position_bias,
    sign_test,
    significant_pairs,
    tiers,
    wilcoxon_signed_rank,
    wilson_interval,
)
from bench_plugin.report.statistics.plain import total

# ---------------------------------------------------------------------------------------------------
# mean_ci


def test_mean_ci_drops_none_and_nan_and_reports_what_it_used() -> None:
    """None and NaN are no value: dropped, not zero; nothing left gives None."""
    result = mean_ci([1.0, None, 0.0, math.nan, 1.0, 0.0])
    assert result is not None
    assert result.mean == 0.5 and result.n == 4 and result.n_clusters == 4
    assert result.ci_low <= 0.5 <= result.ci_high
    assert mean_ci([None, math.nan]) is None
    assert mean_ci([]) is None


def test_mean_ci_of_one_value_has_no_spread() -> None:
    """One case has a mean but no spread: SE and CI are NaN."""
    result = mean_ci([0.7])
    assert result is not None and result.mean == 0.7
    assert math.isnan(result.se) and math.isnan(result.ci_low) and math.isnan(result.ci_high)


def test_mean_ci_is_the_t_interval_of_the_textbook_se_and_shrinks_with_n() -> None:
    """One case per unit: SE = sd / sqrt(n), the interval mean +- t(n-1) SE; 16x the cases, a quarter the width."""
    rng = np.random.default_rng(7)
    small = rng.normal(0.0, 1.0, 50).tolist()
    large = rng.normal(0.0, 1.0, 800).tolist()
    small_ci, large_ci = mean_ci(small), mean_ci(large)
    assert small_ci is not None and large_ci is not None
    for values, result in ((small, small_ci), (large, large_ci)):
        textbook = float(np.std(values, ddof=1)) / math.sqrt(len(values))
        assert result.se == pytest.approx(textbook, rel=1e-9)
        half = scipy_stats.t.ppf(0.975, len(values) - 1) * textbook
        assert (result.ci_low, result.ci_high) == pytest.approx((result.mean - half, result.mean + half), rel=1e-9)
    ratio = (large_ci.ci_high - large_ci.ci_low) / (small_ci.ci_high - small_ci.ci_low)
    assert 0.18 < ratio < 0.35


def test_clustered_mean_ci_counts_repeated_runs_of_a_task_once() -> None:
    """Whole tasks are the units: five identical runs of a task weigh as one task."""
    task_scores = [0.0, 1.0, 0.5, 1.0, 0.0, 0.25, 0.75, 1.0]
    repeats = 5
    values = [score for score in task_scores for _ in range(repeats)]  # every run of a task agrees
    clusters = [task for task in range(len(task_scores)) for _ in range(repeats)]
    naive = mean_ci(values)
    clustered = mean_ci(values, clusters=clusters)
    per_task = mean_ci(task_scores)
    assert naive is not None and clustered is not None and per_task is not None
    assert clustered.n == 40 and clustered.n_clusters == 8
    # equal-size clusters of identical copies: the CR1 interval is the one of the task means
    assert clustered.se == pytest.approx(per_task.se)
    assert (clustered.ci_low, clustered.ci_high) == pytest.approx((per_task.ci_low, per_task.ci_high))
    assert clustered.se > 1.8 * naive.se  # about sqrt(5) wider than pretending 40 independent cases


def test_mean_ci_rejects_bad_arguments() -> None:
    """Misaligned clusters and a confidence outside (0, 1) are errors."""
    with pytest.raises(ValueError, match="clusters"):
        mean_ci([1.0, 2.0], clusters=["a"])
    with pytest.raises(ValueError, match="confidence"):
        mean_ci([1.0, 2.0], confidence=1.0)


# ---------------------------------------------------------------------------------------------------
# paired_difference


def test_two_identical_models_are_not_separated() -> None:
    """Identical scores: difference 0, CI containing 0, p = 1."""
    scores = np.random.default_rng(2).uniform(0, 1, 60).tolist()
    result = paired_difference(scores, scores)
    assert result is not None
    assert result.mean_diff == 0.0 and result.p_value == 1.0
    assert result.ci_low <= 0.0 <= result.ci_high


def test_two_draws_of_the_same_model_have_a_ci_containing_zero() -> None:
    """Two draws from one pass rate are not separated."""
    rng = np.random.default_rng(4)
    a = rng.binomial(1, 0.6, 80).astype(float).tolist()
    b = rng.binomial(1, 0.6, 80).astype(float).tolist()
    result = paired_difference(a, b, seed=4)
    assert result is not None
    assert result.ci_low <= 0.0 <= result.ci_high and result.p_value > 0.05


def test_a_truly_better_model_is_separated() -> None:
    """A model 0.3 better per case is separated: CI above 0, p below 0.01."""
    rng = np.random.default_rng(1)
    b = rng.normal(0.0, 1.0, 100)
    a = b + 0.3 + rng.normal(0.0, 0.5, 100)
    result = paired_difference(a.tolist(), b.tolist(), seed=1)
    assert result is not None
    assert result.p_method == "monte-carlo"
    assert result.ci_low > 0.0 and result.p_value < 0.01
    assert result.mean_diff == pytest.approx(float((a - b).mean()))


def test_the_permutation_p_value_is_exact_for_few_cases() -> None:
    """With few cases every sign pattern is enumerated, matching hand counts."""
    # differences 1, 2, 3: of the 8 sign patterns only +++ and --- reach |sum| = 6 -> p = 2/8
    result = paired_difference([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    assert result is not None and result.p_method == "exact" and result.p_value == 0.25
    # differences 1, 1, 1, -1 (observed |sum| = 2): over the 16 sign patterns |sum| is 4 twice,
    # 2 eight times and 0 six times -> p = 10/16
    result = paired_difference([1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0])
    assert result is not None and result.p_value == pytest.approx(10 / 16)


def test_paired_difference_keeps_only_cases_both_models_finished() -> None:
    """Only cases both models finished are compared; lengths must match."""
    result = paired_difference([1.0, None, 3.0, 2.0, math.nan], [0.0, 1.0, None, 1.0, 2.0])
    assert result is not None
    assert result.n == 2 and result.mean_a == 1.5 and result.mean_b == 0.5 and result.mean_diff == 1.0
    assert paired_difference([None, 1.0], [1.0, None]) is None
    with pytest.raises(ValueError, match="paired"):
        paired_difference([1.0], [1.0, 2.0])


def test_paired_difference_flips_whole_clusters() -> None:
    """With clusters, signs flip per task, so two tasks cannot give p below 1/2."""
    # two tasks, three runs each: only 4 sign patterns, so the smallest possible p is 2/4
    a = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    b = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    by_case = paired_difference(a, b)
    by_task = paired_difference(a, b, clusters=["t1", "t1", "t1", "t2", "t2", "t2"])
    assert by_case is not None and by_task is not None
    assert by_case.p_value == pytest.approx(2 / 64) and by_case.n_clusters == 6
    assert by_task.p_value == 0.5 and by_task.n_clusters == 2 and by_task.p_method == "exact"


# ---------------------------------------------------------------------------------------------------
# rank tests


def test_wilcoxon_matches_the_exact_null_distribution_enumerated_by_hand() -> None:
    """Wilcoxon's exact p equals a brute-force count over all 2^10 sign patterns."""
    a = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 0.0]
    b = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0]  # differences 1..9 and -10
    result = wilcoxon_signed_rank(a, b)
    assert result is not None
    assert result.statistic == 10.0  # W- = 10, W+ = 45
    # exact two-sided p: 2 * P(W- <= 10) with each of the 2^10 sign patterns equally likely
    at_most = sum(
        1
        for signs in itertools.product((0, 1), repeat=10)
        if sum(rank for rank, negative in zip(range(1, 11), signs, strict=True) if negative) <= 10
    )
    assert result.p_value == pytest.approx(2 * at_most / 2**10)
    assert result.n == 10 and result.n_nonzero == 10


def test_wilcoxon_and_sign_test_give_p_one_when_nothing_differs() -> None:
    """All-zero differences give p = 1.0, not NaN or an error."""
    same = [3.0, 4.0, 5.0]
    wilcoxon = wilcoxon_signed_rank(same, same)
    sign = sign_test(same, same)
    assert wilcoxon is not None and wilcoxon.p_value == 1.0 and wilcoxon.n_nonzero == 0
    assert sign is not None and sign.p_value == 1.0 and sign.ties == 3
    assert wilcoxon_signed_rank([None], [1.0]) is None and sign_test([], []) is None


def test_sign_test_is_the_two_sided_binomial() -> None:
    """8 wins and 2 losses (a tie and a missing case left out) give p = 0.109375."""
    a = [5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 3, None]
    b = [4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 3, 1]
    result = sign_test([float(x) if x is not None else None for x in a], [float(x) for x in b])
    assert result is not None
    assert (result.wins_a, result.wins_b, result.ties, result.n) == (8, 2, 1, 11)
    # 2 * (C(10,8) + C(10,9) + C(10,10)) / 2^10 = 2 * 56 / 1024
    assert result.p_value == pytest.approx(0.109375)


# ---------------------------------------------------------------------------------------------------
# Holm and tiers


def test_holm_on_a_textbook_example() -> None:
    """Holm's step-down on a worked example; missing p-values stay None."""
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max so far 0.06
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, None, 0.4, math.nan]) == [0.8, None, 0.8, None]
    assert holm_adjust([0.9, 0.8]) == [1.0, 1.0]
    assert holm_adjust([]) == []
    with pytest.raises(ValueError):
        holm_adjust([1.5])


def test_significant_pairs_applies_holm() -> None:
    """Pairs are judged on Holm-adjusted p-values unless told otherwise."""
    pvalues: dict[PairKey, float | None] = {("A", "B"): 0.02, ("A", "C"): 0.01, frozenset({"B", "C"}): None}
    # Holm: 0.01 * 2 = 0.02, then max(0.02, 0.02 * 1) = 0.02 -> both at or below 0.05
    assert significant_pairs(pvalues) == {
        frozenset({"A", "B"}): True,
        frozenset({"A", "C"}): True,
        frozenset({"B", "C"}): False,
    }
    # Holm: 0.03 * 2 = 0.06, then max(0.06, 0.04 * 1) = 0.06 -> neither survives; unadjusted both do
    close = {("A", "B"): 0.04, ("A", "C"): 0.03}
    assert significant_pairs(close) == {frozenset({"A", "B"}): False, frozenset({"A", "C"}): False}
    assert all(significant_pairs(close, adjust="none").values())
    with pytest.raises(ValueError, match="more than once"):
        significant_pairs({("A", "B"): 0.1, ("B", "A"): 0.2})


def test_tiers_grow_greedily_from_the_best_model() -> None:
    """A model joins a tier unless it differs from that tier's top model."""
    means = {"A": 0.90, "B": 0.85, "C": 0.60, "D": 0.55, "E": None}
    significant: dict[PairKey, bool] = {
        ("A", "B"): False,
        ("A", "C"): True,
        ("A", "D"): True,
        ("B", "C"): False,  # B and C are close, but C is compared with its tier's top, A
        frozenset({"B", "D"}): True,
        ("D", "C"): False,
    }
    assert tiers(means, significant) == [["A", "B"], ["C", "D"]]
    # a pair nobody tested is not separated; an unrated model is left out
    assert tiers({"A": 1.0, "B": 0.5, "C": math.nan}, {}) == [["A", "B"]]
    assert tiers({"B": 0.5, "A": 0.5}, {("A", "B"): True}) == [["A"], ["B"]]
    with pytest.raises(ValueError, match="conflicting"):
        tiers(means, {("A", "B"): True, ("B", "A"): False})


# ---------------------------------------------------------------------------------------------------
# pass@k and pass^k


def test_pass_at_k_and_pass_hat_k_match_brute_force_enumeration() -> None:
    """pass@k and pass^k equal the fraction of k-subsets with any / all passing."""
    for n in range(1, 7):
        for c in range(n + 1):
            samples = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(samples, k))
                any_pass = sum(1 for subset in subsets if any(subset)) / len(subsets)
                all_pass = sum(1 for subset in subsets if all(subset)) / len(subsets)
                assert pass_at_k(n, c, k) == pytest.approx(any_pass, abs=1e-12), (n, c, k)
                assert pass_hat_k(n, c, k) == pytest.approx(all_pass, abs=1e-12), (n, c, k)


def test_pass_at_k_is_stable_where_the_binomials_overflow_floats() -> None:
    """The product forms match exact rational binomials where C(n, k) overflows floats."""
    n, c, k = 2000, 37, 100
    exact_at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    exact_hat = Fraction(math.comb(c, k), math.comb(n, k)) if c >= k else Fraction(0)
    assert pass_at_k(n, c, k) == pytest.approx(float(exact_at), rel=1e-12)
    assert pass_hat_k(n, c, k) == float(exact_hat) == 0.0
    assert pass_hat_k(n, 1990, 100) == pytest.approx(
        float(Fraction(math.comb(1990, 100), math.comb(n, 100))), rel=1e-12
    )
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3) and pass_hat_k(10, 3, 1) == pytest.approx(0.3)
    for bad in ((0, 0, 1), (5, 6, 1), (5, 2, 0), (5, 2, 6)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


# ---------------------------------------------------------------------------------------------------
# Wilson and flakiness


def test_wilson_interval_matches_the_table_values() -> None:
    """8/10 at 95% is 0.4902..0.9433; 0/10 reaches 0.2775."""
    interval = wilson_interval(8, 10)
    assert interval is not None
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.4902, 0.9433)
    none_passed = wilson_interval(0, 10)
    assert none_passed is not None
    assert none_passed.low == 0.0 and round(none_passed.high, 4) == 0.2775  # z^2 / (n + z^2)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_flakiness_labels_and_their_intervals() -> None:
    """All passed, none passed, or flaky, each with its Wilson interval."""
    stable = flakiness_label(3, 3)
    failing = flakiness_label(0, 4)
    flaky = flakiness_label(2, 5)
    assert stable is not None and failing is not None and flaky is not None
    assert (stable.label, failing.label, flaky.label) == ("stable-pass", "stable-fail", "flaky")
    assert round(stable.interval.low, 4) == 0.4385  # three passes out of three prove little
    assert flaky.interval.rate == 0.4
    assert flakiness_label(0, 0) is None


# ---------------------------------------------------------------------------------------------------
# Bradley-Terry


def test_a_75_percent_winner_is_400_log10_3_points_ahead() -> None:
    """Winning 3 of 4 is 400 * log10(3) = 190.85 points on the Elo-like scale."""
    comparisons = [("strong", "weak", 1.0)] * 300 + [("strong", "weak", 0.0)] * 100
    result = bradley_terry(comparisons, n_boot=100, seed=0)
    ratings = result.as_dict()
    assert ratings["strong"] - ratings["weak"] == pytest.approx(400 * math.log10(3), abs=0.01)  # 190.85
    assert (ratings["strong"] + ratings["weak"]) / 2 == pytest.approx(1000.0)
    assert result.win_probability("strong", "weak") == pytest.approx(0.75, abs=1e-5)
    strong = result.ratings[0]
    assert strong.model == "strong" and strong.games == 400
    assert strong.ci_low < strong.rating < strong.ci_high


def test_bradley_terry_solves_the_score_equations_with_ties_as_half_wins() -> None:
    """At the fit, each model's expected score equals its actual score (ties half)."""
    comparisons = (
        [("A", "B", 1.0)] * 6
        + [("B", "A", 1.0)] * 3
        + [("A", "B", 0.5)] * 2
        + [("B", "C", 1.0)] * 5
        + [("C", "B", 1.0)] * 4
        + [("A", "C", 1.0)] * 7
        + [("A", "C", 0.0)] * 2
        + [("C", "A", 0.5)]
    )
    result = bradley_terry(comparisons, n_boot=0)
    ratings = result.as_dict()
    # at the MLE each model's expected score equals its actual score (a tie is half a win)
    for model in ratings:
        actual = expected = 0.0
        for a, b, outcome in comparisons:
            if model == a:
                actual += outcome
                expected += result.win_probability(a, b)
            elif model == b:
                actual += 1 - outcome
                expected += result.win_probability(b, a)
        assert expected == pytest.approx(actual, abs=1e-4), model
    assert ratings["A"] > ratings["B"] > ratings["C"]
    assert math.isnan(result.ratings[0].ci_low)


def test_bradley_terry_anchor_ties_dropped_outcomes_and_errors() -> None:
    """Even records rate equal; an anchor pins one model; None outcomes are dropped."""
    even = bradley_terry([("A", "B", 1.0), ("A", "B", 0.0), ("A", "B", 0.5), ("B", "A", 0.5)], n_boot=0)
    assert even.as_dict() == pytest.approx({"A": 1000.0, "B": 1000.0})
    anchored = bradley_terry(
        [("x", "y", 1.0)] * 3 + [("x", "y", 0.0), ("x", "y", None)], n_boot=0, anchor="y", init_rating=1114.0
    )
    assert anchored.as_dict()["y"] == 1114.0 and anchored.n_comparisons == 4
    assert anchored.as_dict()["x"] == pytest.approx(1114.0 + 400 * math.log10(3), abs=0.01)
    assert bradley_terry([]).ratings == ()
    with pytest.raises(ValueError, match="itself"):
        bradley_terry([("A", "A", 1.0)])
    with pytest.raises(ValueError, match="anchor"):
        bradley_terry([("A", "B", 1.0)], anchor="C")


def test_bradley_terry_bootstrap_is_seeded_and_narrows_with_more_games() -> None:
    """Seeded bootstrap CIs narrow about 1/sqrt(16) with 16x the games."""
    few = [("A", "B", 1.0)] * 15 + [("A", "B", 0.0)] * 5
    many = few * 16
    few_result = bradley_terry(few, n_boot=150, seed=9)
    many_result = bradley_terry(many, n_boot=150, seed=9)
    assert few_result == bradley_terry(few, n_boot=150, seed=9)
    width_few = few_result.ratings[0].ci_high - few_result.ratings[0].ci_low
    width_many = many_result.ratings[0].ci_high - many_result.ratings[0].ci_low
    assert 0.15 < width_many / width_few < 0.4  # about 1/sqrt(16)
    # an undefeated model stays finite
    sweep = bradley_terry([("A", "B", 1.0)] * 5, n_boot=0).as_dict()
    assert math.isfinite(sweep["A"]) and sweep["A"] > sweep["B"] + 1000


def test_bradley_terry_bootstrap_draws_whole_clusters_when_games_go_together() -> None:
    """Three runs of a task agree: drawn game by game, the interval claimed three times the tasks there are."""
    per_task = [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]  # A's result on 8 tasks, the same in each of 3 runs
    games = [("A", "B", outcome) for outcome in per_task for _ in range(3)]
    tasks = [task for task in range(8) for _ in range(3)]
    by_game = bradley_terry(games, n_boot=400, seed=3).ratings[0]
    by_task = bradley_terry(games, n_boot=400, seed=3, clusters=tasks).ratings[0]
    assert by_task.rating == by_game.rating
    ratio = (by_task.ci_high - by_task.ci_low) / (by_game.ci_high - by_game.ci_low)
    assert 1.4 < ratio < 2.2  # about sqrt(3)
    lone = bradley_terry(games[:3], n_boot=50, clusters=[0, 0, 0]).ratings[0]
    assert math.isnan(lone.ci_low) and math.isnan(lone.ci_high), "one task drawn again is no interval"


def test_a_virtual_tie_keeps_a_clean_sweep_finite_and_moves_big_samples_little() -> None:
    sweep = bradley_terry([("A", "C", 1.0), ("B", "C", 1.0), ("A", "B", 0.5)], n_boot=200, prior_games=1.0)
    ratings = sweep.as_dict()
    assert ratings["A"] == pytest.approx(ratings["B"]) and 150 < ratings["A"] - ratings["C"] < 600
    assert all(math.isfinite(entry.ci_low) and entry.ci_high < 1500 for entry in sweep.ratings)
    many = [("strong", "weak", 1.0)] * 300 + [("strong", "weak", 0.0)] * 100
    gap = bradley_terry(many, n_boot=0, prior_games=1.0).as_dict()
    assert gap["strong"] - gap["weak"] == pytest.approx(400 * math.log10(3), abs=2.0)  # 190.85 without it


# ---------------------------------------------------------------------------------------------------
# FastChat pairwise win rates and position bias

HAND_GAMES = [
    PairwiseGame("A", "B", "model_1", "model_1"),  # A wins in both orders: A win, B loss
    PairwiseGame("A", "B", "model_2", "model_2"),  # B wins in both orders
    PairwiseGame("A", "B", "model_1", "model_2"),  # each order picks the answer shown first: tie
    PairwiseGame("A", "B", "tie", "tie"),  # tie
    PairwiseGame("A", "B", "model_1", "tie"),  # a win in one order, a tie in the other: tie
    PairwiseGame("A", "B", "tie", "model_1"),  # first order tie: tie
    PairwiseGame("A", "C", "model_1", "model_1"),  # A win, C loss
    PairwiseGame("B", "C", "error", "model_1"),  # failed judge call: dropped
    PairwiseGame("C", "B", "model_1", "error"),  # failed judge call: dropped
]


def test_fastchat_win_rates_on_hand_built_games() -> None:
    """FastChat's rules: a win needs both orders, disagreement is a tie, errors drop."""
    rows = fastchat_win_rates(HAND_GAMES)
    table = {row.model: (row.win, row.loss, row.tie) for row in rows}
    # A: games 1, 7 won, 2 lost, 3-6 tied; B: 2 won, 1 lost, 3-6 tied; C: 7 lost
    assert table == {"A": (2, 1, 4), "B": (1, 1, 4), "C": (0, 1, 0)}
    assert [row.model for row in rows] == ["A", "B", "C"]
    a, b, c = rows
    assert (a.win_rate, a.loss_rate, a.win_rate_adjusted) == pytest.approx((2 / 7, 1 / 7, 4 / 7))
    assert (b.win_rate, b.loss_rate, b.win_rate_adjusted) == pytest.approx((1 / 6, 1 / 6, 0.5))
    assert (c.win_rate, c.loss_rate, c.win_rate_adjusted) == (0.0, 1.0, 0.0)
    # pairwise-baseline: only games with the baseline, whose own row is removed
    against_b = fastchat_win_rates(HAND_GAMES, baseline="B")
    assert [(row.model, row.win, row.loss, row.tie) for row in against_b] == [("A", 1, 1, 4)]
    assert fastchat_win_rates(HAND_GAMES, baseline="nobody") == []


def test_fastchat_rows_and_games_are_interchangeable_and_verdicts_checked() -> None:
    """JSONL rows and PairwiseGame values give the same table; bad verdicts fail."""
    rows = [
        {
            "model_1": g.model_1,
            "model_2": g.model_2,
            "g1_winner": g.g1_winner,
            "g2_winner": g.g2_winner,
            "question_id": index,
        }
        for index, g in enumerate(HAND_GAMES)
    ]
    assert fastchat_win_rates(rows) == fastchat_win_rates(HAND_GAMES)
    with pytest.raises(ValueError, match="verdict"):
        fastchat_win_rates([{"model_1": "A", "model_2": "B", "g1_winner": "A", "g2_winner": "A"}])


def test_position_bias_counts_single_order_verdicts() -> None:
    """Each non-tie single-order verdict counts toward first- or second-shown."""
    # first shown picked: g1 of games 1, 3, 5, 7, 9 and g2 of games 2, 3 -> 7
    # second shown picked: g2 of games 1, 6, 7, 8 and g1 of game 2 -> 5
    bias = position_bias(HAND_GAMES)
    assert (bias.first, bias.second, bias.n) == (7, 5, 12) and bias.rate == pytest.approx(7 / 12)
    strict = position_bias(HAND_GAMES, drop_error_games=True)  # games 8 and 9 go
    assert (strict.first, strict.second, strict.n) == (6, 4, 10)
    empty = position_bias([PairwiseGame("A", "B", "tie", "tie")])
    assert empty.n == 0 and empty.rate is None and empty.p_value == 1.0


def _dataset_dir() -> Path | None:
    candidates = [
        Path(__file__).resolve().parents[2] / "shared" / "datasets" / "mt_bench_pairwise",
        Path("/work/shared/datasets/mt_bench_pairwise"),
    ]
    return next((path for path in candidates if (path / "reference").is_dir()), None)


def _reference_table(path: Path) -> dict[str, tuple[int, int, int, float, float, float]]:
    lines = path.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if line.strip() == "model") + 1
    table = {}
    for line in lines[start:]:
        if line.strip():
            name, win, loss, tie, rate, loss_rate, adjusted = line.split()
            table[name] = (int(win), int(loss), int(tie), float(rate), float(loss_rate), float(adjusted))
    return table


def test_fastchat_show_result_reference_tables_are_reproduced() -> None:
    """FastChat show_result.py's printed tables for the shared MT-Bench run, to 6 decimals."""
    folder = _dataset_dir()
    if folder is None:
        pytest.skip("shared/datasets/mt_bench_pairwise is not beside this checkout")
    path = folder / "model_judgment" / "gpt-4_pair.phi-3-vs-phi-3-dpo.jsonl"
    games = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(games) == 75
    for mode, baseline in (
        ("show_result.pairwise-all.txt", None),
        ("show_result.pairwise-baseline.baseline-phi-3.txt", "phi-3"),
    ):
        expected = _reference_table(folder / "reference" / mode)
        rows = fastchat_win_rates(games, baseline=baseline)
        assert list(expected) == [row.model for row in rows]
        for row in rows:
            got = (
                row.win,
                row.loss,
                row.tie,
                round(row.win_rate, 6),
                round(row.loss_rate, 6),
                round(row.win_rate_adjusted, 6),
            )
            assert got == expected[row.model], mode
    # README's verdict-pair table: first shown picked = g1 "model_1" (18+16+5+1) + g2 "model_2"
    # (16+20+3) = 79; second shown = g1 "model_2" (2+20+1) + g2 "model_1" (18+2) = 43
    bias = position_bias(games)
    assert (bias.first, bias.second, bias.n) == (79, 43, 122)
    assert bias.p_value < 0.01


def test_dollar_totals_carry_no_float_noise() -> None:
    assert total([0.07, 0.07, 0.07]) == 0.21 and repr(total([0.1] * 3)) == "0.3"
    assert total([2, None, 3]) == 5 and isinstance(total([2, 3]), int) and total([None]) is None
