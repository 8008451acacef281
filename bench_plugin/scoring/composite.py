"""The composite score: a formula over named components, with gates and renormalisation.

Formulas and gate conditions are compiled by ``formula.py`` (an ``ast`` allow-list, never ``eval``).

When a term can be dropped (a closed gate, or an unscored component with
``on_missing: renormalize``) the formula must be a weighted sum, so that "drop the term and
rescale the rest" has one meaning: ``(0.4*C + 0.3*T + 0.2*B) / 0.9`` for ClawBench.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bench_plugin.scoring.formula import Compiled, compile_expression, constant_value, name_hint
from bench_plugin.scoring.options import repeated
from bench_plugin.suite.spec import CompositeSpec


def _fmt(value: float) -> str:
    return format(value, ".4g")


@dataclass(frozen=True)
class Term:
    """One ``weight*Name`` term of a weighted-sum formula."""

    weight: float
    component: str

    @property
    def text(self) -> str:
        """The term as the composite's detail shows it: ``0.4*C``, or ``C`` for a weight of 1."""
        return self.component if self.weight == 1 else f"{_fmt(self.weight)}*{self.component}"


@dataclass(frozen=True)
class Gate:
    """A compiled gate: ``component`` counts only when ``condition`` holds."""

    component: str
    text: str
    condition: Compiled
    names: tuple[str, ...]


@dataclass(frozen=True)
class CompositeResult:
    """The composite of one case.

    ``value`` is None when the case is unscored; ``detail`` shows the terms used and why others were
    dropped; ``missing`` names the components the composite needed that had no value; ``why_dropped``
    says, for each of ``dropped``, why (``gate C >= 0.9999 not met``), so a failure reason can say so.
    """

    value: float | None
    detail: str
    missing: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    why_dropped: Mapping[str, str] = field(default_factory=dict)


def _linear_terms(node: ast.expr) -> list[Term] | None:
    """Read ``w1*A + w2*B + ...`` (also ``A*w``, ``A/w``, ``A``); None when the formula is not that."""
    if isinstance(node, ast.Name):
        return [Term(1.0, node.id)]
    if not isinstance(node, ast.BinOp):
        return None
    if isinstance(node.op, (ast.Add, ast.Sub)):
        return _sum_terms(node.left, node.right, negate_right=isinstance(node.op, ast.Sub))
    if isinstance(node.op, (ast.Mult, ast.Div)):
        return _scaled_term(node)
    return None


def _sum_terms(left_node: ast.expr, right_node: ast.expr, *, negate_right: bool) -> list[Term] | None:
    """The terms of ``left + right`` (or ``left - right``, the right ones negated)."""
    left, right = _linear_terms(left_node), _linear_terms(right_node)
    if left is None or right is None:
        return None
    if negate_right:
        right = [Term(-term.weight, term.component) for term in right]
    return left + right


def _scaled_term(node: ast.BinOp) -> list[Term] | None:
    """``w*A``, ``A*w`` or ``A/w`` as one term; None for ``w/A`` or a product of two names."""
    dividing = isinstance(node.op, ast.Div)
    for weight_node, name_node in ((node.left, node.right), (node.right, node.left)):
        weight = constant_value(weight_node)
        if weight is None or not isinstance(name_node, ast.Name):
            continue
        if not dividing:
            return [Term(weight, name_node.id)]
        return None if weight_node is node.left else [Term(1 / weight, name_node.id)]
    return None


def _unscored_inputs(gate: Gate, values: Mapping[str, float | None]) -> list[str]:
    return [name for name in gate.names if values.get(name) is None]


def _holds(gate: Gate, values: Mapping[str, float | None]) -> bool:
    """Whether the gate's condition holds (its inputs all scored)."""
    return bool(gate.condition({name: float(values[name] or 0.0) for name in gate.names}))


def _gate_problem(gate: Gate, values: Mapping[str, float | None]) -> str | None:
    """Why the gate keeps its component out (inputs unscored, condition not met), or None when it is open."""
    unscored = _unscored_inputs(gate, values)
    if unscored:
        return f"gate {gate.text} not met ({', '.join(unscored)} unscored)"
    return None if _holds(gate, values) else f"gate {gate.text} not met"


