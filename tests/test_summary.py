"""summarize: counts per status, pass rates and means over scored cases only."""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.statistics.plain import mean, rate, total
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import CaseRecord


def component(name: str, value: float | None, judge_output: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "raw": value,
        "passed": None if value is None else value >= 0.5,
        "detail": "",
        "judge_output": judge_output,
        "error": None if value is not None else "no verdict",
        "usage": {},
    }


def case(
    model: str,
    task: str,
    run: int,
    status: str,
    composite: float | None = None,
    components: dict[str, float | None] | None = None,
    suite: str = "qa",
    **fields: Any,
) -> CaseRecord:
    scores = None
    if components is not None:
        scores = {
            "components": [component(name, value) for name, value in components.items()],
            "composite": composite,
            "passed": None if composite is None else composite >= 0.5,
            "threshold": 0.5,
            "composite_detail": "",
            "unscored_reason": fields.pop("unscored_reason", None),
        }
    return CaseRecord(
        nodeid=f"suites/{suite}.yaml::{task}[{model}-run{run}]",
        suite=suite,
        path=f"suites/{suite}.yaml",
        task=task,
        model=model,
        model_id=model,
        model_label=fields.pop("model_label", model),
        provider="offline",
        run=run,
        status=status,
        scores=scores,
        composite=composite,
        threshold=0.5,
        **fields,
    )


# claude first: first-seen order is claude, gpt-4o; gpt-4o has the better mean composite
# fmt: off
RECORDS = [
    case("claude", "capital", 1, "invalid", reason="unknown variable 'city'"),
    case("claude", "capital", 2, "skipped", reason="no recorded answer"),
    case(
        "claude", "math", 1, "passed", 0.8, {"exact": 1.0, "judge": 0.6},
        usage={"input_tokens": 20, "output_tokens": 4}, latency_s=1.5,
    ),
    case(
        "claude", "math", 2, "failed", 0.4, {"exact": 0.0, "judge": 0.8},
        usage={"input_tokens": 20, "output_tokens": 6}, latency_s=2.5,
        reason="expected 'x | y'\n<b>bold</b>",
    ),
    case(
        "gpt-4o", "capital", 1, "passed", 1.0, {"exact": 1.0, "judge": 1.0},
        usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}, latency_s=1.0,
    ),
    case(
        "gpt-4o", "capital", 2, "failed", 0.25, {"exact": 0.0, "judge": 0.5},
        usage={"input_tokens": 10, "output_tokens": 7, "cost_usd": 0.002}, latency_s=3.0,
        reason="composite 0.25 < 0.5",
    ),
    case(
        "gpt-4o", "math", 1, "unscored", None, {"exact": 1.0, "judge": None},
        latency_s=2.0, unscored_reason="judge reply had no verdict",
    ),
    case(
        "gpt-4o", "math", 2, "error",
        error={"kind": "timeout", "type": "TransientProviderError", "message": "no answer in 30 s"},
    ),
    case("gpt-4o", "greet", 1, "passed", 0.9, {"tone": 0.9}, suite="chat"),
]
# fmt: on


