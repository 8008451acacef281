"""Bar charts: score histograms per model, grouped bars with whiskers, and stacked shares."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench_plugin.report.dashboard.svg import (
    CHAR_PX,
    MUTED,
    PLOT_WIDTH,
    ROW_PX,
    Scale,
    clip_label,
    esc,
    label_width,
    line,
    nice_domain,
    rect,
    svg,
    text,
    titled_label,
    x_axis,
    y_axis,
)


@dataclass(frozen=True)
class Histogram:
    """One model's score distribution.

    Attributes:
        label: the model's label.
        counts: cases per bin (bins are shared by every model of the chart).
        mean: the mean score, marked with a line, or None.
        colour: the model's colour.
    """

    label: str
    counts: Sequence[int]
    mean: float | None
    colour: str


def histograms(series: Sequence[Histogram], edges: Sequence[float], *, chart: str, label: str) -> str:
    """Small multiples: one histogram row per model over the same bins, bar heights as shares of its cases."""
    left = label_width(s.label for s in series) + 6
    row_h, gap = 46.0, 10.0
    scale = Scale(edges[0], edges[-1], left, left + PLOT_WIDTH)
    shares = [[count / max(sum(s.counts), 1) for count in s.counts] for s in series]
    tallest = max((share for row in shares for share in row), default=0.0) or 1.0
    parts = []
    for index, item in enumerate(series):
        base = 8.0 + (row_h + gap) * index + row_h
        parts.append(titled_label(left - 6, base - row_h / 2, item.label, left - 10))
        parts.append(line(left, base, left + PLOT_WIDTH, base, stroke=MUTED))
        bars = []
        for b, count in enumerate(item.counts):
            x1, x2 = scale(edges[b]), scale(edges[b + 1])
            bar_h = shares[index][b] / tallest * (row_h - 4)
            close = "]" if b == len(item.counts) - 1 else ")"
            tip = f"{item.label}: {count} cases in [{edges[b]:.2f}, {edges[b + 1]:.2f}{close}"
            bars.append(rect(x1 + 0.5, base - bar_h, x2 - x1 - 1, bar_h, item.colour, tip=tip))
        parts.append(f'<g class="bars">{"".join(bars)}</g>')
        if item.mean is not None and math.isfinite(item.mean):
            x = scale(item.mean)
            parts.append(f"<g><title>mean {item.mean:.3f}</title>{line(x, base - row_h, x, base, width=2)}</g>")
    bottom = 8.0 + (row_h + gap) * len(series)
    parts.append(x_axis(scale, bottom - gap, bottom - gap))
    return svg(left + PLOT_WIDTH + 20, bottom + 16, "".join(parts), chart=chart, label=label)


def grouped_bars(
    groups: Sequence[str],
    series: Sequence[tuple[str, str]],
    values: Sequence[Sequence[tuple[float | None, float | None, float | None]]],
    *,
    chart: str,
    label: str,
) -> str:
    """Vertical bars: per group (component) one bar per series (model), with interval whiskers.

    Args:
        groups: the group names, left to right.
        series: ``(label, colour)`` of each bar in a group, with a legend.
        values: ``values[group][series] = (value, low, high)``; None leaves a gap.
        chart: the chart's kind (``data-chart``).
        label: what the chart shows, for screen readers.
    """
    bar_w = max(6.0, min(22.0, 420.0 / max(len(series), 1)))
    longest = max((len(group) for group in groups), default=0)
    group_w = max(bar_w * len(series) + 18, min(96.0, longest * CHAR_PX + 12))
    left, top, plot_h = 44.0, 10.0, 180.0
    found = [v for row in values for cell in row for v in cell if v is not None and math.isfinite(v)]
    low, high = nice_domain(found, floor=0.0, ceiling=1.0)
    scale = Scale(low, high, top + plot_h, top)
    width = max(left + group_w * len(groups) + 10, 300.0)
    parts = [y_axis(scale, left, width - 6)]
    for g, group in enumerate(groups):
        x0 = left + group_w * g + (group_w - bar_w * len(series)) / 2
        for s, (name, colour) in enumerate(series):
            value, lo, hi = values[g][s]
            if value is None or not math.isfinite(value):
                continue
            x = x0 + bar_w * s
            y = scale(value)
            tip = f"{group} · {name}: {value:.3f}"
            if lo is not None and hi is not None:
                tip += f" (95% CI {lo:.3f} to {hi:.3f})"
            mark = [rect(x, min(y, scale(0.0)), bar_w - 2, abs(scale(0.0) - y), colour, tip=tip)]
            if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
                mid = x + (bar_w - 2) / 2
                mark.append(line(mid, scale(lo), mid, scale(hi), width=1.5))
            parts.append(f'<g class="mark">{"".join(mark)}</g>')
        name_x = left + group_w * (g + 0.5)
        parts.append(f"<g><title>{esc(group)}</title>"
                     f"{text(name_x, top + plot_h + 12, clip_label(group, group_w - 4), anchor='middle')}</g>")
    legend_y = top + plot_h + 32
    x = left
    for name, colour in series:
        parts.append(rect(x, legend_y - 5, 10, 10, colour))
        shown = clip_label(name, 150.0)
        parts.append(f"<g><title>{esc(name)}</title>{text(x + 14, legend_y, shown)}</g>")
        x += 14 + len(shown) * CHAR_PX + 14
    return svg(max(width, x), legend_y + 14, "".join(parts), chart=chart, label=label)


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[tuple[str, int, str]]]], *, chart: str, label: str
) -> str:
    """One bar per row split into parts by share: ``(row label, [(part name, count, colour), ...])``, with a legend."""
    left = label_width(name for name, _ in rows) + 6
    parts = []
    for index, (name, pieces) in enumerate(rows):
        y = 8.0 + ROW_PX * index
        parts.append(titled_label(left - 6, y + ROW_PX / 2, name, left - 10))
        total = sum(count for _, count, _ in pieces) or 1
        x = left
        for piece, count, colour in pieces:
            width = PLOT_WIDTH * count / total
            if count:
                tip = f"{name}: {count} {piece} ({count / total:.0%})"
                parts.append(rect(x, y + 4, width, ROW_PX - 8, colour, tip=tip))
            x += width
    legend_y = 8.0 + ROW_PX * len(rows) + 12
    x = left
    for piece, _, colour in rows[0][1] if rows else []:
        parts.append(rect(x, legend_y - 5, 10, 10, colour))
        parts.append(text(x + 14, legend_y, piece))
        x += 14 + len(piece) * CHAR_PX + 14
    return svg(left + PLOT_WIDTH + 10, legend_y + 14, "".join(parts), chart=chart, label=label)
