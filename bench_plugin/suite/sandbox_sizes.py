"""How big a format, method or filter result would be, so the sandbox can refuse it before it runs."""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from typing import Any

from bench_plugin.core.errors import LimitExceeded
from bench_plugin.suite.sandbox_limits import Budget, count, weigh

_PERCENT_FIELD = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?(?P<kind>.)?", re.DOTALL
)
_FORMAT_NUMBER = re.compile(r"\d+")
# room for the widest conversion of a scalar (``'%f' % 1e308`` has 316 characters)
_SCALAR_ROOM = 320
#: The str, bytes and int methods that can make more than they are given.
GROWING_METHODS = frozenset(
    {"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "join", "translate", "to_bytes"}
)


def as_text(value: Any) -> str:
    """``value`` as a str: bytes read as latin-1 (one character per byte), anything else through ``str``."""
    return value if isinstance(value, str) else value.decode("latin-1") if isinstance(value, bytes) else str(value)


def percent_size(template: str, args: Any, budget: Budget) -> int:
    """An upper bound on the length of ``template % args``.

    Args:
        template: the printf-style format.
        args: what ``%`` is given: one value, a tuple or a mapping.
        budget: the render's budget, for weighing the arguments.

    Returns:
        The most characters the formatting can make.

    Raises:
        LimitExceeded: for a width or precision beyond MAX_REPEAT, or a ``*`` width.
    """
    size = len(template)
    positional = list(args) if isinstance(args, tuple) else [args]
    for match in _PERCENT_FIELD.finditer(template):
        if match["kind"] != "%":
            size += _percent_room(match) + _SCALAR_ROOM + weigh(_percent_arg(match, args, positional), budget)
    return size


def _percent_room(field: re.Match[str]) -> int:
    """The width and precision a % field asks for."""
    if "*" in (field["width"], field["precision"]):
        raise LimitExceeded("'*' widths in % formats are not supported; write the width as a number")
    return count(int(field["width"] or 0), "a width") + count(int(field["precision"] or 0), "a precision")


def _percent_arg(field: re.Match[str], args: Any, positional: list[Any]) -> Any:
    """The value a % field formats: by its key from a mapping, else the next of ``positional`` (taken from it)."""
    if field["key"] is not None and isinstance(args, Mapping):
        return args.get(field["key"])
    return positional.pop(0) if positional else None


def format_size(template: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], budget: Budget) -> int:
    """An upper bound on the length of ``template.format(*args, **kwargs)``.

    Args:
        template: the ``str.format`` template.
        args: the positional arguments.
        kwargs: the named arguments (or the mapping given to ``format_map``).
        budget: the render's budget, for weighing the arguments.

    Returns:
        The most characters the formatting can make.

    Raises:
        LimitExceeded: for a field width beyond MAX_REPEAT, or a nested field in a format spec.
    """
    size = len(template)
    auto = 0
    for _, name, spec, _ in string.Formatter().parse(template):
        if name is None:
            continue
        width = _format_width(spec)
        arg, auto = _format_arg(re.split(r"[.\[]", name, maxsplit=1)[0], args, kwargs, auto)
        size += width + _SCALAR_ROOM + weigh(arg, budget)
    return size


def _format_width(spec: str | None) -> int:
    """The widest number in a field's format spec (a width or a precision)."""
    if spec and "{" in spec:
        raise LimitExceeded("nested fields in format specs are not supported; write the width as a number")
    return count(max((int(n) for n in _FORMAT_NUMBER.findall(spec or "")), default=0), "a format width")


def _format_arg(first: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], auto: int) -> tuple[Any, int]:
    """The value a field (named by ``first``, its name before any ``.`` or ``[``) formats, and the next auto index."""
    if first and not first.isdigit():
        return kwargs.get(first), auto
    index = int(first) if first else auto
    return (args[index] if index < len(args) else None), auto + (not first)


def _replaced_size(text: str, old: str, new: str, times: Any) -> int:
    hits = len(text) + 1 if not old else text.count(old)
    if isinstance(times, int) and times >= 0:
        hits = min(hits, times)
    return len(text) + hits * max(0, len(new) - len(old))


def _join_items(arguments: dict[str, Any], key: str) -> list[Any]:
    items = list(arguments[key])  # a generator from map() is read once, here, and handed on as a list
    arguments[key] = items
    return items


