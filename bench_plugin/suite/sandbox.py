"""The jinja2 sandbox suites render in, bounded so that a template cannot reach Python or exhaust the machine."""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.runtime import Context
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

from bench_plugin.core.errors import LimitExceeded
from bench_plugin.suite.sandbox_limits import (
    MAX_EXPONENT,
    MAX_INT_BITS,
    MAX_INT_DIGITS,
    MAX_JSON_INDENT,
    MAX_OUTPUT,
    MAX_REPEAT,
    Budget,
    checked,
    count,
    current_budget,
    limit,
    short,
    weigh,
)
from bench_plugin.suite.sandbox_sizes import (
    FILTER_SIZES,
    GROWING_METHODS,
    as_text,
    format_size,
    method_size,
    percent_size,
)

# jinja2 passes these to calls it makes for loops and blocks: they are not the template's arguments
_JINJA_KWARGS = ("_loop_vars", "_block_vars")


def _inputs_weight(args: Iterable[Any], kwargs: Mapping[str, Any], budget: Budget) -> None:
    total = sum(weigh(arg, budget) for arg in args)
    total += sum(weigh(value, budget) for name, value in kwargs.items() if name not in _JINJA_KWARGS)
    if total > MAX_OUTPUT:
        raise LimitExceeded(f"arguments of more than {MAX_OUTPUT:,} characters or items")


def _guard_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter: it counts as a step, its inputs and result are weighed.

    A filter that can multiply its input (``replace``, ``center``...) is refused before it runs
    when the result would be too big.
    """
    estimate = FILTER_SIZES.get(name)
    signature = inspect.signature(fn) if estimate is not None else None
    # jinja2 passes an eval context first to some filters whose signature does not show it (async variants)
    hidden = int(
        getattr(fn, "jinja_pass_arg", None) is not None and getattr(inspect.unwrap(fn), "jinja_pass_arg", None) is None
    )

    @functools.wraps(fn)  # keeps jinja2's pass_context/pass_eval_context mark
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.spend()
        _inputs_weight(args, kwargs, budget)
        if estimate is not None and signature is not None:
            try:
                bound = signature.bind(*args[hidden:], **kwargs)
            except TypeError:
                pass  # the filter itself says what is wrong with its arguments
            else:
                bound.apply_defaults()
                limit(estimate(bound.arguments, budget), f"the {name} filter")
                args, kwargs = (*args[:hidden], *bound.args), bound.kwargs
        return checked(fn(*args, **kwargs), budget, f"the {name} filter made a value")

    return guarded


def _tojson(value: Any, indent: int | str | None = None) -> str:
    width = indent if isinstance(indent, int) else len(indent or "")
    if width > MAX_JSON_INDENT:
        raise LimitExceeded(f"tojson indent {short(indent)} is wider than {MAX_JSON_INDENT}")
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _fromjson(text: Any) -> Any:
    """Parse JSON text (a CSV field holding a list, a JSONL field holding a JSON string).

    The input is weighed like every filter's (at most ``MAX_OUTPUT`` characters) and so is the result;
    nesting deeper than Python allows is an error like any other (``RecursionError``).
    """
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"fromjson reads text, got {type(text).__name__}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"fromjson: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None


def _range(*args: int) -> range:
    try:
        return safe_range(*args)
    except OverflowError:
        raise LimitExceeded(f"range() of more than {MAX_RANGE:,} items") from None


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # jinja2's names
    limit(count(n, "lipsum paragraphs") * count(max, "lipsum words") * 12, "lipsum()")
    return generate_lorem_ipsum(n, html, min, max)


def _concatenate(left: Any, right: Any, budget: Budget) -> Any:
    """``left + right``, refused when two sequences would join into one beyond the limits."""
    if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
        limit(weigh(left, budget) + weigh(right, budget), "'+'")
    return left + right


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 1 and abs(base) > 1:
        if exponent > MAX_EXPONENT:
            raise LimitExceeded(f"'**' with an exponent of {short(exponent)}; the largest allowed is {MAX_EXPONENT:,}")
        if exponent * math.log10(abs(base)) > MAX_INT_DIGITS:
            raise LimitExceeded(f"{short(base)} ** {exponent} would have more than {MAX_INT_DIGITS:,} digits")
    return base**exponent  # a float that overflows raises OverflowError, reported like any other error


def _repeat(left: Any, right: Any, budget: Budget) -> Any:
    sequence, times = (left, right) if isinstance(right, int) else (right, left)
    if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(times, int) and times > 1:
        size = weigh(sequence, budget)
        if size * times > MAX_REPEAT:
            raise LimitExceeded(
                f"'*' repeating {size:,} characters or items {short(times)} times; "
                f"the most it may make is {MAX_REPEAT:,}"
            )
    return left * right


def _check_method(
    obj: Any, owner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], budget: Budget
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse a str/bytes/int method call that would make a value too big; hand back its arguments.

    A generator given to ``join`` is read into a list first, and that list is what the call gets.
    """
    if name not in GROWING_METHODS:
        return args, kwargs
    plain = {k: v for k, v in kwargs.items() if k not in _JINJA_KWARGS}
    try:
        bound = inspect.signature(obj).bind(*args, **plain)
    except (TypeError, ValueError):
        return args, kwargs  # the call itself will say what is wrong
    bound.apply_defaults()
    limit(method_size(owner, name, bound.arguments, budget), f"{name}()")
    passed_on = {k: v for k, v in kwargs.items() if k in _JINJA_KWARGS}
    return tuple(bound.args), {**passed_on, **bound.kwargs}


