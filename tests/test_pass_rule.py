"""The pass rule: checks and thresholds decide by default, judged scores measure, pass_threshold keeps its meaning."""

from __future__ import annotations

from bench_plugin.scoring.context import ComponentScore
from bench_plugin.scoring.pass_rule import apply_thresholds, decide_pass


def check(name: str, passed: bool) -> ComponentScore:
    return ComponentScore(name=name, value=1.0 if passed else 0.0, passed=passed, detail=f"{name} detail")


def judged(name: str, value: float | None, passed: bool | None = None) -> ComponentScore:
    return ComponentScore(name=name, value=value, passed=passed, detail="judge")


def test_by_default_a_judge_without_threshold_measures_but_does_not_decide() -> None:
    components = [check("C", True), judged("J", 0.2)]
    decision = decide_pass(components, 0.6, None, {}, ["C", "J"])
    assert decision.passed is True
    assert decision.detail == "score 0.6000; passed: C"


def test_by_default_every_check_must_pass() -> None:
    components = [check("C", False), check("L", True), judged("J", 1.0)]
    decision = decide_pass(components, 0.67, None, {}, ["C", "L", "J"])
    assert decision.passed is False
    assert decision.detail == "score 0.6700; failed: C (C detail)"


def test_a_judge_only_case_passes_when_scored_and_says_how_to_make_it_a_test() -> None:
    decision = decide_pass([judged("J", 0.1)], 0.1, None, {}, ["J"])
    assert decision.passed is True
    assert "no scorer has a pass rule: give one a threshold" in decision.detail


def test_a_number_from_any_scorer_measures_until_it_has_a_threshold() -> None:
    own = ComponentScore(name="X", value=0.5, detail="a project's own scorer")
    decision = decide_pass([own], 0.5, None, {}, ["X"])
    assert decision.passed is True and "give one a threshold" in decision.detail
    (ruled,) = apply_thresholds([own], {"X": 1.0})
    assert decide_pass([ruled], 0.5, None, {"X": 1.0}, ["X"]).detail == "score 0.5000; failed: X 0.5 < 1"


def test_a_threshold_makes_a_judge_decide() -> None:
    thresholds = {"J": 0.7}
    components = apply_thresholds([check("C", True), judged("J", 0.5)], thresholds)
    assert components[1].passed is False and components[1].extra["threshold"] == 0.7
    decision = decide_pass(components, 0.75, None, thresholds, ["C", "J"])
    assert decision.passed is False
    assert decision.detail == "score 0.7500; failed: J 0.5 < 0.7"
    passing = apply_thresholds([check("C", True), judged("J", 0.7)], thresholds)
    assert decide_pass(passing, 0.85, None, thresholds, ["C", "J"]).detail == "score 0.8500; passed: C, J >= 0.7"


def test_a_threshold_and_the_graders_own_fail_must_both_hold() -> None:
    (component,) = apply_thresholds([judged("R", 0.9, passed=False)], {"R": 0.5})
    assert component.passed is False  # the grader said fail: a high score does not overrule it
    (component,) = apply_thresholds([judged("R", 0.4, passed=True)], {"R": 0.5})
    assert component.passed is False


def test_pass_threshold_keeps_the_composite_rule_and_ignores_own_verdicts() -> None:
    components = [check("C", False), judged("J", 1.0)]
    decision = decide_pass(components, 0.5, 0.5, {}, ["C", "J"])
    assert decision.passed is True  # 0.5 >= 0.5: the suite chose a composite rule
    assert decision.detail == "score 0.5000 >= threshold 0.5"


def test_pass_threshold_and_a_scorer_threshold_both_hold() -> None:
    thresholds = {"J": 0.8}
    components = apply_thresholds([check("C", True), judged("J", 0.6)], thresholds)
    decision = decide_pass(components, 0.8, 0.5, thresholds, ["C", "J"])
    assert decision.passed is False
    assert decision.detail == "score 0.8000 >= threshold 0.5; failed: J 0.6 < 0.8"


def test_a_composite_below_pass_threshold_fails_though_the_thresholds_held() -> None:
    thresholds = {"J": 0.5}
    components = apply_thresholds([check("C", False), judged("J", 0.6)], thresholds)
    decision = decide_pass(components, 0.3, 0.5, thresholds, ["C", "J"])
    assert (decision.passed, decision.detail) == (False, "score 0.3000 < threshold 0.5; held: J >= 0.5")


def test_a_threshold_counts_for_a_component_the_formula_leaves_out() -> None:
    thresholds = {"S": 0.9}
    components = apply_thresholds([check("C", True), judged("S", 0.5)], thresholds)
    assert decide_pass(components, 1.0, None, thresholds, ["C"]).passed is False


def test_a_check_the_formula_leaves_out_does_not_decide_by_default() -> None:
    assert decide_pass([check("C", True), check("X", False)], 1.0, None, {}, ["C"]).passed is True


def test_a_dropped_component_decides_nothing() -> None:
    thresholds = {"J": 0.9}
    components = apply_thresholds([check("C", False), judged("J", 0.1)], thresholds)
    decision = decide_pass(components, 0.0, None, thresholds, ["C", "J"], dropped=["J"])
    assert decision.detail == "score 0.0000; failed: C (C detail)"


def test_a_threshold_without_a_value_leaves_the_case_unscored() -> None:
    thresholds = {"S": 0.9}
    components = apply_thresholds([check("C", True), judged("S", None)], thresholds)
    decision = decide_pass(components, 1.0, None, thresholds, ["C"])
    assert decision.passed is None
    assert decision.unscored_reason == "S is unscored, so its threshold cannot be decided"


def test_per_turn_components_keep_their_verdicts_and_the_mean_gets_the_threshold() -> None:
    turn = ComponentScore(name="J.t1", value=0.2, turn=1, scorer="J")
    mean, first = apply_thresholds([judged("J", 0.6), turn], {"J": 0.5})
    assert mean.passed is True and first.passed is None
    assert decide_pass([mean, first], 0.6, None, {"J": 0.5}, ["J"]).passed is True
