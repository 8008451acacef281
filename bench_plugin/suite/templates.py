"""Jinja2 rendering in a bounded sandbox with StrictUndefined: prompts, ids, derived variables.

Suites are data written by people we may not know, so templates render in
``ImmutableSandboxedEnvironment`` (no attribute escapes, no mutation of the suite's data), and a
missing variable is an error rather than an empty string. A value that is exactly one
``{{ expression }}`` keeps its native type (a number stays a number), which is what derived
variables and dataset filters want.

The sandbox alone stops a template from reaching Python, not from exhausting the machine:
``{{ 9 ** 9 ** 9 }}``, ``{{ 'x' * 10 ** 10 }}`` or two nested 100,000-step loops are all legal
Jinja. So every render here is also bounded (the limits are the constants below): arithmetic and
repetition are checked before they run, every value a template builds (a literal, a ``~``, an
operator, a filter or call result, an output) is weighed, formats are checked for their width,
loops and calls draw on a per-render budget, and the output is cut off as it streams. Any error a
template raises, whatever its type, reaches the caller as a ``CaseError`` at the suite's line.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import math
import re
import string
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import Namespace, generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

from bench_plugin.errors import CaseError

#: Characters (or items, counted through nested lists and mappings) in any one value a template
#: builds, and in one render's output. A long prompt is tens of kilobytes.
MAX_OUTPUT = 1_000_000
#: Characters or items that ``*`` may produce by repeating a string or list, and the largest width,
#: padding or count a format or filter may ask for.
MAX_REPEAT = 100_000
#: Largest integer exponent of ``**`` (for a base other than 0, 1 and -1).
MAX_EXPONENT = 1_000
#: Digits of the largest integer arithmetic may produce: the most Python will print by default
#: (``sys.get_int_max_str_digits()``), so a number that can be computed can also be shown.
MAX_INT_DIGITS = 4_300
#: Loop iterations, calls and filters in one render. A prompt that lists few-shot examples or earlier
#: turns takes hundreds; two nested ``range(100000)`` loops would take ten billion.
MAX_STEPS = 100_000
#: Wall-clock seconds one render may take: steps differ in cost (sorting a long list is one step),
#: so the step budget catches runaway loops and recursion, this the rest.
MAX_SECONDS = 5.0
#: Widest indent the ``tojson`` filter accepts.
MAX_JSON_INDENT = 16

_MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))
_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)
_PERCENT_FIELD = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?(?P<kind>.)?", re.DOTALL
)
_FORMAT_NUMBER = re.compile(r"\d+")
# room for the widest conversion of a scalar (``'%f' % 1e308`` has 316 characters)
_SCALAR_ROOM = 320
_LIMIT_HINT = "templates are bounded so that a suite cannot exhaust the machine; compute large values elsewhere"


class _Refused(SecurityError):
    """A template asked for more than a limit allows."""


@dataclass
class _Budget:
    """What one render may still spend, and the weights it has measured (kept alive so ids stay unique)."""

    steps: int = 0
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_SECONDS)
    weights: dict[int, tuple[object, int]] = field(default_factory=dict)

    def spend(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Refused(f"more than {MAX_STEPS:,} loop iterations, calls and filters in one render")
        if time.monotonic() > self.deadline:
            raise _Refused(f"rendering took more than {MAX_SECONDS:g} seconds")


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("bench_template_budget", default=None)


@contextmanager
def _bounded() -> Iterator[None]:
    """Give the render inside one budget; a render nested in another shares the outer one."""
    if _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set(_Budget())
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _current() -> _Budget:
    # outside a render (jinja2 folding constants while compiling) each check still holds on its own
    return _BUDGET.get() or _Budget()


def _weigh(value: Any, budget: _Budget, depth: int = 0) -> int:
    """Characters plus items in ``value``, through nested containers, capped just above MAX_OUTPUT.

    Containers are memoised per render, so a list that holds the same big list a thousand times is
    weighed once and counts a thousand times, which is what printing it would cost. Namespaces are
    not: ``{% set ns.x = ... %}`` changes them.
    """
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3 + 1  # about its digits
    if isinstance(value, range):
        return len(value) + 1
    if not isinstance(value, (Namespace, Mapping, list, tuple, set, frozenset)) or isinstance(value, Context):
        return 1
    known = budget.weights.get(id(value))
    if known is not None:
        return known[1]
    cap = MAX_OUTPUT + 1
    total = 1
    if depth < 100:  # deeper is refused as too big: the weight of a cycle (through a namespace) is unbounded
        items: Iterable[Any]
        if isinstance(value, Namespace):
            items = object.__getattribute__(value, "_Namespace__attrs").items()
        else:
            items = value.items() if isinstance(value, Mapping) else value
        for item in items:
            total += _weigh(item, budget, depth + 1)
            if total >= cap:
                break
    else:
        total = cap
    total = min(total, cap)
    if not isinstance(value, Namespace):
        budget.weights[id(value)] = (value, total)
    return total


def _checked(value: Any, budget: _Budget, what: str = "a value") -> Any:
    if _weigh(value, budget) > MAX_OUTPUT:
        raise _Refused(f"{what} of more than {MAX_OUTPUT:,} characters or items")
    return value


def _count(value: Any, what: str) -> int:
    """An integer argument that sets a size (a width, a padding, a count), within MAX_REPEAT."""
    if isinstance(value, int) and value > MAX_REPEAT:
        raise _Refused(f"{what} of {_short(value)} is larger than {MAX_REPEAT:,}")
    return value if isinstance(value, int) else 0


def _limit(size: int, what: str) -> None:
    if size > MAX_OUTPUT:
        raise _Refused(f"{what} would make more than {MAX_OUTPUT:,} characters")


def _short(value: Any, width: int = 40) -> str:
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a number of {value.bit_length() * math.log10(2):,.0f} digits"
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _text(value: Any) -> str:
    return value if isinstance(value, str) else value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _percent_size(template: str, args: Any, budget: _Budget) -> int:
    """An upper bound on the length of ``template % args``; refuses widths beyond MAX_REPEAT."""
    size = len(template)
    positional = list(args) if isinstance(args, tuple) else [args]
    for match in _PERCENT_FIELD.finditer(template):
        if match["kind"] == "%":
            continue
        if "*" in (match["width"], match["precision"]):
            raise _Refused("'*' widths in % formats are not supported; write the width as a number")
        room = _count(int(match["width"] or 0), "a width") + _count(int(match["precision"] or 0), "a precision")
        if match["key"] is not None and isinstance(args, Mapping):
            arg = args.get(match["key"])
        else:
            arg = positional.pop(0) if positional else None
        size += room + _SCALAR_ROOM + _weigh(arg, budget)
    return size


def _format_size(template: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], budget: _Budget) -> int:
    """An upper bound on the length of ``template.format(*args, **kwargs)``; refuses wide fields."""
    size = len(template)
    auto = 0
    for _, name, spec, _ in string.Formatter().parse(template):
        if name is None:
            continue
        if spec and "{" in spec:
            raise _Refused("nested fields in format specs are not supported; write the width as a number")
        width = max((int(n) for n in _FORMAT_NUMBER.findall(spec or "")), default=0)
        first = re.split(r"[.\[]", name, maxsplit=1)[0]
        if first.isdigit() or not first:
            index = int(first) if first else auto
            auto += not first
            arg = args[index] if index < len(args) else None
        else:
            arg = kwargs.get(first)
        size += _count(width, "a format width") + _SCALAR_ROOM + _weigh(arg, budget)
    return size


def _replaced_size(text: str, old: str, new: str, count: Any) -> int:
    hits = len(text) + 1 if not old else text.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(0, len(new) - len(old))


def _join_items(arguments: dict[str, Any], key: str) -> list[Any]:
    items = list(arguments[key])  # a generator from map() is read once, here, and handed on as a list
    arguments[key] = items
    return items


# Method calls on strings (and on the bytes ``to_bytes`` and ``encode`` return) that can make more
# than they are given: the size each would make, from its bound arguments.
def _method_size(owner: Any, name: str, arguments: dict[str, Any], budget: _Budget) -> int:
    if isinstance(owner, int):
        return _count(arguments.get("length", 1), "to_bytes() length") if name == "to_bytes" else 0
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(owner), _count(arguments.get("width"), f"{name}() width"))
    if name == "expandtabs":
        tabsize = arguments.get("tabsize", 8)
        tabs = int(owner.count("\t" if isinstance(owner, str) else b"\t"))
        return len(owner) + tabs * max(0, _count(tabsize, "tabsize"))
    if name == "replace":
        return _replaced_size(_text(owner), _text(arguments["old"]), _text(arguments["new"]), arguments.get("count"))
    if name == "join":
        items = _join_items(arguments, next(iter(arguments)))  # bytes.join names it iterable_of_bytes
        return sum(_weigh(item, budget) for item in items) + max(0, len(items) - 1) * len(owner)
    if name == "translate" and isinstance(arguments["table"], Mapping):
        longest = max((len(v) for v in arguments["table"].values() if isinstance(v, (str, bytes))), default=1)
        return len(owner) * max(1, longest)
    return 0


# Filters that can make more than they are given: the size each would make, from its bound arguments.
def _center_size(a: dict[str, Any], budget: _Budget) -> int:
    return _weigh(a["value"], budget) + _count(a["width"], "center width")


def _indent_size(a: dict[str, Any], budget: _Budget) -> int:
    text, width = _text(a["s"]), a["width"]
    pad = _count(width, "indent width") if isinstance(width, int) else len(_text(width))
    return len(text) + pad * (text.count("\n") + 1)


def _replace_size(a: dict[str, Any], budget: _Budget) -> int:
    return _replaced_size(_text(a["s"]), _text(a["old"]), _text(a["new"]), a["count"])


def _join_size(a: dict[str, Any], budget: _Budget) -> int:
    items = _join_items(a, "value")
    return sum(_weigh(item, budget) for item in items) + max(0, len(items) - 1) * len(_text(a["d"]))


def _wordwrap_size(a: dict[str, Any], budget: _Budget) -> int:
    text, width = _text(a["s"]), a["width"]
    lines = 2 * len(text) // max(1, width if isinstance(width, int) else 1) + text.count("\n") + 1
    return len(text) + lines * len(_text(a["wrapstring"] or "\n"))


def _urlize_size(a: dict[str, Any], budget: _Budget) -> int:
    text = _text(a["value"])
    extra = len(_text(a["target"] or "")) + len(_text(a["rel"] or "")) + 64
    return 3 * len(text) + (len(text) // 4 + 1) * extra


def _batch_size(a: dict[str, Any], budget: _Budget) -> int:
    return _weigh(a["value"], budget) + _count(a["linecount"], "batch size")


def _slice_size(a: dict[str, Any], budget: _Budget) -> int:
    return _weigh(a["value"], budget) + _count(a["slices"], "slice count")


def _format_filter_size(a: dict[str, Any], budget: _Budget) -> int:
    return _percent_size(_text(a["value"]), a["kwargs"] or a["args"], budget)


_FILTER_SIZES: dict[str, Callable[[dict[str, Any], _Budget], int]] = {
    "center": _center_size,
    "indent": _indent_size,
    "replace": _replace_size,
    "join": _join_size,
    "wordwrap": _wordwrap_size,
    "urlize": _urlize_size,
    "batch": _batch_size,
    "slice": _slice_size,
    "format": _format_filter_size,
}


def _inputs_weight(args: Iterable[Any], kwargs: Mapping[str, Any], budget: _Budget) -> None:
    total = sum(_weigh(arg, budget) for arg in args)
    total += sum(_weigh(value, budget) for name, value in kwargs.items() if name not in ("_loop_vars", "_block_vars"))
    if total > MAX_OUTPUT:
        raise _Refused(f"arguments of more than {MAX_OUTPUT:,} characters or items")


def _guard_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter: it counts as a step, its inputs and result are weighed, and a filter that can
    multiply its input (``replace``, ``center``...) is refused before it runs when the result would be too big."""
    estimate = _FILTER_SIZES.get(name)
    signature = inspect.signature(fn) if estimate is not None else None
    # jinja2 passes an eval context first to some filters whose signature does not show it (async variants)
    hidden = int(getattr(fn, "jinja_pass_arg", None) is not None and getattr(inspect.unwrap(fn), "jinja_pass_arg", None) is None)

    @functools.wraps(fn)  # keeps jinja2's pass_context/pass_eval_context mark
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = _current()
        budget.spend()
        _inputs_weight(args, kwargs, budget)
        if estimate is not None and signature is not None:
            try:
                bound = signature.bind(*args[hidden:], **kwargs)
            except TypeError:
                pass  # the filter itself says what is wrong with its arguments
            else:
                bound.apply_defaults()
                _limit(estimate(bound.arguments, budget), f"the {name} filter")
                args, kwargs = (*args[:hidden], *bound.args), bound.kwargs
        return _checked(fn(*args, **kwargs), budget, f"the {name} filter made a value")

    return guarded