class Composite:
    """A compiled composite, ready to evaluate against each case's component values."""

    def __init__(
        self,
        spec: CompositeSpec,
        components: Sequence[str],
        *,
        formula: Compiled | None,
        terms: tuple[Term, ...] | None,
        gates: tuple[Gate, ...],
        referenced: tuple[str, ...],
    ) -> None:
        self.spec = spec
        self.components = tuple(components)
        self._formula = formula
        self._terms = terms
        self._gates = gates
        self.referenced = referenced

    def evaluate(self, values: Mapping[str, float | None]) -> CompositeResult:
        """Combine component values (None = unscored) into the case's composite.

        Returns:
            A result whose ``detail`` reads like ``(0.4*C + 0.3*T + 0.2*B) / 0.9 = 0.7444; J dropped:
            gate C >= 0.9999 not met``. The value is rounded to 6 decimals and never clamped.
        """
        missing = self._missing(values)
        if missing and self.spec.on_missing != "renormalize":
            listed = ", ".join(missing)
            return CompositeResult(None, f"unscored: no value for {listed}", missing=missing)
        if self._terms is None:
            return self._as_written(values)  # a formula that cannot drop terms is compiled as it is
        return self._weighted(self._terms, values, missing)

    def _missing(self, values: Mapping[str, float | None]) -> tuple[str, ...]:
        """The components the formula reads that have no value.

        A component whose gate is closed does not count, so its lack of a score does not matter.
        """
        return tuple(
            name for name in self.referenced if values.get(name) is None and not self._closed_by_gate(name, values)
        )

    def _as_written(self, values: Mapping[str, float | None]) -> CompositeResult:
        """The formula evaluated as written, over the components that have a value."""
        assert self._formula is not None and self.spec.formula is not None
        formula = self.spec.formula.strip()
        present = {name: float(value) for name, value in values.items() if value is not None}
        try:
            value = self._formula(present)
        except ZeroDivisionError:
            return CompositeResult(None, f"{formula} divides by zero for these values")
        except OverflowError:
            value = math.inf
        return _valued(value, formula)

    def _gates_of(self, component: str) -> list[Gate]:
        return [gate for gate in self._gates if gate.component == component]

    def _closed_by_gate(self, component: str, values: Mapping[str, float | None]) -> bool:
        """True when a gate of ``component`` is decided (its inputs scored) and not met."""
        return any(not _unscored_inputs(gate, values) and not _holds(gate, values)
                   for gate in self._gates_of(component))

    def _drop_reason(self, component: str, values: Mapping[str, float | None]) -> str | None:
        """Why the first gate of ``component`` that keeps it out does so, or None."""
        problems = (_gate_problem(gate, values) for gate in self._gates_of(component))
        return next((problem for problem in problems if problem is not None), None)

    def _weighted(
        self, terms: tuple[Term, ...], values: Mapping[str, float | None], missing: tuple[str, ...]
    ) -> CompositeResult:
        if not terms:
            return CompositeResult(None, "no components to combine")
        why = self._dropped_terms(terms, values, missing)
        kept = [term for term in terms if term.component not in why]
        notes = [f"{name} dropped: {reason}" for name, reason in why.items()]
        dropped = tuple(why)  # in the formula's order
        if not kept:
            return CompositeResult(
                None, "no terms left; " + "; ".join(notes), missing=missing, dropped=dropped, why_dropped=why
            )
        value, shown = self._rescaled(terms, kept, values)
        return _valued(value, shown, notes, missing=missing, dropped=dropped, why_dropped=why)

    def _dropped_terms(
        self, terms: tuple[Term, ...], values: Mapping[str, float | None], missing: tuple[str, ...]
    ) -> dict[str, str]:
        """The terms left out (unscored, or a gate not met) and why, in the formula's order."""
        why: dict[str, str] = {}
        for term in terms:
            reason = "unscored" if term.component in missing else self._drop_reason(term.component, values)
            if reason is not None:
                why[term.component] = reason
        return why

    def _rescaled(
        self, terms: tuple[Term, ...], kept: list[Term], values: Mapping[str, float | None]
    ) -> tuple[float, str]:
        """The kept terms' sum on the formula's scale, and how the detail shows it."""
        total, kept_weight = _weight(terms), _weight(kept)
        value = sum(term.weight * float(values[term.component] or 0.0) for term in kept)
        joined = " + ".join(term.text for term in kept)
        if self.spec.formula is None:
            return value / (kept_weight / total), f"mean({', '.join(term.component for term in kept)})"
        if len(kept) == len(terms):
            return value, joined
        # keep the formula's scale: with weights summing to 1 this is "divide by the kept weights"
        return value * (total / kept_weight), f"({joined}){_rescaling(total, kept_weight)}"


