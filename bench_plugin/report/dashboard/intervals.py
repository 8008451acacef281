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
    right = left + PLOT_WIDTH
    top, height = 8.0, 8.0 + ROW_PX * len(rows)
    if domain is None:
        low, high = nice_domain(v for row in rows for v in _finite(row.value, row.low, row.high))
        low, high = low - (high - low) * 0.05, high + (high - low) * 0.05  # no dot on the frame
    else:
        low, high = domain
    scale = Scale(low, high, left, right)
    parts = [x_axis(scale, top, height)]
    for index, row in enumerate(rows):
        y = top + ROW_PX * index + ROW_PX / 2
        parts.append(titled_label(left - 6, y, row.label, left - 10))
        if row.value is None or not math.isfinite(row.value):
            parts.append(text(left + 4, y, "no value", fill=MUTED))
            continue
        x = scale(row.value)
        mark = [f"<title>{esc(row.tip)}</title>"] if row.tip else []
        if bars:
            mark.append(rect(min(scale(low), x), y - 7, abs(x - scale(low)), 14, row.colour, extra=' opacity="0.35"'))
        if row.low is not None and row.high is not None and math.isfinite(row.low) and math.isfinite(row.high):
            x1, x2 = scale(row.low), scale(row.high)
            mark += [line(x1, y, x2, y, width=1.5), line(x1, y - 5, x1, y + 5, width=1.5),
                     line(x2, y - 5, x2, y + 5, width=1.5)]
        mark.append(f'<circle cx="{num(x)}" cy="{num(y)}" r="4.5" fill="{row.colour}" stroke="{INK}"/>')
        parts.append(f'<g class="mark">{"".join(mark)}</g>')
        parts.append(text(right + 8, y, f"{row.value:.{decimals}f}", fill=MUTED))
    return svg(right + 60, height + 22, "".join(parts), chart=chart, label=label)
