"""Grids of coloured cells: the model x task heat map and the model x model comparison matrix."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench_plugin.report.dashboard.svg import (
    CHAR_PX,
    MISSING_FILL,
    MUTED,
    clip_label,
    diverging,
    esc,
    format_tick,
    ink_on,
    label_width,
    num,
    rect,
    sequential,
    svg,
    text,
    titled_label,
)


def heat_map(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    chart: str,
    label: str,
    domain: tuple[float, float] = (0.0, 1.0),
) -> str:
    """A grid of coloured cells: ``values[row][column]``, None drawn grey.

    Cells shrink to fit many columns (down to 3 px, beyond which the chart scrolls sideways); column
    labels are drawn only while they fit, and every cell's tooltip names its row, column and value.
    """
    left = label_width(rows, most=ROW_LABEL_PX) + 6
    cell_w = max(3.0, min(28.0, 760.0 / max(len(columns), 1)))
    cell_h = 22.0
    show_columns = cell_w >= 11.0
    slant = label_width(columns, most=COLUMN_LABEL_PX) if show_columns else 0.0
    top = slant * _RISE + 6 if show_columns else 8.0
    low, high = domain
    heat = _Heat(left, top, cell_w, cell_h, low, high - low or 1.0)
    parts = [_column_label(left + cell_w * index + cell_w / 2, top - 4, column)
             for index, column in enumerate(columns if show_columns else [])]
    for r, row in enumerate(rows):
        parts += heat.row(r, row, columns, values[r])
    bottom = top + cell_h * len(rows)
    parts.append(_legend(left, bottom + 12, low, high))
    # the last column's slanted label reaches right of the grid; the legend ends with its words
    width = max(left + cell_w * len(columns) + slant * _RUN, left + _LEGEND_PX) + 8
    return svg(width, bottom + 40, "".join(parts), chart=chart, label=label)


COLUMN_LABEL_PX = 220.0  # a task's name slanted above its column, whole up to about 30 characters (then clipped)
ROW_LABEL_PX = 320.0  # a model's label beside its row, whole up to about 45 characters
_RISE, _RUN = math.sin(math.radians(50)), math.cos(math.radians(50))  # a label slanted at 50 degrees
_MISSING_WORDS = "no scored case"
_LEGEND_PX = 10 * 20 + 30 + len(_MISSING_WORDS) * CHAR_PX  # the colour ramp, the grey swatch and its words


def _column_label(x: float, y: float, name: str) -> str:
    """A column's name, slanted above it (clipped only past ``COLUMN_LABEL_PX``: the whole name is its tooltip)."""
    return (f'<g transform="translate({num(x)} {num(y)}) rotate(-50)"><title>{esc(name)}</title>'
            f"{text(0, 0, clip_label(name, COLUMN_LABEL_PX))}</g>")


@dataclass(frozen=True)
class _Heat:
    """Where a heat map's cells go, and the values their colours span."""

    left: float
    top: float
    cell_w: float
    cell_h: float
    low: float
    span: float

    def row(self, r: int, name: str, columns: Sequence[str], values: Sequence[float | None]) -> list[str]:
        """The ``r``-th row: its label, then its cells."""
        y = self.top + self.cell_h * r
        cells = [self._cell(self.left + self.cell_w * c, y, f"{name} · {columns[c]}", value)
                 for c, value in enumerate(values)]
        return [titled_label(self.left - 6, y + self.cell_h / 2, name, self.left - 10),
                f'<g class="cells">{"".join(cells)}</g>']

    def _cell(self, x: float, y: float, name: str, value: float | None) -> str:
        if value is None or not math.isfinite(value):
            return rect(x, y, self.cell_w, self.cell_h, MISSING_FILL, tip=f"{name}: no scored case")
        fill = sequential((value - self.low) / self.span)
        return rect(x, y, self.cell_w, self.cell_h, fill, tip=f"{name}: {value:.3f}")


def _legend(x: float, y: float, low: float, high: float) -> str:
    steps = 20
    parts = [rect(x + 10 * i, y, 10, 10, sequential(i / (steps - 1))) for i in range(steps)]
    parts.append(text(x, y + 20, format_tick(low), fill=MUTED))
    parts.append(text(x + 10 * steps, y + 20, format_tick(high), anchor="end", fill=MUTED))
    parts.append(rect(x + 10 * steps + 16, y, 10, 10, MISSING_FILL))
    parts.append(text(x + 10 * steps + 30, y + 5, _MISSING_WORDS, fill=MUTED))
    return "".join(parts)


@dataclass(frozen=True)
class MatrixCell:
    """One cell of a comparison matrix (row model against column model).

    Attributes:
        value: the signed figure that colours the cell (row minus column), or None.
        content: the short text drawn in the cell.
        tip: the tooltip: the figures behind the cell with their denominators.
        strong: draw a thick border (the difference is significant).
    """

    value: float | None
    content: str
    tip: str
    strong: bool = False


def matrix(labels: Sequence[str], cells: Sequence[Sequence[MatrixCell | None]], *, chart: str, label: str) -> str:
    """A square matrix of signed cells, blue (row worse) to red (row better); None is the diagonal."""
    left = label_width(labels) + 6
    size = max(34.0, min(64.0, 520.0 / max(len(labels), 1)))
    slant = label_width(labels, most=COLUMN_LABEL_PX)
    top = slant * _RISE + 6
    biggest = max(_magnitudes(cells), default=0.0) or 1.0
    parts = [_column_label(left + size * index + size / 2, top - 4, name) for index, name in enumerate(labels)]
    for r, row in enumerate(cells):
        y = top + size * r
        parts.append(titled_label(left - 6, y + size / 2, labels[r], left - 10))
        parts += [_matrix_cell(left + size * c, y, size, cell, biggest) for c, cell in enumerate(row)]
    bottom = top + size * len(labels)
    width = left + size * (len(labels) - 0.5) + slant * _RUN + 10  # the last slanted label reaches past the grid
    return svg(max(width, left + size * len(labels) + 10), bottom + 8, "".join(parts), chart=chart, label=label)


def _magnitudes(cells: Sequence[Sequence[MatrixCell | None]]) -> list[float]:
    """The size of every cell's value."""
    return [abs(c.value) for row in cells for c in row if c and c.value is not None]


def _matrix_cell(x: float, y: float, size: float, cell: MatrixCell | None, biggest: float) -> str:
    """A cell coloured by its value against the biggest, outlined when strong; the diagonal (None) blank."""
    if cell is None:
        return rect(x, y, size, size, "#fafafa", extra=' stroke="#d4d4d8"')
    fill = MISSING_FILL if cell.value is None else diverging(cell.value / biggest)
    border = ' stroke="#000" stroke-width="2.5"' if cell.strong else ' stroke="#fff"'
    return (f'<g class="mark"><title>{esc(cell.tip)}</title>{rect(x, y, size, size, fill, extra=border)}'
            f"{text(x + size / 2, y + size / 2, cell.content, anchor='middle', fill=ink_on(fill))}</g>")
