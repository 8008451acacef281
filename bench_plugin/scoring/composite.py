"""The composite score: a formula over named components, with gates and renormalisation.

Formulas come from suite files, so they are never given to ``eval``: ``ast.parse`` reads them and a
small walker accepts numbers, component names, ``+ - * /``, unary minus, parentheses and
``min``/``max``/``abs`` (gate conditions also take comparisons and ``and``/``or``/``not``).

When a term can be dropped (a closed gate, or an unscored component with
``on_missing: renormalize``) the formula must be a weighted sum, so that "drop the term and
rescale the rest" has one meaning: ``(0.4*C + 0.3*T + 0.2*B) / 0.9`` for ClawBench.
"""

from __future__ import annotations

import ast
import difflib
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench_plugin.suite.spec import CompositeSpec

Values = Mapping[str, float]
Compiled = Callable[[Values], float]

_FUNCTIONS: dict[str, Callable[..., float]] = {"min": min, "max": max, "abs": abs}
_ARITHMETIC: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_COMPARISONS: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ALLOWED = "numbers, component names, + - * /, parentheses and min/max/abs"
_ALLOWED_IN_CONDITIONS = _ALLOWED + ", comparisons (< <= > >= == !=) and and/or/not"


def _fmt(value: float) -> str:
    return format(value, ".4g")


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    same_but_case = [choice for choice in choices if choice.lower() == name.lower()]
    close = same_but_case or difflib.get_close_matches(name, choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class Term:
    """One ``weight*Name`` term of a weighted-sum formula."""

    weight: float
    component: str

    @property
    def text(self) -> str:
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
    dropped; ``missing`` names the components the composite needed that had no value.
    """

    value: float | None
    detail: str
    missing: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()


class _Compiler:
    """Turns one expression into a closure, refusing anything outside the allow-list."""

    def __init__(self, source: str, what: str, components: Sequence[str], *, condition: bool) -> None:
        self.source = source
        self.what = what
        self.components = components
        self.condition = condition
        self.names: list[str] = []

    def fail(self, message: str) -> ValueError:
        return ValueError(f"{self.what} {self.source.strip()!r}: {message}")

    def compile(self) -> Compiled:
        try:
            tree = ast.parse(self.source.strip(), mode="eval")
        except SyntaxError as exc:
            raise self.fail(f"not a valid expression ({exc.msg})") from None
        return self.node(tree.body)

    def node(self, node: ast.expr) -> Compiled:
        method = getattr(self, f"node_{type(node).__name__}", None)
        if method is None:
            allowed = _ALLOWED_IN_CONDITIONS if self.condition else _ALLOWED
            raise self.fail(f"{ast.unparse(node)!r} is not allowed; use {allowed}")
        compiled: Compiled = method(node)
        return compiled

    def node_Constant(self, node: ast.Constant) -> Compiled:
        value = node.value
        if isinstance(value, bool) and not self.condition:
            raise self.fail(f"{value!r} is not a number; true/false belong in gate conditions")
        if not isinstance(value, (int, float)):
            raise self.fail(f"{value!r} is not a number")
        number = float(value)
        return lambda values: number

    def node_Name(self, node: ast.Name) -> Compiled:
        name = node.id
        if name not in self.components:
            hint = _did_you_mean(name, self.components)
            listed = ", ".join(self.components) or "none"
            raise self.fail(f"unknown component {name!r}{hint} (components: {listed})")
        self.names.append(name)
        return lambda values: values[name]

    def node_BinOp(self, node: ast.BinOp) -> Compiled:
        apply = _ARITHMETIC.get(type(node.op))
        if apply is None:
            raise self.fail(f"the operator in {ast.unparse(node)!r} is not allowed; use {_ALLOWED}")
        if isinstance(node.op, ast.Div) and _constant(node.right) == 0:
            raise self.fail(f"{ast.unparse(node)!r} divides by zero")
        left, right = self.node(node.left), self.node(node.right)
        return lambda values: apply(left(values), right(values))

    def node_UnaryOp(self, node: ast.UnaryOp) -> Compiled:
        operand = self.node(node.operand)
        if isinstance(node.op, ast.USub):
            return lambda values: -operand(values)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not) and self.condition:
            return lambda values: not operand(values)
        raise self.fail(f"{ast.unparse(node)!r} is not allowed; use {_ALLOWED}")

    def node_Call(self, node: ast.Call) -> Compiled:
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        function = _FUNCTIONS.get(name)
        if function is None or node.keywords or not node.args:
            raise self.fail(f"{ast.unparse(node)!r} is not allowed; the functions are min, max and abs")
        if name == "abs" and len(node.args) != 1:
            raise self.fail(f"abs takes one argument, got {len(node.args)}")
        if name != "abs" and len(node.args) < 2:
            raise self.fail(f"{name} needs at least two arguments")
        args = [self.node(arg) for arg in node.args]
        return lambda values: function(*(arg(values) for arg in args))

    def node_Compare(self, node: ast.Compare) -> Compiled:
        if not self.condition:
            raise self.fail(f"comparisons such as {ast.unparse(node)!r} belong in gate conditions")
        tests = [_COMPARISONS.get(type(op)) for op in node.ops]
        if any(test is None for test in tests):
            raise self.fail(f"{ast.unparse(node)!r} uses a comparison that is not allowed")
        operands = [self.node(node.left), *(self.node(item) for item in node.comparators)]

        def compare(values: Values) -> float:
            results = [operand(values) for operand in operands]
            return all(test(a, b) for test, a, b in zip(tests, results, results[1:]) if test is not None)

        return compare

    def node_BoolOp(self, node: ast.BoolOp) -> Compiled:
        if not self.condition:
            raise self.fail(f"and/or belong in gate conditions, not in {ast.unparse(node)!r}")
        parts = [self.node(value) for value in node.values]
        if isinstance(node.op, ast.And):
            return lambda values: all(part(values) for part in parts)
        return lambda values: any(part(values) for part in parts)


def _constant(node: ast.expr) -> float | None:
    """The value of a numbers-only subexpression such as ``0.4`` or ``1/3``; None otherwise."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        return _ARITHMETIC[type(node.op)](left, right)
    return None


def _linear_terms(node: ast.expr) -> list[Term] | None:
    """Read ``w1*A + w2*B + ...`` (also ``A*w``, ``A/w``, ``A``); None when the formula is not that."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _linear_terms(node.left), _linear_terms(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        left, right = _linear_terms(node.left), _linear_terms(node.right)
        if left is None or right is None:
            return None
        return left + [Term(-term.weight, term.component) for term in right]
    if isinstance(node, ast.Name):
        return [Term(1.0, node.id)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        for weight_node, name_node in ((node.left, node.right), (node.right, node.left)):
            weight = _constant(weight_node)
            if weight is not None and isinstance(name_node, ast.Name):
                if isinstance(node.op, ast.Div):
                    if weight_node is node.left:
                        return None
                    weight = 1 / weight
                return [Term(weight, name_node.id)]
    return None


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
        missing = tuple(name for name in self.referenced if values.get(name) is None)
        if missing and self.spec.on_missing != "renormalize":
            listed = ", ".join(missing)
            return CompositeResult(None, f"unscored: no value for {listed}", missing=missing)
        if self._terms is None:
            # a formula that cannot drop terms is compiled as it is
            assert self._formula is not None and self.spec.formula is not None
            present = {name: float(value) for name, value in values.items() if value is not None}
            try:
                value = self._formula(present)
            except ZeroDivisionError:
                return CompositeResult(None, f"{self.spec.formula.strip()} divides by zero for these values")
            return CompositeResult(round(value, 6), f"{self.spec.formula.strip()} = {_fmt(value)}")
        return self._weighted(values, missing)

    def _gate_problem(self, component: str, values: Mapping[str, float | None]) -> str | None:
        for gate in self._gates:
            if gate.component != component:
                continue
            unscored = [name for name in gate.names if values.get(name) is None]
            if unscored:
                return f"gate {gate.text} not met ({', '.join(unscored)} unscored)"
            present = {name: float(values[name] or 0.0) for name in gate.names}
            if not gate.condition(present):
                return f"gate {gate.text} not met"
        return None

    def _weighted(self, values: Mapping[str, float | None], missing: tuple[str, ...]) -> CompositeResult:
        assert self._terms is not None
        if not self._terms:
            return CompositeResult(None, "no components to combine")
        kept: list[Term] = []
        notes: list[str] = []
        for term in self._terms:
            reason = "unscored" if term.component in missing else self._gate_problem(term.component, values)
            if reason is None:
                kept.append(term)
            else:
                notes.append(f"{term.component} dropped: {reason}")
        dropped = tuple(term.component for term in self._terms if term not in kept)
        if not kept:
            return CompositeResult(
                None, "no terms left; " + "; ".join(notes), missing=missing, dropped=dropped
            )
        total = sum(term.weight for term in self._terms)
        kept_weight = sum(term.weight for term in kept)
        value = sum(term.weight * float(values[term.component] or 0.0) for term in kept)
        if self.spec.formula is None:
            shown = f"mean({', '.join(term.component for term in kept)})"
            value /= kept_weight / total
        elif dropped:
            # keep the formula's scale: with weights summing to 1 this is "divide by the kept weights"
            value *= total / kept_weight
            joined = " + ".join(term.text for term in kept)
            scale = (
                f" / {_fmt(kept_weight)}"
                if abs(total - 1) < 1e-9
                else f" * {_fmt(total)}/{_fmt(kept_weight)}"
            )
            shown = f"({joined}){scale}"
        else:
            shown = " + ".join(term.text for term in kept)
        detail = "; ".join([f"{shown} = {_fmt(value)}", *notes])
        return CompositeResult(round(value, 6), detail, missing=missing, dropped=dropped)


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
    needs_terms = bool(spec.gates) or spec.on_missing == "renormalize"
    formula: Compiled | None = None
    terms: tuple[Term, ...] | None
    if spec.formula is None:
        terms = tuple(Term(1.0 / len(components), name) for name in components) if components else ()
        referenced = tuple(components)
    else:
        compiler = _Compiler(spec.formula, "formula", components, condition=False)
        formula = compiler.compile()
        referenced = tuple(dict.fromkeys(compiler.names))
        terms = _weighted_terms(spec.formula) if needs_terms else None
    gates = tuple(_compile_gate(gate.component, gate.when, components, terms) for gate in spec.gates)
    return Composite(spec, components, formula=formula, terms=terms, gates=gates, referenced=referenced)


def _weighted_terms(formula: str) -> tuple[Term, ...]:
    found = _linear_terms(ast.parse(formula.strip(), mode="eval").body)
    if found is None:
        raise ValueError(
            f"formula {formula.strip()!r}: with gates or on_missing: renormalize the formula must be a "
            "weighted sum such as 0.4*C + 0.3*T + 0.2*B, so that dropping a term has one meaning"
        )
    names = [term.component for term in found]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"formula {formula.strip()!r}: {', '.join(repeated)} appears in more than one term")
    negative = [term.text for term in found if term.weight <= 0]
    if negative:
        raise ValueError(
            f"formula {formula.strip()!r}: weights must be positive when terms can be dropped "
            f"(found {', '.join(negative)})"
        )
    return tuple(found)


def _compile_gate(
    component: str, when: str, components: Sequence[str], terms: tuple[Term, ...] | None
) -> Gate:
    if component not in components:
        hint = _did_you_mean(component, components)
        raise ValueError(
            f"gate for unknown component {component!r}{hint} (components: {', '.join(components)})"
        )
    if terms is not None and component not in {term.component for term in terms}:
        raise ValueError(f"gate for {component!r}, which is not a term of the formula")
    compiler = _Compiler(when, f"gate on {component}:", components, condition=True)
    condition = compiler.compile()
    return Gate(component, when.strip(), condition, tuple(dict.fromkeys(compiler.names)))
