"""``load:`` (and ``--bench-load``): the load a latency benchmark puts on its endpoint, step by step.

``load: {in_flight: [8, 32, 128]}`` runs every case of the suite once per step, the steps one after the
other: first with 8 cases in flight, then 32, then 128. ``load: {rate: [1, 2, 4]}`` starts cases at that
many a second instead (an open loop: a case starts on time whether or not the earlier ones answered).
Each step's cases are their own items (``...-run1-in_flight8]``), so the report has one table per step:
throughput, latency percentiles, errors (``report/latency.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("in_flight", "rate")
MAX_IN_FLIGHT = 4096


@dataclass(frozen=True)
class LoadStep:
    """One step: ``kind`` ``in_flight`` (``value`` cases at once) or ``rate`` (``value`` cases started a second)."""

    kind: str
    value: float

    @property
    def label(self) -> str:
        """How reports and records name the step: ``in_flight=8``, ``rate=2/s``."""
        return f"in_flight={self.value:g}" if self.kind == "in_flight" else f"rate={self.value:g}/s"

    @property
    def id_part(self) -> str:
        """The step in a case's id: ``in_flight8``, ``rate2``, ``rate0.5``."""
        return f"{self.kind}{self.value:g}"

    @property
    def in_flight(self) -> int | None:
        """The cases in flight the step allows, None for a rate step."""
        return int(self.value) if self.kind == "in_flight" else None


@dataclass(frozen=True)
class LoadShape:
    """The steps of a load, run in order."""

    steps: tuple[LoadStep, ...]

    def most_in_flight(self) -> int:
        """The largest ``in_flight`` of its steps (0 when it has only rate steps)."""
        return max((step.in_flight or 0 for step in self.steps), default=0)


def load_from_yaml(value: Mapping[str, Any] | None) -> LoadShape | None:
    """A suite's ``load:``, checked by the schema already (one key of ``KINDS``, a list of numbers > 0)."""
    if not value:
        return None
    ((kind, numbers),) = value.items()
    return LoadShape(tuple(LoadStep(kind, float(number)) for number in numbers))


def load_from_option(text: str) -> LoadShape:
    """``--bench-load in_flight=8,32,128`` or ``rate=1,2,4``.

    Raises:
        ValueError: a message saying what was expected, for the option's usage error.
    """
    kind, eq, values = text.partition("=")
    kind = kind.strip()
    if kind not in KINDS or not eq:
        raise ValueError(f"expected in_flight=N,N,... or rate=R,R,..., got {text!r}")
    numbers = _numbers(kind, values)
    if not all(_VALID[kind](number) for number in numbers):
        raise ValueError(f"{kind}: expected {_EXPECTED[kind]}, got {values!r}")
    return LoadShape(tuple(LoadStep(kind, n) for n in numbers))


def _numbers(kind: str, values: str) -> list[float]:
    try:
        return [float(part) for part in values.split(",")]
    except ValueError:
        raise ValueError(f"{kind}: expected numbers separated by commas, got {values!r}") from None


_VALID = {"in_flight": lambda n: n.is_integer() and 1 <= n <= MAX_IN_FLIGHT, "rate": lambda n: 0 < n < float("inf")}
_EXPECTED = {"in_flight": f"whole numbers from 1 to {MAX_IN_FLIGHT}", "rate": "numbers > 0 (cases a second)"}
