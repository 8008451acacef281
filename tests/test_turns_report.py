"""Per-turn means and thinking-format compliance in the summary and report.md."""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.summary import summarize
from bench_plugin.report.turns import summarize_turns
from bench_plugin.results.record import CaseRecord


def record(
    model: str, run: int, turn_values: list[float | None], valid: list[bool | None], **fields: Any,
) -> CaseRecord:
    mean = sum(v for v in turn_values if v is not None) / len(turn_values)
    components = [{"name": "J", "value": mean}] + [
        {"name": f"J.t{i}", "value": value, "turn": i, "scorer": "J"} for i, value in enumerate(turn_values, 1)
    ]
    return CaseRecord(
        nodeid=f"suites/mt.yaml::q[{model}-run{run}]", suite="mt", path="suites/mt.yaml", task="q", model=model,
        model_id=model, model_label=model.upper(), provider="offline", run=run, status="passed",
        scores={"components": components, "composite": mean}, composite=mean,
        turns=[{"index": i, "format_valid": flag} for i, flag in enumerate(valid, 1)], **fields,
    )


RECORDS = [
    record("a", 1, [1.0, 0.5], [True, False]),
    record("a", 2, [0.5, None], [True, True]),
    record("b", 1, [0.25, 0.75], [None, None]),
]


def test_turn_means_per_model_and_scorer_leave_unscored_turns_out() -> None:
    turns = summarize_turns(RECORDS)
    assert turns["count"] == 2
    assert turns["scores"] == [
        {"model": "a", "label": "A", "scorer": "J", "means": [pytest.approx(0.75), pytest.approx(0.5)]},
        {"model": "b", "label": "B", "scorer": "J", "means": [pytest.approx(0.25), pytest.approx(0.75)]},
    ]


def test_format_compliance_counts_only_checked_replies() -> None:
    assert summarize_turns(RECORDS)["format_valid"] == [{"model": "a", "label": "A", "rates": [1.0, 0.5]}]


def test_per_turn_components_leave_the_leaderboard_for_the_turns_table() -> None:
    summary = summarize(RECORDS)
    (suite,) = summary["suites"]
    assert suite["components"] == ["J"]
    report = render_markdown(summary)
    assert "| Model | Scorer | Turn 1 | Turn 2 |" in report
    assert "| A | J | 0.7500 | 0.5000 |" in report
    assert "| A | 100.0% | 50.0% |" in report


def test_suites_without_conversations_have_no_turns_section() -> None:
    plain = [CaseRecord(nodeid="n", suite="s", path="s.yaml", task="t", model="m", model_id="m", model_label="m",
                        provider="p", run=1, status="passed", scores={"components": [{"name": "C", "value": 1.0}]})]
    assert summarize_turns(plain) == {"count": 0, "scores": [], "format_valid": []}
    assert "### Turns" not in render_markdown(summarize(plain))
