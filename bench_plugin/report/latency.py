"""Latency figures of a suite's records: per model, and per load step, the percentiles a serving benchmark compares.

For every model: the p50 / p90 / p99 of the time to first token (``ttft_s``), of the total latency, of the
token rate (``tokens_per_s``) and of the inter-token latency (``itl_s``, each call's mean gap between token
events), over the streamed calls of the model under test that were really made (a cache hit carries no
timing, a failed call has none). A model whose answers did not stream has its total latency only, per case.
For a suite with ``load:`` steps, the same per step and model, with the throughput (cases and output tokens
a second over the step's span, first start to last end) and the errors. Pure functions over records.

The suite summary's ``latency`` (absent when no answer streamed and no case ran in a load step)::

    {"models": [{"model", "calls", "streamed", "ttft_s", "latency_s", "tokens_per_s", "itl_s"}],
     "steps": [{"step", "model", "cases", "errors", "duration_s", "cases_per_s", "output_tokens_per_s",
                "ttft_s", "latency_s", "tokens_per_s", "itl_s"}]}

where each figure is ``{"p50", "p90", "p99"}`` (None when there is nothing to measure).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench_plugin.results.record import CACHE_HIT, ERROR, CaseRecord

PERCENTILES = (50, 90, 99)
TIMINGS = ("ttft_s", "latency_s", "tokens_per_s", "itl_s")


def percentile(values: Sequence[float], share: float) -> float | None:
    """The ``share`` percentile (0-100) of ``values``, interpolated between the two nearest ranks (numpy's default).

    Example:
        >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
        2.5
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * share / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def spread(values: Sequence[float]) -> dict[str, float | None]:
    """``{"p50", "p90", "p99"}`` of ``values``."""
    return {f"p{share}": percentile(values, share) for share in PERCENTILES}


def summarize_latency(records: Sequence[CaseRecord]) -> dict[str, Any] | None:
    """The suite summary's ``latency`` (see the module's docstring), or None when there is nothing to show."""
    stepped = [record for record in records if record.load]
    if not stepped and not any(_streamed_calls(record) for record in records):
        return None
    return {"models": [_model_row(model, group) for model, group in _by_model(records).items()],
            "steps": [_step_row(step, model, group) for (step, model), group in _by_step(stepped).items()]}


def describe_latency(records: Sequence[CaseRecord]) -> str | None:
    """The terminal's words for the records' streamed calls: TTFT p50 and p99, the token rate's p50; None without."""
    timings = _timings(records)
    ttft, rate = timings["ttft_s"], timings["tokens_per_s"]
    if not timings["streamed"] or ttft["p50"] is None:
        return None
    text = f"TTFT p50 {ttft['p50']:.3f} s, p99 {ttft['p99']:.3f} s"
    return text + (f", {rate['p50']:.0f} tokens/s" if rate["p50"] is not None else "")


def _streamed_calls(record: CaseRecord) -> list[Mapping[str, Any]]:
    """The record's streamed calls of the model under test that were made (not a hit), each with its timing."""
    return [call for call in record.call_log
            if isinstance(call, Mapping) and call.get("purpose", "candidate") == "candidate"
            and call.get("cache") != CACHE_HIT and _number(call.get("ttft_s")) is not None]


def _timings(records: Sequence[CaseRecord]) -> dict[str, Any]:
    """The percentiles of each timing over the records' streamed calls; the total latency per case without them."""
    calls = [call for record in records for call in _streamed_calls(record)]
    values = {name: _numbers(call.get(name) for call in calls) for name in TIMINGS}
    if not calls:  # nothing streamed: the model's latency of each case that called it
        values["latency_s"] = _numbers(record.latency_s for record in records)
    return {"streamed": len(calls), **{name: spread(values[name]) for name in TIMINGS}}


def _numbers(values: Iterable[Any]) -> list[float]:
    """The finite numbers among ``values``."""
    return [number for value in values if (number := _number(value)) is not None]


def _model_row(model: str, records: Sequence[CaseRecord]) -> dict[str, Any]:
    return {"model": model, "calls": sum(len(_streamed_calls(r)) for r in records), **_timings(records)}


def _step_row(step: str, model: str, records: Sequence[CaseRecord]) -> dict[str, Any]:
    """One step's figures for one model: its cases, errors, throughput over its span, and the percentiles."""
    duration = _span(records)
    tokens = sum(_numbers(record.usage.get("output_tokens") for record in records))
    return {
        "step": step, "model": model, "cases": len(records),
        "errors": sum(1 for record in records if record.status == ERROR),
        "duration_s": duration,
        "cases_per_s": len(records) / duration if duration else None,
        "output_tokens_per_s": tokens / duration if duration and tokens else None,
        **_timings(records),
    }


def _span(records: Sequence[CaseRecord]) -> float | None:
    """Seconds from the first case's start to the last case's end; None when the records do not say."""
    starts = _numbers((record.load or {}).get("started") for record in records)
    ends = _numbers((record.load or {}).get("ended") for record in records)
    if not starts or not ends or max(ends) <= min(starts):
        return None
    return max(ends) - min(starts)


def _by_model(records: Iterable[CaseRecord]) -> dict[str, list[CaseRecord]]:
    grouped: dict[str, list[CaseRecord]] = {}
    for record in records:
        grouped.setdefault(record.model, []).append(record)
    return grouped


def _by_step(records: Iterable[CaseRecord]) -> dict[tuple[str, str], list[CaseRecord]]:
    """Records by (step, model), steps in the order they ran (the records come in case order)."""
    grouped: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        grouped.setdefault((str((record.load or {}).get("step")), record.model), []).append(record)
    return grouped


def _number(value: Any) -> float | None:
    """A finite number read from a record (which may have been edited by hand), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
