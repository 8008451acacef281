"""Frozen specs of a suite's ``aggregates:``: bin sets, slices, columns and tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.frozen import freeze_fields

# fields every record has, besides bins, mapping tags and variables
RECORD_FIELDS = ("model", "model_id", "model_label", "provider", "task", "run", "status", "suite")
COUNTS = ("count", "count_scored")


@dataclass(frozen=True)
class Bin:
    """One label of a bin set: a raw value ``low <= v <= high`` (None: unbounded on that side)."""

    label: str
    low: float | None = None
    high: float | None = None

    @property
    def bounded(self) -> bool:
        """Whether the bin has a bound (the one without takes what no other bin does)."""
        return self.low is not None or self.high is not None

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies within the bounds."""
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


@dataclass(frozen=True)
class BinSet:
    """Named bins over a component's raw value, e.g. stance: neg <= -0.33, pos >= 0.33, else neu."""

    name: str
    of: str
    bins: tuple[Bin, ...]

    def label_of(self, value: float) -> str | None:
        """The first bounded bin that holds ``value``, else the unbounded one, else None."""
        for bin_ in self.bins:
            if bin_.bounded and bin_.holds(value):
                return bin_.label
        return next((bin_.label for bin_ in self.bins if not bin_.bounded), None)


Condition = Mapping[str, tuple[str, ...]]
"""Field -> accepted values as text: every field must hold one of its values."""


@dataclass(frozen=True)
class Baseline:
    """The slice an uplift subtracts: its event rate per ``key`` (plus ``model`` when per model)."""

    where: Condition
    key: tuple[str, ...] = ()
    per_model: bool = False

    def __post_init__(self) -> None:
        freeze_fields(self, "where")

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields a baseline rate is kept per."""
        return ("model", *self.key) if self.per_model else self.key


@dataclass(frozen=True)
class Column:
    """One column of an aggregate table.

    ``fn`` is count, count_scored, mean, rate or uplift (``proportions`` in the YAML becomes one rate
    column per label).
    """

    name: str
    fn: str
    of: str | None = None
    where: Condition = field(default_factory=dict)
    event: Condition = field(default_factory=dict)
    baseline: Baseline | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "where", "event")

    @property
    def is_count(self) -> bool:
        """Whether the column counts cases (rather than averaging a value)."""
        return self.fn in COUNTS


@dataclass(frozen=True)
class Sort:
    """Row order by one column (a by-field or a figure); rows without a value come last."""

    column: str
    descending: bool = False


@dataclass(frozen=True)
class Table:
    """An aggregate table: rows grouped by ``by``, one cell per column.

    Rows are sorted by the ``by`` values, or by ``sort``; ``csv`` names a file to write the table to.
    """

    name: str
    title: str
    by: tuple[str, ...]
    columns: tuple[Column, ...]
    csv: str | None = None
    sort: Sort | None = None


@dataclass(frozen=True)
class AggregateSpec:
    """Everything under a suite's ``aggregates:``."""

    bins: Mapping[str, BinSet] = field(default_factory=dict)
    tables: tuple[Table, ...] = ()

    def __post_init__(self) -> None:
        freeze_fields(self, "bins")


def as_text(value: Any) -> str:
    """A value as the aggregates compare it: as text.

    So ``amount: 50`` in YAML matches a variable 50; booleans read ``true``/``false``, like tags.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