def _tojson(value: Any, indent: int | str | None = None) -> str:
    width = indent if isinstance(indent, int) else len(indent or "")
    if width > MAX_JSON_INDENT:
        raise _Refused(f"tojson indent {_short(indent)} is wider than {MAX_JSON_INDENT}")
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _range(*args: int) -> range:
    try:
        return safe_range(*args)
    except OverflowError:
        raise _Refused(f"range() of more than {MAX_RANGE:,} items") from None


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002 (jinja2's names)
    _limit(_count(n, "lipsum paragraphs") * _count(max, "lipsum words") * 12, "lipsum()")
    return generate_lorem_ipsum(n, html, min, max)


class _Guards(NodeTransformer):
    """Route the template constructs that the sandbox does not intercept through the environment:
    loop iterables (to count steps), ``~`` and list, tuple and dict literals (to weigh what they build)."""

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


class _BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with the limits above. See the module docstring for what is checked where.

    Only ``*``, ``**``, ``+`` and ``%`` are intercepted: ``-``, ``/`` and ``//`` cannot make a value
    much bigger than their operands, nor can unary ``-`` and ``+``, so those stay native and fast.
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def _generate(self, source: nodes.Template, name: str | None, filename: str | None, defer_init: bool = False) -> str:
        # jinja2's documented hook between parsing and code generation; expressions pass here too
        _Guards(self).visit(source)
        return super()._generate(source, name, filename, defer_init=defer_init)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = _current()
        if operator == "**":
            result = _power(left, right)
        elif operator == "*":
            result = _repeat(left, right, budget)
        elif operator == "+":
            if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
                _limit(_weigh(left, budget) + _weigh(right, budget), "'+'")
            result = left + right
        elif isinstance(left, (str, bytes)):  # '%' on text is printf-style formatting
            _limit(_percent_size(_text(left), right, budget), "'%' formatting")
            result = _checked(left % right, budget, "'%' formatting made a value")
        else:
            result = self.binop_table[operator](left, right)
        if isinstance(result, int) and result.bit_length() > _MAX_INT_BITS:
            raise _Refused(f"'{operator}' would make a number of more than {MAX_INT_DIGITS:,} digits")
        return result

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = _current()
        budget.spend()
        _inputs_weight(args, kwargs, budget)
        owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
        if isinstance(owner, (str, bytes, int)) and not isinstance(owner, bool):
            args, kwargs = _check_method(obj, owner, name, args, kwargs, budget)
        return _checked(super().call(context, obj, *args, **kwargs), budget, f"{name or 'a call'}() made a value")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        template, is_map = value.__self__, value.__name__ == "format_map"

        def bounded(*args: Any, **kwargs: Any) -> str:
            budget = _current()
            mapping = args[0] if is_map and args and isinstance(args[0], Mapping) else kwargs
            _limit(_format_size(template, () if is_map else args, mapping, budget), "format()")
            return _checked(wrapped(*args, **kwargs), budget, "format() made a value")  # type: ignore[no-any-return]

        return bounded

    def concat(self, chunks: Iterable[str]) -> str:
        """Join a render's output (or a macro's, a block's), stopping as soon as it is too long."""
        parts, total = [], 0
        for chunk in chunks:
            total += len(chunk)
            if total > MAX_OUTPUT:
                raise _Refused(f"the output would be more than {MAX_OUTPUT:,} characters")
            parts.append(chunk)
        return "".join(parts)

    def _bench_iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        budget = _current()
        for item in iterable:
            budget.spend()
            yield item

    def _bench_concat(self, *parts: Any) -> str:
        return "".join(map(str, parts))  # weighed by call() on the way in and out

    def _bench_literal(self, value: Any) -> Any:
        return value  # weighed by call()


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 1 and abs(base) > 1:
        if exponent > MAX_EXPONENT:
            raise _Refused(f"'**' with an exponent of {_short(exponent)}; the largest allowed is {MAX_EXPONENT:,}")
        if exponent * math.log10(abs(base)) > MAX_INT_DIGITS:
            raise _Refused(
                f"{_short(base)} ** {exponent} would have more than {MAX_INT_DIGITS:,} digits"
            )
    return base**exponent  # a float that overflows raises OverflowError, reported like any other error


def _repeat(left: Any, right: Any, budget: _Budget) -> Any:
    sequence, times = (left, right) if isinstance(right, int) else (right, left)
    if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(times, int) and times > 1:
        size = _weigh(sequence, budget)
        if size * times > MAX_REPEAT:
            raise _Refused(
                f"'*' repeating {size:,} characters or items {_short(times)} times; "
                f"the most it may make is {MAX_REPEAT:,}"
            )
    return left * right


def _check_method(
    obj: Any, owner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], budget: _Budget
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse a str/bytes/int method call that would make a value too big; hand back its arguments
    (a generator given to ``join`` is read into a list first)."""
    if name not in ("center", "ljust", "rjust", "zfill", "expandtabs", "replace", "join", "translate", "to_bytes"):
        return args, kwargs
    plain = {k: v for k, v in kwargs.items() if k not in ("_loop_vars", "_block_vars")}
    try:
        bound = inspect.signature(obj).bind(*args, **plain)
    except (TypeError, ValueError):
        return args, kwargs  # the call itself will say what is wrong
    bound.apply_defaults()
    _limit(_method_size(owner, name, bound.arguments, budget), f"{name}()")
    passed_on = {k: v for k, v in kwargs.items() if k in ("_loop_vars", "_block_vars")}
    return tuple(bound.args), {**passed_on, **bound.kwargs}


def _make_env(loader: jinja2.BaseLoader | None) -> _BoundedEnvironment:
    env = _BoundedEnvironment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=lambda value: _checked(value, _current(), "an output"),
    )
    env.filters["tojson"] = _tojson
    env.filters = {name: _guard_filter(name, fn) for name, fn in env.filters.items()}
    env.globals["range"] = _range
    env.globals["lipsum"] = _lipsum
    return env


class TemplateRenderer:
    """Renders templates for one suite; ``{% include %}`` resolves inside the suite's folder only.

    Args:
        root: the folder that holds the suite; includes and template files are looked up there.
        path: the suite file as shown in messages.
    """

    def __init__(self, root: Path | None, path: str = "<suite>") -> None:
        self.root = root
        self.path = path
        loader = jinja2.FileSystemLoader(str(root)) if root is not None else None
        self.env = _make_env(loader)
        # compiling costs ~1 ms and every case renders the same few sources (MT-Bench: 480 cases,
        # 4 judge prompts each): compile each source once; template files are cached by jinja2
        self._compile = lru_cache(maxsize=1024)(self.env.from_string)
        self._compile_expression = lru_cache(maxsize=1024)(
            functools.partial(self.env.compile_expression, undefined_to_none=False)
        )

    def render(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> str:
        """Render ``source`` as a template.

        Raises:
            CaseError: naming the key and line, for any error the template raises (a missing
                variable, a syntax error, a division by zero, a limit of this module...).
        """
        try:
            with _bounded():
                return self._compile(source).render(variables)
        except Exception as exc:  # noqa: BLE001 (every error of an untrusted template is the suite's)
            raise _case_error(exc, self.path, key, line) from exc

    def render_file(self, name: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> str:
        """Render a template file that sits next to the suite (or below it).

        Raises:
            CaseError: as ``render``, or when the file does not exist under the suite's folder.
        """
        try:
            with _bounded():
                return self.env.get_template(name).render(variables)
        except Exception as exc:  # noqa: BLE001
            raise _case_error(exc, self.path, key, line, files=self.root) from exc

    def check(self, source: str, *, from_file: bool = False, key: str = "", line: int | None = None) -> None:
        """Compile a template that is rendered later (a turn that reads earlier answers).

        Raises:
            CaseError: for a syntax error, or a template file that does not exist.
        """
        try:
            if from_file:
                self.env.get_template(source)
            else:
                self.env.parse(source)
        except Exception as exc:  # noqa: BLE001
            raise _case_error(exc, self.path, key, line, files=self.root) from exc

    def evaluate(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> Any:
        """Render a value, keeping the native type when it is one ``{{ expression }}``.

        Non-string values are returned unchanged, so data may mix literals and templates.

        Raises:
            CaseError: as ``render``.
        """
        if not isinstance(source, str):
            return source
        match = _SINGLE_EXPRESSION.match(source)
        if match is None or "{{" in match.group("expr") or "}}" in match.group("expr"):
            return self.render(source, variables, key=key, line=line)
        return self.expression(match.group("expr"), variables, key=key, line=line)

    def expression(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> Any:
        """Evaluate a bare jinja2 expression such as ``category == 'math'``.

        Raises:
            CaseError: as ``render``.
        """
        try:
            with _bounded():
                compiled = self._compile_expression(source)
                value = compiled(**variables)
                if isinstance(value, jinja2.Undefined):
                    value._fail_with_undefined_error()
                return _checked(value, _current(), "the expression made a value")
        except Exception as exc:  # noqa: BLE001
            raise _case_error(exc, self.path, key, line) from exc


def _case_error(
    exc: Exception, path: str | None, key: str | None, line: int | None, files: Path | None | bool = False
) -> CaseError:
    """The CaseError a suite author sees for any error of a template: never a traceback of ours.

    ``files`` is the folder template files are looked up in, when the caller asked for a file.
    """
    hint = None
    if isinstance(exc, jinja2.TemplateNotFound) and files is not False:
        message = f"template file '{exc.name}' not found under {files}"
    elif isinstance(exc, jinja2.UndefinedError):
        message = f"template error: {exc.message}"
        hint = "define it under variables:, in the task's vars:, or as a matrix or dataset field"
    elif isinstance(exc, _Refused):
        message, hint = f"template error: {exc.message}", _LIMIT_HINT
    elif isinstance(exc, jinja2.TemplateError):
        message = f"template error: {getattr(exc, 'message', None) or exc}"
    elif isinstance(exc, OverflowError):
        message = f"template error: a number too large to compute ({exc})"
    elif isinstance(exc, RecursionError):
        message = "template error: nested too deeply (a macro or include that calls itself, or brackets hundreds deep)"
    else:
        message = f"template error: {type(exc).__name__}: {exc}" if str(exc) else f"template error: {type(exc).__name__}"
    return CaseError(message, path=path, line=line, key=key or None, hint=hint)


@lru_cache(maxsize=1)
def _standalone_env() -> _BoundedEnvironment:
    return _make_env(None)


@lru_cache(maxsize=1024)
def _standalone_template(source: str) -> jinja2.Template:
    # replay keys and scripted replies render on every call: compile each source once
    return _standalone_env().from_string(source)


def render_standalone(source: str, variables: Mapping[str, Any]) -> str:
    """Render a small template that belongs to no suite (e.g. a model's system-fold wrapper).

    Raises:
        CaseError: for any error the template raises.
    """
    try:
        with _bounded():
            return _standalone_template(source).render(variables)
    except Exception as exc:  # noqa: BLE001
        raise _case_error(exc, None, None, None) from exc
