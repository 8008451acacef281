"""Bar charts: score histograms per model, grouped bars with whiskers, and stacked shares."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

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
    shares = [_shares(s.counts) for s in series]
    bins = _Bins(edges, Scale(edges[0], edges[-1], left, left + PLOT_WIDTH), left, _tallest(shares))
    parts = [part for index, item in enumerate(series) for part in bins.row(index, item, shares[index])]
    bottom = 8.0 + (HISTOGRAM_ROW + HISTOGRAM_GAP) * len(series)
    parts.append(x_axis(bins.scale, bottom - HISTOGRAM_GAP, bottom - HISTOGRAM_GAP))
    return svg(left + PLOT_WIDTH + 20, bottom + 16, "".join(parts), chart=chart, label=label)


def _shares(counts: Sequence[int]) -> list[float]:
    """Each bin's share of a model's cases."""
    return [count / max(sum(counts), 1) for count in counts]


def _tallest(shares: Sequence[Sequence[float]]) -> float:
    """The largest share of any bin, which the bars' height is drawn against (1 when there is none)."""
    return max((share for row in shares for share in row), default=0.0) or 1.0


HISTOGRAM_ROW, HISTOGRAM_GAP = 46.0, 10.0  # a model's histogram, and the space under it


@dataclass(frozen=True)
class _Bins:
    """The shared bins of the histograms: their edges and scale, where rows start, the tallest share."""

    edges: Sequence[float]
    scale: Scale
    left: float
    tallest: float

    def row(self, index: int, item: Histogram, shares: Sequence[float]) -> list[str]:
        """The ``index``-th model's row: its label, its base line, its bars and its mean."""
        base = 8.0 + (HISTOGRAM_ROW + HISTOGRAM_GAP) * index + HISTOGRAM_ROW
        bars = [self._bar(item, b, count, shares[b], base) for b, count in enumerate(item.counts)]
        parts = [titled_label(self.left - 6, base - HISTOGRAM_ROW / 2, item.label, self.left - 10),
                 line(self.left, base, self.left + PLOT_WIDTH, base, stroke=MUTED),
                 f'<g class="bars">{"".join(bars)}</g>']
        if _is_finite(item.mean):
            x = self.scale(item.mean)
            parts.append(f"<g><title>mean {item.mean:.3f}</title>{line(x, base - HISTOGRAM_ROW, x, base, width=2)}</g>")
        return parts

    def _bar(self, item: Histogram, b: int, count: int, share: float, base: float) -> str:
        x1, x2 = self.scale(self.edges[b]), self.scale(self.edges[b + 1])
        bar_h = share / self.tallest * (HISTOGRAM_ROW - 4)
        close = "]" if b == len(item.counts) - 1 else ")"
        tip = f"{item.label}: {count} cases in [{self.edges[b]:.2f}, {self.edges[b + 1]:.2f}{close}"
        return rect(x1 + 0.5, base - bar_h, x2 - x1 - 1, bar_h, item.colour, tip=tip)


def _is_finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


Bar = tuple[float | None, float | None, float | None]
"""A bar's value and the bounds of its interval (None: unknown)."""


