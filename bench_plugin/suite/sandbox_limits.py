"""How much one template render may make and spend, so that an untrusted suite cannot exhaust the machine."""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from jinja2.runtime import Context
from jinja2.utils import Namespace

from bench_plugin.core.errors import LimitExceeded

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

#: Bits of the largest integer arithmetic may produce (MAX_INT_DIGITS in binary).
MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))
#: What a suite author is told when a template hits one of these limits.
LIMIT_HINT = "templates are bounded so that a suite cannot exhaust the machine; compute large values elsewhere"



@dataclass
class Budget:
    """What one render may still spend, and the weights it has measured (kept alive so ids stay unique)."""

    steps: int = 0
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_SECONDS)
    weights: dict[int, tuple[object, int]] = field(default_factory=dict)

    def spend(self) -> None:
        """Count one loop iteration, call or filter.

        Raises:
            LimitExceeded: past MAX_STEPS steps, or past the render's deadline.
        """
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise LimitExceeded(f"more than {MAX_STEPS:,} loop iterations, calls and filters in one render")
        if time.monotonic() > self.deadline:
            raise LimitExceeded(f"rendering took more than {MAX_SECONDS:g} seconds")


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("bench_template_budget", default=None)


@contextmanager
def bounded() -> Iterator[None]:
    """Give the render inside one budget; a render nested in another shares the outer one.

    Example:
        ``with bounded(): return template.render(variables)``
    """
    if _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set(Budget())
    try:
        yield
    finally:
        _BUDGET.reset(token)


def current_budget() -> Budget:
    """The budget of the render under way.

    Returns:
        The budget set by ``bounded``, or a fresh one outside a render (jinja2 folding constants
        while it compiles), so that each check still holds on its own.
    """
    return _BUDGET.get() or Budget()


def weigh(value: Any, budget: Budget, depth: int = 0) -> int:
    """Characters plus items in ``value``, through nested containers, capped just above MAX_OUTPUT.

    Containers are memoised per render, so a list that holds the same big list a thousand times is
    weighed once and counts a thousand times, which is what printing it would cost. Namespaces are
    not: ``{% set ns.x = ... %}`` changes them.

    Args:
        value: anything a template built or was given.
        budget: the render's budget, which keeps the weights already measured.
        depth: how deep in containers ``value`` sits; deeper than 100 weighs as too big.

    Returns:
        The weight, at most ``MAX_OUTPUT + 1``.
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
    total = _contents_weight(value, budget, depth)
    if not isinstance(value, Namespace):
        budget.weights[id(value)] = (value, total)
    return total


def _contents_weight(container: Any, budget: Budget, depth: int) -> int:
    """One for the container plus the weight of what it holds, capped just above MAX_OUTPUT."""
    cap = MAX_OUTPUT + 1
    if depth >= 100:  # deeper is refused as too big: the weight of a cycle (through a namespace) is unbounded
        return cap
    total = 1
    for item in _contents(container):
        total += weigh(item, budget, depth + 1)
        if total >= cap:
            break
    return min(total, cap)


def _contents(container: Any) -> Iterable[Any]:
    """A mapping's (key, value) pairs, a namespace's attributes as pairs, or the items of anything else."""
    if isinstance(container, Namespace):
        attributes: dict[str, Any] = object.__getattribute__(container, "_Namespace__attrs")
        return attributes.items()
    return container.items() if isinstance(container, Mapping) else container


def checked(value: Any, budget: Budget, what: str = "a value") -> Any:
    """Hand back ``value`` when it weighs at most MAX_OUTPUT.

    Args:
        value: what a template built.
        budget: the render's budget.
        what: the value as named in the message.

    Returns:
        ``value`` itself.

    Raises:
        LimitExceeded: when ``value`` is heavier.
    """
    if weigh(value, budget) > MAX_OUTPUT:
        raise LimitExceeded(f"{what} of more than {MAX_OUTPUT:,} characters or items")
    return value


def count(value: Any, what: str) -> int:
    """An integer argument that sets a size (a width, a padding, a count), within MAX_REPEAT.

    Args:
        value: the argument as the template passed it.
        what: the argument as named in the message.

    Returns:
        ``value`` when it is an integer, else 0.

    Raises:
        LimitExceeded: for an integer larger than MAX_REPEAT.
    """
    if isinstance(value, int) and value > MAX_REPEAT:
        raise LimitExceeded(f"{what} of {short(value)} is larger than {MAX_REPEAT:,}")
    return value if isinstance(value, int) else 0


def limit(size: int, what: str) -> None:
    """Refuse an operation whose result would have ``size`` characters, beyond MAX_OUTPUT.

    Raises:
        LimitExceeded: when ``size`` is larger than MAX_OUTPUT.
    """
    if size > MAX_OUTPUT:
        raise LimitExceeded(f"{what} would make more than {MAX_OUTPUT:,} characters")


def short(value: Any, width: int = 40) -> str:
    """``value`` as a message shows it: a repr cut to ``width``, or the digits of a huge number."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a number of {value.bit_length() * math.log10(2):,.0f} digits"
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
