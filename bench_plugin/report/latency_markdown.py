"""report.md's latency tables: per model, then per load step, the p50 / p90 / p99 of each timing (``latency.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.escape import markdown_cell

MISSING = "—"
_TIMINGS = (("ttft_s", "TTFT", "s"), ("latency_s", "Latency", "s"), ("tokens_per_s", "Tokens/s", ""),
            ("itl_s", "ITL", "s"))
HOW_TO_READ = ("TTFT: time to first token; ITL: inter-token latency (each call's mean gap between token events); "
               "Tokens/s: after the first token. Figures are p50 / p90 / p99 over the streamed calls of the model "
               "under test that were made (a cache hit carries no timing); a model whose answers did not stream "
               "has its total latency per case only.")


def render_latency(suite: Mapping[str, Any]) -> list[str]:
    """The ``### Latency`` section (and ``### Load steps``), or nothing when the suite has no latency figures."""
    latency = suite.get("latency")
    if not isinstance(latency, Mapping):
        return []
    lines = ["### Latency", "", HOW_TO_READ, "", _row(["Model", "Streamed calls", *(t for _, t, _ in _TIMINGS)]),
             _rule(6)]
    for model in latency.get("models") or []:
        lines.append(_row([markdown_cell(model.get("model")), _count(model.get("streamed")), *_spreads(model)]))
    steps = latency.get("steps") or []
    if steps:
        lines += ["", "### Load steps", "",
                  "One row per step (and model), in the order the steps ran; throughput is over the step's span, "
                  "from its first case's start to its last case's end.", "",
                  _row(["Step", "Model", "Cases", "Errors", "Cases/s", "Output tokens/s",
                        *(t for _, t, _ in _TIMINGS)]), _rule(10)]
        lines += [_step_row(step) for step in steps]
    return [*lines, ""]


def _step_row(step: Mapping[str, Any]) -> str:
    return _row([markdown_cell(step.get("step")), markdown_cell(step.get("model")), _count(step.get("cases")),
                 _count(step.get("errors")), _number(step.get("cases_per_s")),
                 _number(step.get("output_tokens_per_s")), *_spreads(step)])


def _spreads(row: Mapping[str, Any]) -> list[str]:
    """Each timing's ``p50 / p90 / p99``, or ``—`` when it has none."""
    cells = []
    for key, _, unit in _TIMINGS:
        figures = row.get(key)
        values = [figures.get(share) for share in ("p50", "p90", "p99")] if isinstance(figures, Mapping) else []
        known = [v for v in values if _is_number(v)]
        cells.append(" / ".join(_number(v) for v in values) + (f" {unit}" if unit else "") if known else MISSING)
    return cells


def _number(value: Any) -> str:
    if not _is_number(value):
        return MISSING
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def _count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else MISSING


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _rule(columns: int) -> str:
    return "|" + "---|" * columns
