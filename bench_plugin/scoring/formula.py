"""The safe expression compiler for composite formulas and gate conditions.

Formulas come from suite files, so they are never given to ``eval``: ``ast.parse`` reads them and a
small walker accepts numbers, component names, ``+ - * /``, unary minus, parentheses and
``min``/``max``/``abs`` (gate conditions also take comparisons and ``and``/``or``/``not``).
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.hints import did_you_mean
from bench_plugin.scoring.options import is_number

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
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op><=|>=|==|!=|\*\*|[-+*/<>(),])|(?P<other>\S))"
)
_OPERAND_END = ("number", "name", ")")


@dataclass(frozen=True)
class Expression:
    """A compiled expression and the component names it reads, in order of first use."""

    function: Compiled
    names: tuple[str, ...]


def compile_expression(source: str, what: str, components: Sequence[str], *, condition: bool) -> Expression:
    """Compile a formula or gate condition into a closure over component values.

    Args:
        source: the expression as written in the suite, e.g. ``0.4*C + 0.6*T`` or ``C >= 0.9999``.
        what: how error messages name the expression, e.g. ``formula`` or ``gate on J:``.
        components: the names the expression may read.
        condition: True for gate conditions, which also allow comparisons and ``and``/``or``/``not``.

    Returns:
        An ``Expression`` whose ``function`` takes a mapping of component values.

    Raises:
        ValueError: for a syntax error, syntax outside the allow-list, an unknown component (with a
            did-you-mean) or a division by a literal zero.
    """
    compiler = _Compiler(source, what, components, condition=condition)
    function = compiler.compile()
    return Expression(function, tuple(dict.fromkeys(compiler.names)))


def name_hint(name: str, choices: Sequence[str]) -> str:
    """A ``; did you mean 'X'?`` suffix for an unknown component name, or an empty string."""
    guess = did_you_mean(name, choices)
    return f"; {guess}" if guess else ""


def constant_value(node: ast.expr) -> float | None:
    """The value of a numbers-only subexpression such as ``0.4`` or ``1/3``; None otherwise."""
    fold = _FOLDS.get(type(node))
    return None if fold is None else fold(node)


def _constant_number(node: ast.Constant) -> float | None:
    value = node.value
    return float(value) if is_number(value) else None


def _constant_sign(node: ast.UnaryOp) -> float | None:
    if not isinstance(node.op, (ast.USub, ast.UAdd)):
        return None
    inner = constant_value(node.operand)
    return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)


def _constant_arithmetic(node: ast.BinOp) -> float | None:
    apply = _ARITHMETIC.get(type(node.op))
    left, right = constant_value(node.left), constant_value(node.right)
    if apply is None or left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
        return None
    return apply(left, right)


_FOLDS: dict[type[ast.expr], Callable[[Any], float | None]] = {
    ast.Constant: _constant_number,
    ast.UnaryOp: _constant_sign,
    ast.BinOp: _constant_arithmetic,
}


def _call_problem(node: ast.Call, name: str, *, known: bool) -> str:
    """Why a call is not allowed (not min, max or abs, keywords, the number of arguments), or an empty string."""
    count = len(node.args)
    if not known or node.keywords or not count:
        return f"{ast.unparse(node)!r} is not allowed; the functions are min, max and abs"
    if name == "abs":
        return "" if count == 1 else f"abs takes one argument, got {count}"
    return "" if count >= 2 else f"{name} needs at least two arguments"


class _Compiler:
    """Turns one expression into a closure, refusing anything outside the allow-list."""

    def __init__(self, source: str, what: str, components: Sequence[str], *, condition: bool) -> None:
        self.source = source
        self.what = what
        self.components = components
        self.condition = condition
        self.names: list[str] = []

    def fail(self, message: str, column: int | None = None) -> ValueError:
        text = self.source.strip()
        caret = "" if column is None else f"\n    {text}\n    {' ' * column}^"
        return ValueError(f"{self.what} {text!r}: {message}{caret}")

    def compile(self) -> Compiled:
        try:
            tree = ast.parse(self.source.strip(), mode="eval")
        except SyntaxError as exc:
            message, column = diagnose(self.source.strip(), _ALLOWED_IN_CONDITIONS if self.condition else _ALLOWED)
            if message is None:  # nothing we recognise: Python's words, at Python's column
                message, column = f"not a valid expression ({exc.msg})", max(0, (exc.offset or 1) - 1)
            raise self.fail(message, column) from None
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
            hint = name_hint(name, self.components)
            listed = ", ".join(self.components) or "none"
            raise self.fail(f"unknown component {name!r}{hint} (components: {listed})")
        self.names.append(name)
        return lambda values: values[name]

    def node_BinOp(self, node: ast.BinOp) -> Compiled:
        apply = _ARITHMETIC.get(type(node.op))
        if apply is None:
            raise self.fail(f"the operator in {ast.unparse(node)!r} is not allowed; use {_ALLOWED}")
        if isinstance(node.op, ast.Div) and constant_value(node.right) == 0:
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
        problem = _call_problem(node, name, known=function is not None)
        if problem:
            raise self.fail(problem)
        assert function is not None
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
            return all(test(a, b) for test, a, b in zip(tests, results, results[1:], strict=False) if test is not None)

        return compare

    def node_Tuple(self, node: ast.Tuple) -> Compiled:
        raise self.fail(f"{ast.unparse(node)!r} has a comma outside min()/max(): write decimals with a dot, e.g. 0.4")

    def node_BoolOp(self, node: ast.BoolOp) -> Compiled:
        if not self.condition:
            raise self.fail(f"and/or belong in gate conditions, not in {ast.unparse(node)!r}")
        parts = [self.node(value) for value in node.values]
        if isinstance(node.op, ast.And):
            return lambda values: all(part(values) for part in parts)
        return lambda values: any(part(values) for part in parts)


_Token = tuple[str, str, int]  # (kind, text, column)
_SIGN_WORDS = {"^": "powers are not allowed", "=": "a single '=' is not allowed (compare with ==)",
               "&": "'&' is not allowed (write and)", "|": "'|' is not allowed (write or)"}


def diagnose(text: str, allowed: str = _ALLOWED) -> tuple[str | None, int]:
    """Say in words what is wrong with a formula Python cannot parse, and the column to put a caret under.

    ``allowed`` is what the message lists as allowed (gate conditions allow more).

    Returns:
        ``(message, column)``, or ``(None, 0)`` when the cause is none of the common ones.

    Example:
        >>> diagnose("0.4*C + 0.3 T")
        ("no operator between '0.3' and 'T' (write 0.3*T)", 12)
    """
    tokens = _tokens(text)
    depth: list[int] = []  # the columns of the open brackets
    previous: _Token | None = None
    for token in tokens:
        problem = _token_problem(previous, token, depth, allowed)
        if problem is not None:
            return problem
        previous = token
    return _ending_problem(tokens, depth)


def _tokens(text: str) -> list[_Token]:
    """The formula's tokens up to the first one that is not one; brackets are their own kinds."""
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None or found.lastgroup is None:
            break
        kind = found.lastgroup
        value = found.group(kind)
        tokens.append((kind if kind != "op" or value not in "()" else value, value, found.start(kind)))
        position = found.end()
    return tokens


