"""The dashboard's latency section: per model (and per load step) the p50, p90 and p99 of each timing.

Read from the suite summary's ``latency`` (``report/latency.py``). Each chart has a row per model (or per
step and model): a bar to the p50, a whisker on to the p99 and a tick at the p90, on one axis of seconds
(or tokens a second), with the exact figures in the table under it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.dashboard.frame import fallback, fmt, section, table
from bench_plugin.report.dashboard.svg import (
    PLOT_WIDTH,
    ROW_PX,
    Scale,
    label_width,
    line,
    model_colour,
    model_colours,
    nice_domain,
    rect,
    svg,
    text,
    titled_label,
    x_axis,
)

CHARTS = (("ttft_s", "Time to first token (s)"), ("latency_s", "Total latency (s)"),
          ("tokens_per_s", "Tokens a second"), ("itl_s", "Inter-token latency (ms)"))
DRAWN_IN = {"itl_s": 1000.0}
"""Figures drawn in another unit than summary.json's: a gap between tokens reads in milliseconds."""
NOTE = ("Over the streamed calls of the model under test that were made: a cache hit carries no timing, a failed call "
        "has none. Bar: p50; tick: p90; whisker: to p99. A model whose answers did not stream has its total latency "
        "per case only. Tokens a second: after the first token; inter-token latency: each call's mean gap.")
STEPS_NOTE = ("One row per load step (and model), in the order the steps ran. Throughput: cases and output tokens a "
              "second over the step's span, from its first case's start to its last case's end.")


def latency_section(suite: Mapping[str, Any]) -> str:
    """The section, or "" when the suite has no latency figures (nothing streamed, no load steps)."""
    latency = suite.get("latency")
    if not isinstance(latency, Mapping):
        return ""
    models, steps = _rows(latency, "models"), _rows(latency, "steps")
    colours = model_colours(str(row.get("model")) for row in models)
    charts = "".join(_chart(key, title, models, [str(row.get("model")) for row in models], colours)
                     for key, title in CHARTS)
    tables = _timings_table(models, [str(row.get("model")) for row in models])
    html = section("latency", "Latency", NOTE, f'<div class="charts">{charts}</div>', fallback(tables))
    if steps:
        names = [f"{row.get('step')} · {row.get('model')}" for row in steps]
        step_charts = "".join(_chart(key, title, steps, names, colours) for key, title in CHARTS[:2])
        html += section("load-steps", "Load steps", STEPS_NOTE, f'<div class="charts">{step_charts}</div>',
                        fallback(_steps_table(steps)))
    return html


def _rows(latency: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [row for row in latency.get(key) or [] if isinstance(row, Mapping)]


def _figure(row: Mapping[str, Any], key: str, share: str) -> float | None:
    """A percentile as drawn (``DRAWN_IN``'s unit); None when the row has none."""
    value = (row.get(key) or {}).get(share) if isinstance(row.get(key), Mapping) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return float(value) * DRAWN_IN.get(key, 1.0)


def _chart(
    key: str, title: str, rows: Sequence[Mapping[str, Any]], names: Sequence[str], colours: Mapping[str, str]
) -> str:
    """One timing's rows: a bar to the p50, a tick at the p90, a whisker to the p99; "" when none has it."""
    shown = [(name, row) for name, row in zip(names, rows, strict=True) if _figure(row, key, "p50") is not None]
    if not shown:
        return ""
    left = label_width(name for name, _ in shown) + 8
    found = [v for _, row in shown for share in ("p50", "p90", "p99") if (v := _figure(row, key, share)) is not None]
    low, high = nice_domain(found, floor=0.0)
    scale = Scale(low, high, left, left + PLOT_WIDTH / 1.6)
    top, height = 22.0, ROW_PX * len(shown)
    parts = [text(left, 10, title, extra=' font-weight="600"'), x_axis(scale, top, top + height)]
    for index, (name, row) in enumerate(shown):
        colour = colours.get(str(row.get("model")), model_colour(index))  # a model keeps its colour in every chart
        parts.append(_row(scale, top + ROW_PX * index, name, row, key, colour))
        parts.append(titled_label(left - 6, top + ROW_PX * (index + 0.5), name, left - 10))
    return svg(scale.end + 16, top + height + 24, "".join(parts), chart=f"latency-{key}", label=title)


def _row(scale: Scale, y: float, name: str, row: Mapping[str, Any], key: str, colour: str) -> str:
    p50, p90, p99 = (_figure(row, key, share) for share in ("p50", "p90", "p99"))
    assert p50 is not None
    mid = y + ROW_PX / 2
    tip = f"{name}: p50 {fmt(p50)}, p90 {fmt(p90)}, p99 {fmt(p99)}"
    parts = [rect(scale(scale.low), y + 5, scale(p50) - scale(scale.low), ROW_PX - 10, colour, tip=tip)]
    if p99 is not None:
        parts.append(line(scale(p50), mid, scale(p99), mid, width=1.5))
    if p90 is not None:
        parts.append(line(scale(p90), y + 6, scale(p90), y + ROW_PX - 6, width=2))
    return f'<g class="mark">{"".join(parts)}</g>'


def _spread_cells(row: Mapping[str, Any], key: str) -> list[str]:
    return [fmt(_figure(row, key, share)) for share in ("p50", "p90", "p99")]


_TIMING_HEAD = [f"{name} {share}" for name in ("TTFT s", "Latency s", "Tokens/s", "ITL ms")
                for share in ("p50", "p90", "p99")]


def _timings_table(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    body = [[name, fmt(row.get("streamed"), whole=True), *(c for key, _ in CHARTS for c in _spread_cells(row, key))]
            for name, row in zip(names, rows, strict=True)]
    return table(["Model", "Streamed calls", *_TIMING_HEAD], body, left=1)


def _steps_table(rows: Sequence[Mapping[str, Any]]) -> str:
    body = [[str(row.get("step")), str(row.get("model")), fmt(row.get("cases"), whole=True),
             fmt(row.get("errors"), whole=True), fmt(row.get("duration_s")), fmt(row.get("cases_per_s")),
             fmt(row.get("output_tokens_per_s")), *(c for key, _ in CHARTS for c in _spread_cells(row, key))]
            for row in rows]
    head = ["Step", "Model", "Cases", "Errors", "Span s", "Cases/s", "Output tokens/s", *_TIMING_HEAD]
    return table(head, body)
