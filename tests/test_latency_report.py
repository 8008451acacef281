"""Latency percentiles in the reports: what is counted, per model and per load step, and how it is shown.

Counted: the streamed calls made by the model under test (not cache hits, not judges); shown in report.md and
the dashboard, escaped.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.report.dashboard.latency import latency_section
from bench_plugin.report.latency import percentile, spread, summarize_latency
from bench_plugin.report.latency_markdown import render_latency
from bench_plugin.results.record import CaseRecord


def record(model: str, calls: list[dict[str, Any]], *, status: str = "passed", load: dict[str, Any] | None = None,
           latency: float | None = None, output_tokens: int | None = None) -> CaseRecord:
    return CaseRecord(f"s.yaml::t[{model}]", "s", "s.yaml", "t", model, model, model, "p", 1, status,
                      call_log=calls, load=load, latency_s=latency, usage={"output_tokens": output_tokens})


def streamed(ttft: float, latency: float, rate: float = 50.0, itl: float = 0.02, **extra: Any) -> dict[str, Any]:
    return {"purpose": "candidate", "ttft_s": ttft, "latency_s": latency, "tokens_per_s": rate, "itl_s": itl, **extra}


def test_percentiles_interpolate_between_ranks() -> None:
    values = [float(n) for n in range(1, 101)]
    assert spread(values) == {"p50": pytest.approx(50.5), "p90": pytest.approx(90.1), "p99": pytest.approx(99.01)}
    assert percentile([3.0], 99) == 3.0 and percentile([], 50) is None


def test_only_streamed_calls_made_by_the_model_under_test_count() -> None:
    records = [
        record("a", [streamed(0.1, 1.0), streamed(0.3, 2.0)]),
        record("a", [streamed(0.2, 1.5), {"purpose": "judge", "ttft_s": 9.0, "latency_s": 9.0},
                     {"purpose": "candidate", "cache": "hit", "latency_s": 9.0}]),
        record("b", [{"purpose": "candidate", "latency_s": 4.0}], latency=4.0),  # did not stream
    ]
    latency = summarize_latency(records)
    assert latency is not None and latency["steps"] == []
    a, b = latency["models"]
    assert (a["model"], a["streamed"]) == ("a", 3)
    assert a["ttft_s"]["p50"] == pytest.approx(0.2) and a["latency_s"]["p99"] == pytest.approx(1.99)
    assert (b["model"], b["streamed"], b["ttft_s"]["p50"], b["latency_s"]["p50"]) == ("b", 0, None, 4.0)


def test_nothing_streamed_and_no_load_step_means_no_latency_section() -> None:
    assert summarize_latency([record("a", [{"purpose": "candidate", "latency_s": 1.0}], latency=1.0)]) is None
    assert render_latency({}) == [] and latency_section({}) == ""


def test_each_load_step_has_its_throughput_errors_and_percentiles() -> None:
    def at(step: str, start: float, end: float) -> dict[str, Any]:
        return {"step": step, "kind": "in_flight", "value": 1, "started": start, "ended": end}

    records = [
        record("a", [streamed(0.1, 1.0)], load=at("in_flight=1", 0.0, 1.0), output_tokens=10),
        record("a", [streamed(0.2, 1.0)], load=at("in_flight=1", 1.0, 2.0), output_tokens=10),
        record("a", [streamed(0.3, 1.0)], load=at("in_flight=8", 2.0, 3.0), output_tokens=10),
        record("a", [], load=at("in_flight=8", 2.0, 2.5), status="error"),
    ]
    steps = summarize_latency(records)["steps"]  # type: ignore[index]
    assert [(s["step"], s["cases"], s["errors"], s["duration_s"], s["cases_per_s"], s["output_tokens_per_s"])
            for s in steps] == [("in_flight=1", 2, 0, 2.0, 1.0, 10.0), ("in_flight=8", 2, 1, 1.0, 2.0, 10.0)]
    assert steps[1]["ttft_s"]["p50"] == pytest.approx(0.3)


def test_report_md_and_the_dashboard_show_the_figures_escaped() -> None:
    name = "<b>m|x</b>"
    load = {"step": "rate=2/s", "kind": "rate", "value": 2, "started": 0.0, "ended": 1.0}
    summary = {"latency": summarize_latency([record(name, [streamed(0.25, 1.5)], load=load, output_tokens=5)])}
    lines = render_latency(summary)
    table = "\n".join(lines)
    assert "### Latency" in table and "### Load steps" in table
    assert "0.250 / 0.250 / 0.250 s" in table and "<b>" not in table and "m\\|x" in table
    assert "| rate=2/s |" in table
    html = latency_section(summary)
    assert 'data-section="latency"' in html and 'data-section="load-steps"' in html
    assert 'data-chart="latency-ttft_s"' in html and "<b>m" not in html and "&lt;b&gt;m|x&lt;/b&gt;" in html


def test_hand_edited_figures_are_left_out_not_fatal() -> None:
    records = [record("a", [streamed(0.1, 1.0), {"purpose": "candidate", "ttft_s": "soon", "latency_s": True}],
                      load={"step": "x", "started": "then", "ended": None})]
    latency = summarize_latency(records)
    assert latency is not None and latency["models"][0]["streamed"] == 1
    assert latency["steps"][0]["duration_s"] is None and latency["steps"][0]["cases_per_s"] is None