def _token_problem(previous: _Token | None, token: _Token, depth: list[int], allowed: str) -> tuple[str, int] | None:
    """What is wrong at this token, or None; keeps ``depth`` up to date with the brackets."""
    kind, value, column = token
    if kind == "other":
        return f"{_SIGN_WORDS.get(value, f'{value!r} is not allowed')}; use {allowed}", column
    if previous is not None and _missing_operator(previous, token):
        return _missing_operator_problem(previous, token)
    return _bracket_problem(token, depth)


def _missing_operator(previous: _Token, token: _Token) -> bool:
    """Two operands side by side, as in ``0.3 T`` (a name before a bracket is a call: ``min(``)."""
    starts_operand = token[0] in ("number", "name", "(")
    call = previous[0] == "name" and token[0] == "("
    return previous[0] in _OPERAND_END and starts_operand and not call


def _missing_operator_problem(previous: _Token, token: _Token) -> tuple[str, int]:
    kind, value, column = token
    fix = f" (write {previous[1]}*{value})" if previous[0] == "number" and kind == "name" else ""
    if previous[2] + len(previous[1]) == column:  # 0.3T: Python's "invalid decimal literal"
        return f"{previous[1] + value!r} glues a number to a name{fix}", column
    return f"no operator between {previous[1]!r} and {value!r}{fix}", column


def _bracket_problem(token: _Token, depth: list[int]) -> tuple[str, int] | None:
    kind, _, column = token
    if kind == "(":
        depth.append(column)
    elif kind == ")":
        if not depth:
            return "this ')' closes no '('", column
        depth.pop()
    return None


def _ending_problem(tokens: Sequence[_Token], depth: Sequence[int]) -> tuple[str | None, int]:
    """What is wrong once every token was read: an open bracket, a trailing operator, nothing at all."""
    if depth:
        return "this '(' is never closed", depth[-1]
    if not tokens:
        return "the formula is empty", 0
    kind, value, column = tokens[-1]
    if kind == "op" and value not in ")":
        return f"the formula ends with {value!r}: a term is missing after it", column
    return None, 0