class _Guards(NodeTransformer):
    """Route the template constructs that the sandbox does not intercept through the environment.

    Loop iterables go through it to count steps, ``~`` and list, tuple and dict literals to weigh
    what they build.
    """

    def __init__(self, environment: jinja2.Environment) -> None:
        self.environment = environment

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._hook("_bench_iterate", [cast(nodes.Expr, node.iter)], node.iter)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_bench_concat", list(node.nodes), node)

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_bench_literal", [node], node)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_bench_literal", [node], node)

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_bench_literal", [node], node) if node.ctx == "load" else node

    def _hook(self, name: str, args: list[nodes.Expr], at: nodes.Node) -> nodes.Call:
        call = nodes.Call(nodes.EnvironmentAttribute(name), args, [], None, None, lineno=at.lineno)
        call.set_environment(self.environment)
        return call


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with the limits of ``sandbox_limits``, checked as a template runs.

    The sandbox alone stops a template from reaching Python, not from exhausting the machine:
    ``{{ 9 ** 9 ** 9 }}``, ``{{ 'x' * 10 ** 10 }}`` or two nested 100,000-step loops are all legal
    Jinja. So arithmetic and repetition are checked before they run, every value a template builds
    (a literal, a ``~``, an operator, a filter or call result, an output) is weighed, formats are
    checked for their width, loops and calls draw on the render's budget, and the output is cut off
    as it streams.

    Only ``*``, ``**``, ``+`` and ``%`` are intercepted: ``-``, ``/`` and ``//`` cannot make a value
    much bigger than their operands, nor can unary ``-`` and ``+``, so those stay native and fast.
    Make one with ``make_environment``, which also guards the filters and globals.
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def _generate(
        self, source: nodes.Template, name: str | None, filename: str | None, defer_init: bool = False
    ) -> str:
        # jinja2's documented hook between parsing and code generation; expressions pass here too
        _Guards(self).visit(source)
        return super()._generate(source, name, filename, defer_init=defer_init)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """Apply an intercepted operator, refusing a result beyond the limits before it is made."""
        result = self._bounded_binop(operator, left, right, current_budget())
        if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
            raise LimitExceeded(f"'{operator}' would make a number of more than {MAX_INT_DIGITS:,} digits")
        return result

    def _bounded_binop(self, operator: str, left: Any, right: Any, budget: Budget) -> Any:
        if operator == "**":
            return _power(left, right)
        if operator == "*":
            return _repeat(left, right, budget)
        if operator == "+":
            return _concatenate(left, right, budget)
        if isinstance(left, (str, bytes)):  # '%' on text is printf-style formatting
            limit(percent_size(as_text(left), right, budget), "'%' formatting")
            return checked(left % right, budget, "'%' formatting made a value")
        return self.binop_table[operator](left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Call ``obj`` as one step, weighing its arguments and its result."""
        budget = current_budget()
        budget.spend()
        _inputs_weight(args, kwargs, budget)
        owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
        if isinstance(owner, (str, bytes, int)) and not isinstance(owner, bool):
            args, kwargs = _check_method(obj, owner, name, args, kwargs, budget)
        return checked(super().call(context, obj, *args, **kwargs), budget, f"{name or 'a call'}() made a value")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """The sandbox's ``str.format``, refused when its fields are too wide or its result too big."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        template, is_map = value.__self__, value.__name__ == "format_map"

        def bounded(*args: Any, **kwargs: Any) -> str:
            budget = current_budget()
            mapping = args[0] if is_map and args and isinstance(args[0], Mapping) else kwargs
            limit(format_size(template, () if is_map else args, mapping, budget), "format()")
            return checked(wrapped(*args, **kwargs), budget, "format() made a value")  # type: ignore[no-any-return]

        return bounded

    def concat(self, chunks: Iterable[str]) -> str:
        """Join a render's output (or a macro's, a block's), stopping as soon as it is too long."""
        parts, total = [], 0
        for chunk in chunks:
            total += len(chunk)
            if total > MAX_OUTPUT:
                raise LimitExceeded(f"the output would be more than {MAX_OUTPUT:,} characters")
            parts.append(chunk)
        return "".join(parts)

    def _bench_iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        budget = current_budget()
        for item in iterable:
            budget.spend()
            yield item

    def _bench_concat(self, *parts: Any) -> str:
        return "".join(map(str, parts))  # weighed by call() on the way in and out

    def _bench_literal(self, value: Any) -> Any:
        return value  # weighed by call()


def make_environment(loader: jinja2.BaseLoader | None) -> BoundedEnvironment:
    """A bounded sandbox with StrictUndefined, no autoescaping, and guarded filters and globals.

    Args:
        loader: where ``{% include %}`` and template files are looked up, or None for none.

    Returns:
        The environment; render in it inside ``sandbox_limits.bounded()`` so a render has one budget.
    """
    env = BoundedEnvironment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=lambda value: checked(value, current_budget(), "an output"),
    )
    env.filters["tojson"] = _tojson
    env.filters["fromjson"] = _fromjson
    env.filters = {name: _guard_filter(name, fn) for name, fn in env.filters.items()}
    env.globals["range"] = _range
    env.globals["lipsum"] = _lipsum
    return env
