"""The rows the statistics resample: which cases each model is expected to finish."""

from __future__ import annotations

from bench_plugin.report.case_table import build_case_table, unfinished_cells
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.spec import safe_id


def record(model: str, task: str, run: int = 1) -> CaseRecord:
    return CaseRecord(nodeid=f"suites/s.yaml::{task}[{safe_id(model)}-run{run}]", suite="s",
                      path="suites/s.yaml", task=task, model=model, model_id=model, model_label=model,
                      provider="p", run=run, status="passed", composite=1.0)


def test_without_a_selection_every_model_is_expected_on_every_case_another_has() -> None:
    table = build_case_table("suites/s.yaml", [record("a", "t1"), record("a", "t2"), record("b", "t1")])
    assert table.expected_of == {"a": 2, "b": 2} and table.records.count(None) == 1  # b lacks t2


def test_a_selection_expects_the_cases_each_model_was_selected_for() -> None:
    """A shard: a ran t1 and t2, b ran t1 only, and was selected for t3, which it never finished (stopped)."""
    records = [record("a", "t1"), record("a", "t2"), record("openai:gpt 4", "t1")]
    selected = [r.nodeid for r in records] + ["suites/s.yaml::t3[openai:gpt-4-run1]"]
    unfinished = unfinished_cells(selected, records)
    assert unfinished == {"suites/s.yaml": [("openai:gpt 4", "t3", 1)]}  # the model's name back from its id
    table = build_case_table("suites/s.yaml", records, unfinished["suites/s.yaml"])
    assert table.expected_of == {"a": 2, "openai:gpt 4": 2}  # not t2 for the second: another shard's
    assert [table.keys[row] for row in table.rows_of("openai:gpt 4")] == [("t1", 1), ("t3", 1)]
