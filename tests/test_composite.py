"""The composite: formulas without eval, gates, renormalisation, the ClawBench table (seed-systems 4.4)."""

from __future__ import annotations

import pytest

from bench_plugin.scoring.composite import compile_composite
from bench_plugin.suite.spec import CompositeSpec, GateSpec

CLAWBENCH = CompositeSpec(
    formula="0.4*C + 0.3*T + 0.2*B + 0.1*J",
    gates=(GateSpec(component="J", when="C >= 0.9999"),),
    on_missing="renormalize",
)
COMPONENTS = ("C", "T", "B", "J")


def clawbench(**values: float | None) -> tuple[float | None, str]:
    result = compile_composite(CLAWBENCH, COMPONENTS).evaluate(values)
    return result.value, result.detail


# ----------------------------------------------------------------------------- ClawBench, rows 1-3


def test_clawbench_judge_not_usable_divides_by_point_nine() -> None:
    value, detail = clawbench(C=0.5, T=0.8, B=1.0, J=None)
    assert value == pytest.approx((0.4 * 0.5 + 0.3 * 0.8 + 0.2 * 1.0) / 0.9, abs=1e-6)
    assert value == 0.711111
    assert detail == "(0.4*C + 0.3*T + 0.2*B) / 0.9 = 0.7111; J dropped: gate C >= 0.9999 not met"


def test_gate_closed_drops_judge_and_renormalizes() -> None:
    value, detail = clawbench(C=0.5, T=0.8, B=1.0, J=0.9)
    assert value == 0.711111  # the judge's 0.9 does not count while C < 0.9999
    assert detail == "(0.4*C + 0.3*T + 0.2*B) / 0.9 = 0.7111; J dropped: gate C >= 0.9999 not met"


def test_gate_open_uses_all_four_weights() -> None:
    value, detail = clawbench(C=1.0, T=0.8, B=1.0, J=0.9)
    assert value == pytest.approx(0.4 * 1.0 + 0.3 * 0.8 + 0.2 * 1.0 + 0.1 * 0.9)
    assert value == 0.93
    assert detail == "0.4*C + 0.3*T + 0.2*B + 0.1*J = 0.93"


def test_gate_threshold_is_inclusive_at_the_floor() -> None:
    value, _ = clawbench(C=0.9999, T=1.0, B=1.0, J=0.0)
    assert value == pytest.approx(0.4 * 0.9999 + 0.3 + 0.2, abs=1e-6)


def test_gate_on_unscored_component_counts_as_not_met() -> None:
    spec = CompositeSpec(
        formula="0.5*T + 0.5*J", gates=(GateSpec("J", "C >= 0.9999"),), on_missing="renormalize"
    )
    result = compile_composite(spec, COMPONENTS).evaluate({"C": None, "T": 0.6, "J": 1.0})
    assert result.value == 0.6
    assert "J dropped: gate C >= 0.9999 not met (C unscored)" in result.detail


# ----------------------------------------------------------------------------- on_missing


def test_unscored_component_makes_the_composite_unscored_by_default() -> None:
    spec = CompositeSpec(formula="0.5*A + 0.5*B")
    result = compile_composite(spec, ["A", "B"]).evaluate({"A": 1.0, "B": None})
    assert (result.value, result.missing) == (None, ("B",))
    assert "B" in result.detail


def test_component_outside_the_formula_does_not_matter() -> None:
    result = compile_composite(CompositeSpec(formula="A"), ["A", "Info"]).evaluate({"A": 0.4, "Info": None})
    assert (result.value, result.missing) == (0.4, ())


def test_all_terms_dropped_leaves_the_composite_unscored() -> None:
    spec = CompositeSpec(formula="1.0*J", gates=(GateSpec("J", "C > 0.5"),))
    result = compile_composite(spec, ["C", "J"]).evaluate({"C": 0.1, "J": 1.0})
    assert result.value is None
    assert result.detail.startswith("no terms left")


def test_renormalize_keeps_the_scale_of_weights_that_do_not_sum_to_one() -> None:
    spec = CompositeSpec(formula="0.5*A + 0.3*B", on_missing="renormalize")
    result = compile_composite(spec, ["A", "B"]).evaluate({"A": 1.0, "B": None})
    assert result.value == 0.8  # 0.5*1.0 rescaled to the formula's total weight 0.8
    assert result.detail.startswith("(0.5*A) * 0.8/0.5 = 0.8")


# ----------------------------------------------------------------------------- no formula


def test_no_formula_is_the_plain_mean() -> None:
    result = compile_composite(CompositeSpec(), ["A", "B", "C"]).evaluate({"A": 1.0, "B": 0.5, "C": 0.0})
    assert (result.value, result.detail) == (0.5, "mean(A, B, C) = 0.5")


def test_no_formula_with_renormalize_averages_the_scored_components() -> None:
    spec = CompositeSpec(on_missing="renormalize")
    result = compile_composite(spec, ["A", "B", "C"]).evaluate({"A": 1.0, "B": None, "C": 0.5})
    assert result.value == 0.75
    assert result.detail == "mean(A, C) = 0.75; B dropped: unscored"


def test_no_formula_with_unscored_component_is_unscored() -> None:
    result = compile_composite(CompositeSpec(), ["A", "B"]).evaluate({"A": 1.0, "B": None})
    assert result.value is None


# ----------------------------------------------------------------------------- general formulas


def test_min_max_abs_and_parentheses_evaluate() -> None:
    spec = CompositeSpec(formula="min(A, B) * 0.5 + max(A, B) / 2 - abs(-0.1) + (A - B)")
    result = compile_composite(spec, ["A", "B"]).evaluate({"A": 0.8, "B": 0.4})
    assert result.value == pytest.approx(0.2 + 0.4 - 0.1 + 0.4)