def grouped_bars(
    groups: Sequence[str],
    series: Sequence[tuple[str, str]],
    values: Sequence[Sequence[Bar]],
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
    layout = _GroupLayout.of(groups, series, values)
    parts = [y_axis(layout.scale, GROUPS_LEFT, layout.width - 6)]
    for g, group in enumerate(groups):
        parts += layout.group(g, group, series, values[g])
    legend_y = GROUPS_TOP + GROUPS_HEIGHT + 32
    legend, right = _series_legend(series, GROUPS_LEFT, legend_y)
    return svg(max(layout.width, right), legend_y + 14, "".join(parts + legend), chart=chart, label=label)


GROUPS_LEFT, GROUPS_TOP, GROUPS_HEIGHT = 44.0, 10.0, 180.0  # the plot of grouped bars: its left, top and height


@dataclass(frozen=True)
class _GroupLayout:
    """Where grouped bars go: the width of a bar and of a group, the value scale, the plot's width."""

    bar_w: float
    group_w: float
    scale: Scale
    width: float

    @classmethod
    def of(
        cls, groups: Sequence[str], series: Sequence[tuple[str, str]], values: Sequence[Sequence[Bar]]
    ) -> _GroupLayout:
        """Bars as wide as the series allow, groups wide enough for their bars and their names."""
        bar_w = max(6.0, min(22.0, 420.0 / max(len(series), 1)))
        longest = max((len(group) for group in groups), default=0)
        group_w = max(bar_w * len(series) + 18, min(96.0, longest * CHAR_PX + 12))
        found = [v for row in values for cell in row for v in cell if _is_finite(v)]
        low, high = nice_domain(found, floor=0.0, ceiling=1.0)
        scale = Scale(low, high, GROUPS_TOP + GROUPS_HEIGHT, GROUPS_TOP)
        return cls(bar_w, group_w, scale, max(GROUPS_LEFT + group_w * len(groups) + 10, 300.0))

    def group(self, g: int, group: str, series: Sequence[tuple[str, str]], row: Sequence[Bar]) -> list[str]:
        """The ``g``-th group: a bar per series that has a value, then the group's name under them."""
        x0 = GROUPS_LEFT + self.group_w * g + (self.group_w - self.bar_w * len(series)) / 2
        parts = []
        for s, (name, colour) in enumerate(series):
            value, lo, hi = row[s]
            if _is_finite(value):
                parts.append(self._mark(x0 + self.bar_w * s, f"{group} · {name}", colour, value, lo, hi))
        name_x = GROUPS_LEFT + self.group_w * (g + 0.5)
        shown = text(name_x, GROUPS_TOP + GROUPS_HEIGHT + 12, clip_label(group, self.group_w - 4), anchor="middle")
        parts.append(f"<g><title>{esc(group)}</title>{shown}</g>")
        return parts

    def _mark(self, x: float, name: str, colour: str, value: float, lo: float | None, hi: float | None) -> str:
        """One bar with its whisker; ``name`` is the group and the series."""
        y = self.scale(value)
        tip = f"{name}: {value:.3f}"
        if lo is not None and hi is not None:
            tip += f" (95% CI {lo:.3f} to {hi:.3f})"
        mark = [rect(x, min(y, self.scale(0.0)), self.bar_w - 2, abs(self.scale(0.0) - y), colour, tip=tip)]
        if _is_finite(lo) and _is_finite(hi):
            mid = x + (self.bar_w - 2) / 2
            mark.append(line(mid, self.scale(lo), mid, self.scale(hi), width=1.5))
        return f'<g class="mark">{"".join(mark)}</g>'


def _series_legend(series: Sequence[tuple[str, str]], x: float, y: float) -> tuple[list[str], float]:
    """A swatch and a name per series, left to right from ``x``; and where the legend ends."""
    parts = []
    for name, colour in series:
        parts.append(rect(x, y - 5, 10, 10, colour))
        shown = clip_label(name, 150.0)
        parts.append(f"<g><title>{esc(name)}</title>{text(x + 14, y, shown)}</g>")
        x += 14 + len(shown) * CHAR_PX + 14
    return parts, x


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[tuple[str, int, str]]]], *, chart: str, label: str
) -> str:
    """One bar per row split into parts by share: ``(row label, [(part name, count, colour), ...])``, with a legend."""
    left = label_width(name for name, _ in rows) + 6
    parts = [part for index, (name, pieces) in enumerate(rows) for part in _stacked_row(name, pieces, index, left)]
    legend_y = 8.0 + ROW_PX * len(rows) + 12
    parts += _parts_legend(rows[0][1] if rows else [], left, legend_y)
    return svg(left + PLOT_WIDTH + 10, legend_y + 14, "".join(parts), chart=chart, label=label)


def _stacked_row(name: str, pieces: Sequence[tuple[str, int, str]], index: int, left: float) -> list[str]:
    """The ``index``-th row: its label, then a segment per part that has a count."""
    y = 8.0 + ROW_PX * index
    parts = [titled_label(left - 6, y + ROW_PX / 2, name, left - 10)]
    total = sum(count for _, count, _ in pieces) or 1
    x = left
    for piece, count, colour in pieces:
        width = PLOT_WIDTH * count / total
        if count:
            tip = f"{name}: {count} {piece} ({count / total:.0%})"
            parts.append(rect(x, y + 4, width, ROW_PX - 8, colour, tip=tip))
        x += width
    return parts


def _parts_legend(pieces: Sequence[tuple[str, int, str]], x: float, y: float) -> list[str]:
    """A swatch and a name per part, left to right from ``x``."""
    parts = []
    for piece, _, colour in pieces:
        parts.append(rect(x, y - 5, 10, 10, colour))
        parts.append(text(x + 14, y, piece))
        x += 14 + len(piece) * CHAR_PX + 14
    return parts
