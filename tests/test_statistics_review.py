"""The statistics a reviewer signs off on (issue 27): ties on a grid, tiers, no zero width, coverage, units, power."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.statistics import mean_ci, paired_difference, sign_test, tiers, wilcoxon_signed_rank
from bench_plugin.report.statistics.clusters import unit_labels
from bench_plugin.report.statistics.intervals import MIN_UNITS, cluster_t
from bench_plugin.report.statistics.paired import grid_denominator, snap_to_grid
from bench_plugin.report.statistics.power import minimum_detectable_difference
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import CaseRecord

GRADES_A = [7, 6, 5, 8, 8, 5, 4, 5, 4, 8, 7, 7, 5]
GRADES_B = [6, 4, 6, 6, 9, 5, 2, 3, 5, 6, 5, 7, 5]


def stored(grade: int) -> float:
    """A 1-10 judge grade as a record keeps it."""
    return round((grade - 1) / 9, 6)


def case(model: str, task: str, score: float | None, *, run: int = 1, judge: bool = False) -> CaseRecord:
    status = "passed" if score is not None and score >= 0.5 else "failed"
    component = {
        "name": "J" if judge else "S", "value": score, "raw": score, "passed": None if judge else score >= 0.5,
        "detail": "", "judge_output": "Rating: [[7]]" if judge else None, "error": None,
        "usage": {"input_tokens": 100, "output_tokens": 10} if judge else {},
    }
    return CaseRecord(
        nodeid=f"suites/gen.yaml::{task}[{model}-run{run}]", suite="gen", path="suites/gen.yaml", task=task,
        model=model, model_id=model, model_label=model.upper(), provider="offline", run=run, status=status,
        scores={"components": [component], "composite": score, "passed": score is not None and score >= 0.5,
                "threshold": 0.5, "composite_detail": "", "unscored_reason": None},
        composite=score, threshold=0.5,
    )


def suite_of(summary: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = summary["suites"][0]
    return found


# ---------------------------------------------------------------------------------------------------
# 1. ties


def test_equal_grade_differences_tie_whatever_the_storage_rounding() -> None:
    a, b = [stored(g) for g in GRADES_A], [stored(g) for g in GRADES_B]
    assert (a[1] - b[1], a[3] - b[3]) != (pytest.approx(0.0), pytest.approx(0.0))  # 0.222223 / 0.222222 stored
    reference = scipy_stats.wilcoxon(np.array(GRADES_A) - np.array(GRADES_B)).pvalue
    found = wilcoxon_signed_rank(a, b)
    assert found is not None
    assert found.p_value == pytest.approx(reference) and round(found.p_value, 4) == 0.0410
    counted = sign_test(a, b)
    assert counted is not None and (counted.wins_a, counted.wins_b, counted.ties) == (7, 3, 3)


def test_the_report_of_judge_grades_finds_the_tied_wilcoxon_p() -> None:
    records = [case(model, f"t{i:02d}", stored(grade), judge=True)
               for model, grades in (("a", GRADES_A), ("b", GRADES_B)) for i, grade in enumerate(grades)]
    comparisons = suite_of(summarize(records))["comparisons"]
    assert comparisons["test"] == "wilcoxon"
    assert comparisons["pairs"][0]["p_value"] == pytest.approx(0.0410, abs=5e-5)


def test_values_snap_to_their_grid_and_continuous_values_stay() -> None:
    ninths = np.array([stored(g) - stored(h) for g, h in zip(GRADES_A, GRADES_B, strict=True)])
    assert grid_denominator(ninths) == 9
    snapped = snap_to_grid(ninths)
    assert snapped[1] == snapped[3] == 2 / 9
    assert grid_denominator(np.array([0.0, 1.0, -1.0])) == 1
    continuous = np.random.default_rng(1).random(20)
    assert grid_denominator(continuous) is None and snap_to_grid(continuous) is continuous


# ---------------------------------------------------------------------------------------------------
# 2. tiers


def test_no_tier_holds_two_models_the_test_separates() -> None:
    rng = np.random.default_rng(4)
    c_scores = rng.uniform(0.2, 0.8, 30)
    records = [case("a", f"t{i:02d}", 0.95) for i in range(4)]
    records += [case("b", f"t{i:02d}", round(float(score) + 0.1, 6)) for i, score in enumerate(c_scores)]
    records += [case("c", f"t{i:02d}", round(float(score), 6)) for i, score in enumerate(c_scores)]
    comparisons = suite_of(summarize(records))["comparisons"]
    b_c = next(pair for pair in comparisons["pairs"] if {pair["a"], pair["b"]} == {"b", "c"})
    assert b_c["significant"]
    for tier in comparisons["tiers"]:
        assert not ({"b", "c"} <= set(tier))
    assert comparisons["tiers"] == [["a", "b"], ["c"]]


def test_a_model_opens_a_new_tier_when_separated_from_any_member() -> None:
    significant = {("a", "b"): False, ("a", "c"): False, ("b", "c"): True}
    assert tiers({"a": 0.9, "b": 0.6, "c": 0.5}, significant) == [["a", "b"], ["c"]]


# ---------------------------------------------------------------------------------------------------
# 3. no zero width


def test_eight_cases_all_one_are_no_narrower_than_wilson() -> None:
    found = mean_ci([1.0] * 8)
    assert found is not None and found.se == 0.0
    t_squared = scipy_stats.t.ppf(0.975, 7) ** 2  # Wilson's bound for 8 of 8, with t(7) for z: 0.589
    assert found.ci_high == 1.0 and found.ci_low <= 0.676 and found.ci_low == pytest.approx(8 / (8 + t_squared))
    intervals = suite_of(summarize([case("a", f"t{i}", 1.0) for i in range(8)]))["models"][0]["intervals"]
    assert intervals["mean_composite"]["ci_low"] <= 0.676
    assert intervals["pass_rate"]["ci_low"] <= 0.676 and intervals["pass_rate"]["method"] == "wilson"


def test_twelve_passes_over_repeats_are_no_narrower_than_wilson() -> None:
    records = [case("a", f"t{i}", 1.0, run=run) for i in range(6) for run in (1, 2)]
    rate = suite_of(summarize(records))["models"][0]["intervals"]["pass_rate"]
    assert (rate["units"], rate["unit"], rate["method"]) == (6, "task", "cluster-t")
    assert rate["ci_low"] <= 0.758 and rate["ci_high"] == 1.0  # Wilson for 12 of 12: [75.8%, 100%]


def test_a_constant_paired_difference_has_an_interval() -> None:
    found = paired_difference([0.6] * 10, [0.5] * 10)
    assert found is not None and found.ci_low < found.mean_diff < found.ci_high


# ---------------------------------------------------------------------------------------------------
# 4. coverage, and too few units


def simulated(kind: str, groups: int, runs: int, sims: int, rng: np.random.Generator) -> tuple[Any, float]:
    """Per simulation a column of one suite: ``groups`` tasks with ``runs`` runs each, and a task effect."""
    repeat = (groups * runs, sims)
    if kind == "pass rate":  # each task its own chance of passing; mean chance 2 / 3.2
        chance = np.repeat(rng.beta(2.0, 1.2, (groups, sims)), runs, axis=0)
        return (rng.random(repeat) < chance).astype(float), 2.0 / 3.2
    if kind == "iid pass rate":  # no task effect, every case its own unit
        return (rng.random(repeat) < 0.5).astype(float), 0.5
    if kind == "mean":  # half the task's level, half noise of the run
        level = np.repeat(rng.beta(3.0, 2.0, (groups, sims)), runs, axis=0)
        return 0.5 * level + 0.5 * rng.beta(2.0, 2.0, repeat), 0.5 * 0.6 + 0.5 * 0.5
    chance = np.repeat(rng.beta(2.0, 2.0, (groups, sims)), runs, axis=0)  # paired difference: B passes 80% as often
    a, b = rng.random(repeat) < chance, rng.random(repeat) < 0.8 * chance
    return a.astype(float) - b.astype(float), 0.2 * 0.5


@pytest.mark.parametrize(("kind", "groups", "runs"), [
    ("pass rate", 4, 3), ("pass rate", 6, 2), ("pass rate", 10, 1), ("iid pass rate", 4, 1), ("iid pass rate", 10, 1),
    ("mean", 4, 3), ("mean", 10, 1),
    ("difference", 6, 2), ("difference", 10, 1),
])
def test_nominal_95_percent_intervals_cover_at_least_92_percent(kind: str, groups: int, runs: int) -> None:
    rng = np.random.default_rng(27)
    values, truth = simulated(kind, groups, runs, 1000, rng)
    units = np.repeat(np.arange(groups), runs)
    sums = np.stack([np.bincount(units, weights=column, minlength=groups) for column in values.T], axis=1)
    counts = np.full_like(sums, float(runs))
    lower = np.full(values.shape[1], -1.0 if kind == "difference" else 0.0)
    found = cluster_t(sums, counts, lower, np.ones(values.shape[1]))
    assert not np.isnan(found.low).any() and (found.high > found.low).all()
    assert np.mean((found.low <= truth) & (truth <= found.high)) >= 0.92


def test_fewer_than_four_units_are_too_few_to_bound() -> None:
    assert MIN_UNITS == 4
    records = [case(model, f"t{i}", score, run=run) for i, score in enumerate((0.2, 0.9, 0.6)) for run in (1, 2, 3)
               for model in ("a", "b")]
    suite = suite_of(summarize(records))
    clean = suite["models"][0]["intervals"]["mean_composite"]
    assert clean["too_few"] and clean["ci_low"] is None and clean["units"] == 3
    assert "(3 tasks: too few to bound)" in render_markdown(summarize(records))
    assert mean_ci([0.1, 0.5, 0.9]) is not None and np.isnan(mean_ci([0.1, 0.5, 0.9]).ci_low)  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------------
# 5. units


def test_declared_clusters_make_one_unit_and_intervals_say_their_unit() -> None:
    record = SimpleNamespace(cluster="q1")
    rows = [(record, "a", ("t1", 1)), (None, "b", ("t1", 1)), (SimpleNamespace(cluster="q1"), "a", ("t2", 1)),
            (SimpleNamespace(), "a", ("t3", 1))]
    assert unit_labels(rows, clustered=False) == [("cluster", "q1")] * 3 + [("t3", 1)]
    assert unit_labels(rows[3:], clustered=True) == ["t3"]
    ten_by_four = [float(q % 3 == 0) for q in range(10) for _ in range(4)]
    by_question = mean_ci(ten_by_four, clusters=[q for q in range(10) for _ in range(4)])
    naive = mean_ci(ten_by_four)
    assert by_question is not None and naive is not None and by_question.n_clusters == 10
    assert by_question.se > 1.5 * naive.se
    summary = summarize([case("a", f"t{i}", i / 10) for i in range(10)])
    assert suite_of(summary)["models"][0]["intervals"]["mean_composite"]["unit"] == "case"
    assert "| 10 cases |" in render_markdown(summary)


# ---------------------------------------------------------------------------------------------------
# 6. power


def test_the_minimum_detectable_difference_is_shown_beside_not_significant() -> None:
    assert minimum_detectable_difference(0.05, 20) == pytest.approx(
        0.05 * (scipy_stats.t.ppf(0.975, 19) + scipy_stats.t.ppf(0.8, 19)))
    assert minimum_detectable_difference(0.05, 3) is None and minimum_detectable_difference(None, 20) is None
    rng = np.random.default_rng(5)
    records = [case(model, f"t{i:02d}", round(float(rng.uniform(0.3, 0.9)), 6)) for model in ("a", "b")
               for i in range(20)]
    summary = summarize(records)
    (pair,) = suite_of(summary)["comparisons"]["pairs"]
    assert not pair["significant"] and pair["mde"] == pytest.approx(
        minimum_detectable_difference(pair["se"], pair["units"]), abs=1e-6)
    assert re.search(r"not significant; detectable: ±0\.\d{4}", render_markdown(summary))