def test_result_is_rounded_not_clamped() -> None:
    result = compile_composite(CompositeSpec(formula="2*A"), ["A"]).evaluate({"A": 0.7777777777})
    assert result.value == 1.555556


def test_runtime_division_by_zero_leaves_the_composite_unscored() -> None:
    result = compile_composite(CompositeSpec(formula="A / B"), ["A", "B"]).evaluate({"A": 1.0, "B": 0.0})
    assert result.value is None
    assert "divides by zero" in result.detail


# ----------------------------------------------------------------------------- compile errors


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("0.4*C + 0.6*Tt", "unknown component 'Tt'; did you mean 'T'?"),
        ("C ** 2", "the operator in 'C ** 2' is not allowed"),
        ("C / 0", "divides by zero"),
        ("C / (1 - 1)", "divides by zero"),
        ("__import__('os').system('true')", "is not allowed"),
        ("C.score", "'C.score' is not allowed"),
        ("C if T else B", "is not allowed"),
        ("C > 0.5", "belong in gate conditions"),
        ("C and T", "belong in gate conditions"),
        ("0.4*C +", "a term is missing after it"),
        ("'text'", "is not a number"),
        ("min(C)", "at least two arguments"),
        ("round(C)", "the functions are min, max and abs"),
    ],
)
def test_disallowed_formula_is_rejected_precisely(formula: str, message: str) -> None:
    with pytest.raises(ValueError, match="formula") as info:
        compile_composite(CompositeSpec(formula=formula), ["C", "T", "B"])
    assert message in str(info.value)


def test_gates_need_a_weighted_sum() -> None:
    spec = CompositeSpec(formula="min(C, J)", gates=(GateSpec("J", "C > 0.5"),))
    with pytest.raises(ValueError, match=r"must be a weighted sum such as 0.4\*C"):
        compile_composite(spec, ["C", "J"])


def test_renormalize_needs_a_weighted_sum() -> None:
    spec = CompositeSpec(formula="C * J", on_missing="renormalize")
    with pytest.raises(ValueError, match="weighted sum"):
        compile_composite(spec, ["C", "J"])


def test_weighted_sum_accepts_name_times_weight_and_division() -> None:
    spec = CompositeSpec(formula="C*0.5 + J/2", on_missing="renormalize")
    result = compile_composite(spec, ["C", "J"]).evaluate({"C": 1.0, "J": None})
    assert result.value == 1.0


def test_negative_weights_are_rejected_when_terms_can_drop() -> None:
    spec = CompositeSpec(formula="C - 0.1*J", on_missing="renormalize")
    with pytest.raises(ValueError, match="weights must be positive"):
        compile_composite(spec, ["C", "J"])


def test_gate_for_unknown_component_suggests_a_name() -> None:
    spec = CompositeSpec(formula="0.5*C + 0.5*J", gates=(GateSpec("j", "C > 0.5"),))
    with pytest.raises(ValueError, match="did you mean 'J'"):
        compile_composite(spec, ["C", "J"])


def test_gate_condition_with_unknown_name_is_rejected() -> None:
    spec = CompositeSpec(formula="0.5*C + 0.5*J", gates=(GateSpec("J", "Cc > 0.5"),))
    with pytest.raises(ValueError, match=r"gate on J: 'Cc > 0.5': unknown component 'Cc'"):
        compile_composite(spec, ["C", "J"])


def test_gate_conditions_accept_boolean_logic() -> None:
    spec = CompositeSpec(
        formula="0.5*C + 0.5*J", gates=(GateSpec("J", "C >= 0.5 and not (T < 0.2 or B == 0)"),)
    )
    composite = compile_composite(spec, ["C", "T", "B", "J"])
    assert composite.evaluate({"C": 1.0, "T": 0.5, "B": 1.0, "J": 0.0}).dropped == ()
    assert composite.evaluate({"C": 1.0, "T": 0.1, "B": 1.0, "J": 0.0}).dropped == ("J",)


def test_unknown_on_missing_is_rejected() -> None:
    with pytest.raises(ValueError, match="on_missing"):
        compile_composite(CompositeSpec(on_missing="skip"), ["A"])


def test_unscored_component_behind_a_closed_gate_does_not_unscore_the_case() -> None:
    """A wrong answer (C=0) with an unreadable judge is still a wrong answer, not 'unscored'."""
    spec = CompositeSpec(formula="0.4*C + 0.3*T + 0.2*B + 0.1*J", gates=(GateSpec("J", "C >= 0.9999"),))
    composite = compile_composite(spec, ["C", "T", "B", "J"])
    result = composite.evaluate({"C": 0.0, "T": 1.0, "B": 1.0, "J": None})
    assert result.value == pytest.approx(0.5 / 0.9, abs=1e-6)
    assert composite.evaluate({"C": 1.0, "T": 1.0, "B": 1.0, "J": None}).value is None


@pytest.mark.parametrize("formula", ["C * 1e308 * 10", "max(C, T) * 1e308 / 0.1", "1e308 * C + 1e308 * T"])
def test_a_composite_that_is_not_a_finite_number_leaves_the_case_unscored(formula: str) -> None:
    """An overflowing composite wrote Infinity into results.jsonl and summary.json (not JSON), and a mean of inf."""
    result = compile_composite(CompositeSpec(formula=formula), ("C", "T")).evaluate({"C": 2.0, "T": 1.0})
    assert result.value is None and "not a finite number" in result.detail