def method_size(owner: Any, name: str, arguments: dict[str, Any], budget: Budget) -> int:
    """The size a call of one of the GROWING_METHODS would make.

    Args:
        owner: the str, bytes or int the method belongs to.
        name: the method's name.
        arguments: the call's bound arguments, defaults applied; a generator given to ``join`` is
            replaced here by the list it was read into.
        budget: the render's budget, for weighing the arguments.

    Returns:
        An upper bound on the length of the result, 0 for a method that cannot grow.

    Raises:
        LimitExceeded: for a width, tab size or length beyond MAX_REPEAT.
    """
    if isinstance(owner, int):
        return count(arguments.get("length", 1), "to_bytes() length") if name == "to_bytes" else 0
    size = _METHOD_SIZES.get(name)
    return size(owner, name, arguments, budget) if size is not None else 0


# The str and bytes methods that can make more than they are given: the size each would make.
def _padded_size(owner: str | bytes, name: str, arguments: dict[str, Any], budget: Budget) -> int:
    return max(len(owner), count(arguments.get("width"), f"{name}() width"))


def _expandtabs_size(owner: str | bytes, name: str, arguments: dict[str, Any], budget: Budget) -> int:
    tabsize = arguments.get("tabsize", 8)
    tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
    return len(owner) + tabs * max(0, count(tabsize, "tabsize"))


def _replace_method_size(owner: str | bytes, name: str, arguments: dict[str, Any], budget: Budget) -> int:
    return _replaced_size(as_text(owner), as_text(arguments["old"]), as_text(arguments["new"]), arguments.get("count"))


def _join_method_size(owner: str | bytes, name: str, arguments: dict[str, Any], budget: Budget) -> int:
    items = _join_items(arguments, next(iter(arguments)))  # bytes.join names it iterable_of_bytes
    return sum(weigh(item, budget) for item in items) + max(0, len(items) - 1) * len(owner)


def _translate_size(owner: str | bytes, name: str, arguments: dict[str, Any], budget: Budget) -> int:
    if not isinstance(arguments["table"], Mapping):
        return 0
    longest = max((len(v) for v in arguments["table"].values() if isinstance(v, (str, bytes))), default=1)
    return len(owner) * max(1, longest)


_METHOD_SIZES: Mapping[str, Callable[[Any, str, dict[str, Any], Budget], int]] = {
    **dict.fromkeys(("center", "ljust", "rjust", "zfill"), _padded_size),
    "expandtabs": _expandtabs_size,
    "replace": _replace_method_size,
    "join": _join_method_size,
    "translate": _translate_size,
}


# Filters that can make more than they are given: the size each would make, from its bound arguments.
def _center_size(a: dict[str, Any], budget: Budget) -> int:
    return weigh(a["value"], budget) + count(a["width"], "center width")


def _indent_size(a: dict[str, Any], budget: Budget) -> int:
    text, width = as_text(a["s"]), a["width"]
    pad = count(width, "indent width") if isinstance(width, int) else len(as_text(width))
    return len(text) + pad * (text.count("\n") + 1)


def _replace_size(a: dict[str, Any], budget: Budget) -> int:
    return _replaced_size(as_text(a["s"]), as_text(a["old"]), as_text(a["new"]), a["count"])


def _join_size(a: dict[str, Any], budget: Budget) -> int:
    items = _join_items(a, "value")
    return sum(weigh(item, budget) for item in items) + max(0, len(items) - 1) * len(as_text(a["d"]))


def _wordwrap_size(a: dict[str, Any], budget: Budget) -> int:
    text, width = as_text(a["s"]), a["width"]
    lines = 2 * len(text) // max(1, width if isinstance(width, int) else 1) + text.count("\n") + 1
    return len(text) + lines * len(as_text(a["wrapstring"] or "\n"))


def _urlize_size(a: dict[str, Any], budget: Budget) -> int:
    text = as_text(a["value"])
    extra = len(as_text(a["target"] or "")) + len(as_text(a["rel"] or "")) + 64
    return 3 * len(text) + (len(text) // 4 + 1) * extra


def _batch_size(a: dict[str, Any], budget: Budget) -> int:
    return weigh(a["value"], budget) + count(a["linecount"], "batch size")


def _slice_size(a: dict[str, Any], budget: Budget) -> int:
    return weigh(a["value"], budget) + count(a["slices"], "slice count")


def _format_filter_size(a: dict[str, Any], budget: Budget) -> int:
    return percent_size(as_text(a["value"]), a["kwargs"] or a["args"], budget)


#: The filters that can make more than they are given, each with the size it would make from its
#: bound arguments (a generator given to ``join`` is replaced by the list it was read into).
FILTER_SIZES: Mapping[str, Callable[[dict[str, Any], Budget], int]] = {
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
