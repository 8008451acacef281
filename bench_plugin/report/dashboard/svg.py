"""SVG drawing primitives for the dashboard: escaped text, scales, colours and axes, as plain strings.

Charts are drawn on the Python side so they show without JavaScript and need no library. Every
piece of text goes through ``esc`` (model labels, task ids and reasons come from suites and models);
numbers are formatted here, never taken from the data as text.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FONT_PX = 12
CHAR_PX = 7.0  # a generous glyph width of the 12 px sans-serif the page uses (capitals), for fitting labels
MISSING_FILL = "#e4e4e7"
INK = "#27272a"
MUTED = "#71717a"
GRID = "#e4e4e7"
PLOT_WIDTH = 520.0  # the value axis of row charts (intervals, histograms)
ROW_PX = 26.0  # one model per row

# Tableau 10: distinguishable categorical colours for models
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
# viridis, sampled: perceptually even and readable by colour-blind readers, dark = low
_SEQUENTIAL = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
# blue (row worse) - white - orange (row better)
_DIVERGING = ((33, 102, 172), (146, 197, 222), (247, 247, 247), (244, 165, 130), (178, 24, 43))


def esc(text: object) -> str:
    """Text made safe for HTML and SVG content and quoted attributes."""
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate with at most one decimal, without a trailing ``.0``."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def clip_label(text: str, width_px: float) -> str:
    """``text`` cut with an ellipsis to fit ``width_px`` (the full text goes in a ``<title>``)."""
    room = max(1, int(width_px / CHAR_PX))
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"


def label_width(labels: Iterable[str], *, least: float = 48.0, most: float = 220.0) -> float:
    """Pixels for a column of labels: the longest one, between ``least`` and ``most``."""
    longest = max((len(label) for label in labels), default=0)
    return min(most, max(least, longest * CHAR_PX + 8))


@dataclass(frozen=True)
class Scale:
    """A linear map from data values to pixels."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        """The pixel position of ``value``."""
        span = self.high - self.low or 1.0
        return self.start + (value - self.low) / span * (self.end - self.start)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]`` (steps of 1, 2 or 5 times a power of ten)."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return [low] if math.isfinite(low) else []
    step = _tick_step((high - low) / max(count, 1))
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _tick_step(raw: float) -> float:
    """The smallest of 1, 2, 5 or 10 times a power of ten that is at least ``raw``."""
    power = 10 ** math.floor(math.log10(raw))
    step: float = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step


def format_tick(value: float) -> str:
    """A tick label: whole numbers plain, others with up to two decimals."""
    if abs(value - round(value)) < 1e-9:
        return str(round(value))
    return f"{value:.2f}".rstrip("0")


def nice_domain(
    values: Iterable[float], *, floor: float | None = None, ceiling: float | None = None
) -> tuple[float, float]:
    """A domain covering ``values`` (and ``floor``/``ceiling`` when given), never empty."""
    present = [v for v in values if math.isfinite(v)]
    present += [bound for bound in (floor, ceiling) if bound is not None]
    if not present:
        return 0.0, 1.0
    return _widened(min(present), max(present))


def _widened(low: float, high: float) -> tuple[float, float]:
    """``(low, high)``, widened around a single value so that the domain is never empty."""
    if high - low < 1e-12:
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    return low, high


def _mix(stops: Sequence[tuple[int, int, int]], t: float) -> str:
    t = min(1.0, max(0.0, t))
    position = t * (len(stops) - 1)
    index = min(int(position), len(stops) - 2)
    frac = position - index
    low, high = stops[index], stops[index + 1]
    red, green, blue = (round(a + (b - a) * frac) for a, b in zip(low, high, strict=True))
    return f"#{red:02x}{green:02x}{blue:02x}"


def sequential(t: float) -> str:
    """The heat-map colour of ``t`` in [0, 1] (viridis: dark purple low, yellow high)."""
    return _mix(_SEQUENTIAL, t)


def diverging(t: float) -> str:
    """The colour of ``t`` in [-1, 1]: blue below zero, white at zero, red above."""
    return _mix(_DIVERGING, (t + 1.0) / 2.0)


def ink_on(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (a ``#rrggbb`` colour)."""
    red, green, blue = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return "#000" if 0.299 * red + 0.587 * green + 0.114 * blue > 140 else "#fff"


def model_colour(index: int) -> str:
    """The colour of the model at ``index`` (the palette repeats after ten models)."""
    return PALETTE[index % len(PALETTE)]


def svg(width: float, height: float, body: str, *, chart: str, label: str) -> str:
    """A complete inline ``<svg>`` element.

    Args:
        width: the drawing's width in pixels (it scales down to the page's width).
        height: the drawing's height in pixels.
        body: the drawn elements.
        chart: the chart's kind, in ``data-chart`` (tests and styles find charts by it).
        label: what the chart shows, for screen readers (escaped here).
    """
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{esc(chart)}" role="img" '
        f'aria-label="{esc(label)}" width="{num(width)}" height="{num(height)}" '
        f'viewBox="0 0 {num(width)} {num(height)}" font-size="{FONT_PX}">{body}</svg>'
    )


def text(x: float, y: float, content: str, *, anchor: str = "start", fill: str = INK, extra: str = "") -> str:
    """An escaped ``<text>`` element, vertically centred on ``y``."""
    return (
        f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}" dominant-baseline="central" '
        f'fill="{fill}"{extra}>{esc(content)}</text>'
    )


def titled_label(x: float, y: float, full: str, width_px: float, *, anchor: str = "end") -> str:
    """A label clipped to ``width_px``, with the full text as its tooltip."""
    return (
        f'<g><title>{esc(full)}</title>'
        f"{text(x, y, clip_label(full, width_px), anchor=anchor)}</g>"
    )


def rect(x: float, y: float, width: float, height: float, fill: str, *, tip: str | None = None, extra: str = "") -> str:
    """A ``<rect>``, with an escaped tooltip when ``tip`` is given."""
    inner = f"<title>{esc(tip)}</title>" if tip is not None else ""
    return (
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(width, 0.0))}" height="{num(max(height, 0.0))}" '
        f'fill="{fill}"{extra}>{inner}</rect>'
    )


def line(x1: float, y1: float, x2: float, y2: float, *, stroke: str = INK, width: float = 1.0) -> str:
    """A straight ``<path>`` segment."""
    return f'<path d="M{num(x1)} {num(y1)}L{num(x2)} {num(y2)}" stroke="{stroke}" stroke-width="{num(width)}"/>'


def x_axis(scale: Scale, top: float, bottom: float, *, ticks: Sequence[float] | None = None) -> str:
    """Vertical grid lines with tick labels under ``bottom``."""
    parts = []
    for tick in ticks if ticks is not None else nice_ticks(scale.low, scale.high):
        x = scale(tick)
        parts.append(line(x, top, x, bottom, stroke=GRID))
        parts.append(text(x, bottom + 10, format_tick(tick), anchor="middle", fill=MUTED))
    return "".join(parts)


def y_axis(scale: Scale, left: float, right: float, *, ticks: Sequence[float] | None = None) -> str:
    """Horizontal grid lines with tick labels left of ``left``."""
    parts = []
    for tick in ticks if ticks is not None else nice_ticks(scale.low, scale.high):
        y = scale(tick)
        parts.append(line(left, y, right, y, stroke=GRID))
        parts.append(text(left - 4, y, format_tick(tick), anchor="end", fill=MUTED))
    return "".join(parts)


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """Each model's colour, by its position in the suite: a model keeps its colour in every chart."""
    return {model: model_colour(index) for index, model in enumerate(models)}
