"""Interval charts: a dot per model with its 95% whiskers, for scores (with bars) and ratings (without)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench_plugin.report.dashboard.svg import (
    INK,
    MUTED,
    PLOT_WIDTH,
    ROW_PX,
    Scale,
    esc,
    label_width,
    line,
    nice_domain,
    num,
    rect,
    svg,
    text,
    titled_label,
    x_axis,
)


@dataclass(frozen=True)
class Interval:
    """One row of an interval chart: a value with an optional interval around it.

    Attributes:
        label: the row's name (a model's label).
        value: the point estimate; None draws an empty row.
        low: the interval's lower bound, or None for no whisker.
        high: the interval's upper bound, or None for no whisker.
        colour: the row's colour.
        tip: the tooltip of the row's mark (figures with their denominators).
    """

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    colour: str = "#4e79a7"
    tip: str = ""


def _finite(*values: float | None) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def interval_chart(
    rows: Sequence[Interval],
    *,
    chart: str,
    label: str,
    domain: tuple[float, float] | None = None,
    bars: bool = True,
    decimals: int = 3,
) -> str:
    """Horizontal rows, each a dot with its interval whiskers (and a bar from the axis when ``bars``).

    Args:
        rows: the rows, top to bottom.
        chart: the chart's kind (``data-chart``).
        label: what the chart shows, for screen readers.
        domain: the value axis; default: the rows' values and bounds.
        bars: draw a pale bar from the axis start to each value (scores); off for ratings.
        decimals: the decimals of the value written right of the plot.
    """
    left = label_width(row.label for row in rows) + 6
    top, height = 8.0, 8.0 + ROW_PX * len(rows)
    low, high = domain if domain is not None else _padded_domain(rows)
    layout = _Rows(Scale(low, high, left, left + PLOT_WIDTH), left, low if bars else None, decimals)
    parts = [x_axis(layout.scale, top, height)]
    for index, row in enumerate(rows):
        parts += layout.row(row, top + ROW_PX * index + ROW_PX / 2)
    return svg(left + PLOT_WIDTH + 60, height + 22, "".join(parts), chart=chart, label=label)


def _padded_domain(rows: Sequence[Interval]) -> tuple[float, float]:
    """The rows' values and bounds, on a round axis with a margin (no dot on the frame)."""
    low, high = nice_domain(v for row in rows for v in _finite(row.value, row.low, row.high))
    return low - (high - low) * 0.05, high + (high - low) * 0.05


@dataclass(frozen=True)
class _Rows:
    """Where an interval chart's rows go: the value scale, the labels' edge, where bars start (None: no bars)."""

    scale: Scale
    left: float
    bar_from: float | None
    decimals: int

    def row(self, row: Interval, y: float) -> list[str]:
        """One row at height ``y``: its label, then its mark and value, or "no value"."""
        parts = [titled_label(self.left - 6, y, row.label, self.left - 10)]
        if row.value is None or not math.isfinite(row.value):
            return [*parts, text(self.left + 4, y, "no value", fill=MUTED)]
        right = self.left + PLOT_WIDTH
        return [*parts, f'<g class="mark">{"".join(self._mark(row, row.value, y))}</g>',
                text(right + 8, y, f"{row.value:.{self.decimals}f}", fill=MUTED)]

    def _mark(self, row: Interval, value: float, y: float) -> list[str]:
        """The row's tooltip, bar, whiskers and dot."""
        x = self.scale(value)
        mark = [f"<title>{esc(row.tip)}</title>"] if row.tip else []
        if self.bar_from is not None:
            start = self.scale(self.bar_from)
            mark.append(rect(min(start, x), y - 7, abs(x - start), 14, row.colour, extra=' opacity="0.35"'))
        mark += self._whiskers(row, y)
        mark.append(f'<circle cx="{num(x)}" cy="{num(y)}" r="4.5" fill="{row.colour}" stroke="{INK}"/>')
        return mark

    def _whiskers(self, row: Interval, y: float) -> list[str]:
        """The interval's line and end ticks, when both bounds are numbers."""
        bounds = _finite(row.low, row.high)
        if len(bounds) < 2:
            return []
        x1, x2 = (self.scale(bound) for bound in bounds)
        return [line(x1, y, x2, y, width=1.5), line(x1, y - 5, x1, y + 5, width=1.5),
                line(x2, y - 5, x2, y + 5, width=1.5)]