def _valued(
    value: float,
    shown: str,
    notes: Sequence[str] = (),
    *,
    missing: tuple[str, ...] = (),
    dropped: tuple[str, ...] = (),
    why_dropped: Mapping[str, str] | None = None,
) -> CompositeResult:
    """The composite ``shown = value`` followed by ``notes``; unscored when the value is not finite.

    Infinity would reach results.jsonl and summary.json, and make a model's mean infinite.
    """
    why = dict(why_dropped or {})
    if not math.isfinite(value):
        return CompositeResult(None, f"{shown} = {value}: not a finite number", missing, dropped, why)
    return CompositeResult(round(value, 6), "; ".join([f"{shown} = {_fmt(value)}", *notes]), missing, dropped, why)


def _weight(terms: Sequence[Term]) -> float:
    return sum(term.weight for term in terms)


def _rescaling(total: float, kept_weight: float) -> str:
    """How a rescaled sum shows its factor: `` / 0.9`` when the weights sum to 1, else `` * 2/1.5``."""
    return f" / {_fmt(kept_weight)}" if abs(total - 1) < 1e-9 else f" * {_fmt(total)}/{_fmt(kept_weight)}"


def compile_composite(spec: CompositeSpec, components: Sequence[str]) -> Composite:
    """Check and compile a composite against the names of a case's scorers.

    Args:
        spec: the suite's ``composite:`` (formula, gates, on_missing).
        components: the scorer names, in suite order.

    Returns:
        A ``Composite`` whose ``evaluate`` takes each case's component values.

    Raises:
        ValueError: for an unknown component (with a did-you-mean), syntax outside the allow-list, a
            division by a literal zero, or a formula that is not a weighted sum while gates or
            ``on_missing: renormalize`` may drop its terms.
    """
    if spec.on_missing not in ("unscored", "renormalize"):
        raise ValueError(f"on_missing must be 'unscored' or 'renormalize', got {spec.on_missing!r}")
    formula: Compiled | None = None
    terms: tuple[Term, ...] | None
    if spec.formula is None:
        terms, referenced = _mean_terms(components), tuple(components)
    else:
        expression = compile_expression(spec.formula, "formula", components, condition=False)
        formula, referenced = expression.function, expression.names
        # a term can be dropped only by a gate or on_missing: renormalize
        terms = _weighted_terms(spec.formula) if spec.gates or spec.on_missing == "renormalize" else None
    gates = tuple(_compile_gate(gate.component, gate.when, components, terms) for gate in spec.gates)
    return Composite(spec, components, formula=formula, terms=terms, gates=gates, referenced=referenced)


def _mean_terms(components: Sequence[str]) -> tuple[Term, ...]:
    """The default composite, the mean of the components, as terms of equal weight."""
    return tuple(Term(1.0 / len(components), name) for name in components)


def _weighted_terms(formula: str) -> tuple[Term, ...]:
    found = _linear_terms(ast.parse(formula.strip(), mode="eval").body)
    if found is None:
        raise ValueError(
            f"formula {formula.strip()!r}: with gates or on_missing: renormalize the formula must be a "
            "weighted sum such as 0.4*C + 0.3*T + 0.2*B, so that dropping a term has one meaning"
        )
    _check_weights(formula, found)
    return tuple(found)


def _check_weights(formula: str, found: Sequence[Term]) -> None:
    """Raises: ValueError for a component in two terms, or a weight that is not positive."""
    twice = repeated([term.component for term in found])
    if twice:
        raise ValueError(f"formula {formula.strip()!r}: {', '.join(twice)} appears in more than one term")
    negative = [term.text for term in found if term.weight <= 0]
    if negative:
        raise ValueError(
            f"formula {formula.strip()!r}: weights must be positive when terms can be dropped "
            f"(found {', '.join(negative)})"
        )


def _compile_gate(
    component: str, when: str, components: Sequence[str], terms: tuple[Term, ...] | None
) -> Gate:
    if component not in components:
        hint = name_hint(component, components)
        raise ValueError(
            f"gate for unknown component {component!r}{hint} (components: {', '.join(components)})"
        )
    if terms is not None and component not in {term.component for term in terms}:
        raise ValueError(f"gate for {component!r}, which is not a term of the formula")
    condition = compile_expression(when, f"gate on {component}:", components, condition=True)
    return Gate(component, when.strip(), condition.function, condition.names)
