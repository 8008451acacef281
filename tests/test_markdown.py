"""render_markdown: ranked leaderboard, task table, case lists, and text that cannot break tables."""

from __future__ import annotations

import re
from typing import Any

from bench_plugin.report.markdown import code_span, escape_cell, render_markdown
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import CaseRecord


def case(
    model: str, task: str, run: int, status: str, composite: float | None = None, **fields: Any
) -> CaseRecord:
    components = fields.pop("components", None)
    scores = None
    if components is not None:
        scores = {
            "components": [{"name": name, "value": value} for name, value in components.items()],
            "composite": composite,
            "passed": None if composite is None else composite >= 0.5,
            "threshold": 0.5,
            "composite_detail": "",
            "unscored_reason": fields.pop("unscored_reason", None),
        }
    return CaseRecord(
        nodeid=f"suites/qa.yaml::{task}[{model}-run{run}]",
        suite="qa",
        path="suites/qa.yaml",
        task=task,
        model=model,
        model_id=model,
        model_label=fields.pop("model_label", model),
        provider="offline",
        run=run,
        status=status,
        scores=scores,
        composite=composite,
        **fields,
    )


# fmt: off
RECORDS = [
    case("claude", "capital", 1, "invalid", reason="unknown variable 'city'", model_label="Claude | Sonnet"),
    case("claude", "capital", 2, "skipped", reason="no recorded answer", model_label="Claude | Sonnet"),
    case("claude", "math", 1, "passed", 0.8, components={"exact": 1.0, "judge": 0.6},
         usage={"input_tokens": 1200, "output_tokens": 4}, latency_s=1.5, model_label="Claude | Sonnet"),
    case("claude", "math", 2, "failed", 0.4, components={"exact": 0.0, "judge": 0.8},
         usage={"input_tokens": 20, "output_tokens": 6}, latency_s=2.5, model_label="Claude | Sonnet",
         reason="expected 'x | y'\n<script>alert(1)</script>"),
    case("gpt-4o", "capital", 1, "passed", 1.0, components={"exact": 1.0, "judge": 1.0},
         usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}, latency_s=1.0),
    case("gpt-4o", "capital", 2, "failed", 0.25, components={"exact": 0.0, "judge": 0.5},
         usage={"input_tokens": 10, "output_tokens": 7, "cost_usd": 0.002}, latency_s=3.0,
         reason="composite 0.25 < 0.5"),
    case("gpt-4o", "math", 1, "unscored", None, components={"exact": 1.0, "judge": None},
         latency_s=2.0, unscored_reason="judge reply had no verdict"),
    case("gpt-4o", "math", 2, "error", error={"kind": "timeout", "message": "no answer in 30 s"}),
]
# fmt: on


def section(report: str, heading: str) -> list[str]:
    """The lines under ``heading`` up to the next heading."""
    lines = report.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return [line for line in lines[start:end] if line]


def cells(row: str) -> list[str]:
    """Split a table row on unescaped pipes, the way GFM does."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def test_leaderboard_ranks_by_mean_score_with_component_columns() -> None:
    report = render_markdown(summarize(RECORDS))
    header, align, first, second = section(report, "### Leaderboard")
    assert cells(header) == [
        "Model", "Cases", "Pass rate", "Mean score", "exact", "judge",
        "Unscored", "Errors", "Tokens in/out", "Cost", "Mean latency",
    ]  # fmt: skip
    assert len(cells(align)) == len(cells(header))
    # gpt-4o: mean (1.0 + 0.25) / 2 beats claude's (0.8 + 0.4) / 2, although claude was seen first
    assert cells(first) == [
        "gpt-4o", "4", "50.0%", "0.6250", "0.6667", "0.7500", "1", "1", "20 / 12", "$0.0030", "2.00 s",
    ]  # fmt: skip
    assert cells(second) == [
        "Claude \\| Sonnet", "4", "50.0%", "0.6000", "0.5000", "0.7000", "0", "0", "1,220 / 10", "—", "2.00 s",
    ]  # fmt: skip


def test_every_table_row_has_as_many_cells_as_its_header() -> None:
    report = render_markdown(summarize(RECORDS))
    for heading in ("### Leaderboard", "### Tasks"):
        rows = section(report, heading)
        assert {len(cells(row)) for row in rows} == {len(cells(rows[0]))}


def test_task_table_is_task_by_model_in_suite_order() -> None:
    rows = section(render_markdown(summarize(RECORDS)), "### Tasks")
    assert cells(rows[0]) == ["Task", "Claude \\| Sonnet", "gpt-4o", "All models"]
    assert cells(rows[2]) == ["capital", "—", "0.6250", "0.6250"]
    assert cells(rows[3]) == ["math", "0.6000", "—", "0.6000"]


def test_counts_line_names_every_status() -> None:
    report = render_markdown(summarize(RECORDS))
    assert "8 cases: 2 passed, 2 failed, 1 unscored, 1 error, 1 invalid, 1 skipped." in report


def test_case_lists_escape_reasons_and_keep_node_ids_literal() -> None:
    report = render_markdown(summarize(RECORDS))
    assert section(report, "### Failures (2)") == [
        "- `suites/qa.yaml::math[claude-run2]`: expected 'x \\| y' &lt;script&gt;alert(1)&lt;/script&gt;",
        "- `suites/qa.yaml::capital[gpt-4o-run2]`: composite 0.25 &lt; 0.5",
    ]
    assert section(report, "### Infrastructure errors (1)") == [
        "- `suites/qa.yaml::math[gpt-4o-run2]`: timeout: no answer in 30 s",
    ]
    assert section(report, "### Unscored (1)") == [
        "- `suites/qa.yaml::math[gpt-4o-run1]`: judge reply had no verdict",
    ]
    assert section(report, "### Invalid cases (1)") == [
        "- `suites/qa.yaml::capital[claude-run1]`: unknown variable 'city'",
    ]
    assert "<script>" not in report


def test_long_case_lists_are_capped() -> None:
    records = [case("m", f"t{i}", 1, "failed", 0.0, reason="wrong") for i in range(60)]
    failures = section(render_markdown(summarize(records)), "### Failures (60)")
    assert len(failures) == 51
    assert failures[-1] == "- … and 10 more"


def test_an_empty_run_gives_a_short_valid_report() -> None:
    assert render_markdown(summarize([])) == "# Benchmark report\n\nNo cases were run.\n"
    assert render_markdown(summarize([]), title="Nightly | run").startswith("# Nightly \\| run\n")


def test_escaping_keeps_pipes_newlines_and_html_inert() -> None:
    assert escape_cell("a|b") == "a\\|b"
    assert escape_cell("a\\|b") == "a\\\\\\|b"  # the text's own backslash cannot escape our pipe
    assert escape_cell("one\ntwo\r\nthree") == "one two three"
    assert escape_cell("<img src=x onerror=alert(1)> & co") == "&lt;img src=x onerror=alert(1)&gt; &amp; co"
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x`") == "`` `x` ``"


def test_unknown_tokens_show_as_missing() -> None:
    rows = section(
        render_markdown(summarize([case("echo", "t", 1, "passed", 1.0, components={"x": 1.0})])),
        "### Leaderboard",
    )
    assert cells(rows[2])[-3:] == ["—", "—", "—"]