def by_key(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {row[key]: row for row in rows}


@pytest.fixture
def qa() -> dict[str, Any]:
    suite: dict[str, Any] = summarize(RECORDS)["suites"][0]
    return suite


def test_suites_are_grouped_in_first_seen_order() -> None:
    summary = summarize(RECORDS)
    assert [(s["suite"], s["path"]) for s in summary["suites"]] == [
        ("qa", "suites/qa.yaml"),
        ("chat", "suites/chat.yaml"),
    ]
    assert summary["totals"]["cases"] == 9
    assert summary["totals"]["passed"] == 3


def test_every_status_is_counted_per_model(qa: dict[str, Any]) -> None:
    models = by_key(qa["models"], "model")
    assert list(models) == ["claude", "gpt-4o"]
    counts = ("cases", "passed", "failed", "unscored", "errors", "invalid", "skipped")
    assert {key: models["claude"][key] for key in counts} == dict(zip(counts, (4, 1, 1, 0, 0, 1, 1), strict=True))
    assert {key: models["gpt-4o"][key] for key in counts} == dict(zip(counts, (4, 1, 1, 1, 1, 0, 0), strict=True))


def test_pass_rate_and_mean_score_leave_out_unscored_errors_and_invalid(qa: dict[str, Any]) -> None:
    gpt = by_key(qa["models"], "model")["gpt-4o"]
    assert gpt["pass_rate"] == 0.5
    assert gpt["mean_composite"] == pytest.approx((1.0 + 0.25) / 2)
    claude = by_key(qa["models"], "model")["claude"]
    assert claude["pass_rate"] == 0.5
    assert claude["mean_composite"] == pytest.approx((0.8 + 0.4) / 2)


def test_component_means_use_every_case_where_the_component_has_a_value(qa: dict[str, Any]) -> None:
    assert qa["components"] == ["exact", "judge"]
    gpt = by_key(qa["models"], "model")["gpt-4o"]
    # the unscored case's exact value counts; its missing judge value does not count as zero
    assert gpt["components"]["exact"] == pytest.approx(2 / 3)
    assert gpt["components"]["judge"] == pytest.approx(0.75)


def test_tokens_cost_and_latency_per_model(qa: dict[str, Any]) -> None:
    models = by_key(qa["models"], "model")
    gpt, claude = models["gpt-4o"], models["claude"]
    assert (gpt["input_tokens"], gpt["output_tokens"]) == (20, 12)
    assert gpt["cost_usd"] == pytest.approx(0.003)
    assert gpt["mean_latency_s"] == pytest.approx(2.0)
    assert (claude["input_tokens"], claude["output_tokens"]) == (40, 10)
    assert claude["cost_usd"] is None  # unknown, not zero
    assert claude["mean_latency_s"] == pytest.approx(2.0)


def test_the_suite_says_what_all_its_cases_used(qa: dict[str, Any]) -> None:
    """The leaderboard had only per-model rows: a reviewer added them up by hand."""
    assert qa["spend"] == {"input_tokens": 60, "output_tokens": 22, "cost_usd": pytest.approx(0.003),
                           "judge_input_tokens": None, "judge_output_tokens": None, "judge_cost_usd": None}
    assert "Used in all: the models 60 / 22 tokens in / out, $0.0030." in render_markdown(summarize(RECORDS))


def test_task_rows_give_each_models_mean_composite(qa: dict[str, Any]) -> None:
    tasks = by_key(qa["tasks"], "task")
    assert list(tasks) == ["capital", "math"]
    capital, math = tasks["capital"], tasks["math"]
    counts = ("cases", "passed", "failed", "unscored", "errors", "invalid", "skipped")
    assert [capital[key] for key in counts] == [4, 1, 1, 0, 0, 1, 1]
    assert capital["mean_composite"] == pytest.approx(0.625)
    assert capital["models"] == {"claude": None, "gpt-4o": pytest.approx(0.625)}
    assert (math["unscored"], math["errors"]) == (1, 1)
    assert math["models"] == {"claude": pytest.approx(0.6), "gpt-4o": None}


def test_failures_errors_unscored_and_invalid_are_listed_with_reasons(qa: dict[str, Any]) -> None:
    assert [(c["nodeid"], c["reason"]) for c in qa["failures"]] == [
        ("suites/qa.yaml::math[claude-run2]", "expected 'x | y'\n<b>bold</b>"),
        ("suites/qa.yaml::capital[gpt-4o-run2]", "composite 0.25 < 0.5"),
    ]
    assert [(c["nodeid"], c["reason"]) for c in qa["errors"]] == [
        ("suites/qa.yaml::math[gpt-4o-run2]", "timeout: no answer in 30 s"),
    ]
    assert [(c["nodeid"], c["reason"]) for c in qa["unscored"]] == [
        ("suites/qa.yaml::math[gpt-4o-run1]", "judge reply had no verdict"),
    ]
    assert [c["reason"] for c in qa["invalid"]] == ["unknown variable 'city'"]


def test_summary_does_not_depend_on_anything_but_record_order() -> None:
    assert summarize(RECORDS) == summarize(list(RECORDS))


def test_an_empty_run_summarizes_to_no_suites() -> None:
    summary = summarize([])
    assert summary["suites"] == []
    assert summary["totals"]["cases"] == 0
    assert summary["totals"]["pass_rate"] is None


def test_stats_ignore_missing_values() -> None:
    assert mean([1.0, None, 0.0]) == 0.5
    assert mean([None]) is None
    assert total([None, 2.0, 1.5]) == 3.5
    assert total([]) is None
    assert rate(1, 4) == 0.25
    assert rate(0, 0) is None


def test_tokens_nobody_reported_are_unknown_not_zero() -> None:
    summary = summarize([case("echo", "t", 1, "passed", 1.0, {"exact": 1.0}, usage={"input_tokens": None})])
    row = summary["suites"][0]["models"][0]
    assert (row["input_tokens"], row["output_tokens"], row["cost_usd"]) == (None, None, None)
