"""Krippendorff's alpha (interval): a hand-computed example, the published one, and the edge cases."""

from __future__ import annotations

import pytest

from bench_plugin.report.agreement import krippendorff_alpha_interval


def test_alpha_on_a_hand_computed_example() -> None:
    # two judges, three cases: (1, 2), (3, 3), (4, 5); n = 6 pairable values, mean 3
    # D_o = (1/6) * [ (1-2)^2 + (2-1)^2 + 0 + (4-5)^2 + (5-4)^2 ] = 4/6
    # D_e = sum over ordered pairs of (v_i - v_j)^2 / (n (n - 1)) = 2 * 6 * 10 / 30 = 4
    # alpha = 1 - (4/6) / 4 = 5/6
    assert krippendorff_alpha_interval([(1, 2), (3, 3), (4, 5)]) == pytest.approx(5 / 6)


def test_alpha_reproduces_krippendorffs_published_example() -> None:
    # "Computing Krippendorff's Alpha-Reliability" (2011): 4 coders, 12 units, missing values; interval 0.849
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    units = list(zip(*coders, strict=True))
    assert krippendorff_alpha_interval(units) == pytest.approx(0.849, abs=5e-4)


def test_units_with_one_value_do_not_count_and_missing_values_are_skipped() -> None:
    assert krippendorff_alpha_interval([(1, 2, None), (3, None, 3), (4, 5, None), (9, None, None)]) == (
        pytest.approx(5 / 6))


def test_perfect_agreement_is_one_and_systematic_disagreement_is_negative() -> None:
    assert krippendorff_alpha_interval([(1, 1), (5, 5), (3, 3)]) == 1.0
    assert krippendorff_alpha_interval([(1, 5), (5, 1)]) < 0  # type: ignore[operator]


def test_alpha_is_undefined_without_variation_or_pairs() -> None:
    assert krippendorff_alpha_interval([(4, 4), (4, 4)]) is None
    assert krippendorff_alpha_interval([(4, None), (None, 3)]) is None
    assert krippendorff_alpha_interval([]) is None
