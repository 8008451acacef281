"""What the end of a run keeps small: files written piece by piece, and values made once for equal cases.

The files say what they said when built whole (dashboard.html is the same, byte for byte).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_plugin.calls.pricing import call_cost
from bench_plugin.core.chat import Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.plugin.nodes import junit_property
from bench_plugin.report.dashboard import render_dashboard
from bench_plugin.report.html import table_cell
from bench_plugin.report.summary import summarize
from bench_plugin.report.write import summary_json, write_reports
from bench_plugin.results.record import CaseRecord


def record(task: str, model: str, run: int, value: float, **fields: Any) -> CaseRecord:
    status = "passed" if value >= 0.5 else "failed"
    return CaseRecord(
        nodeid=f"suites/qa.yaml::{task}[{model}-run{run}]", suite="qa", path="suites/qa.yaml", task=task,
        model=model, model_id=model, model_label=model.title(), provider="echo", run=run, status=status,
        reason=f"score {value:.4f}", variables={"zone": task[-1], "lang": "fr"}, tags=["geo"],
        scores={"components": [{"name": "C", "value": value, "raw": None, "detail": "expected — found"}],
                "composite": value, "composite_detail": f"mean(C) = {value}"},
        composite=value, latency_s=0.01, case_index=int(task[-1]) * 10 + run, **fields)


def test_summary_and_dashboard_written_in_pieces_are_the_files_built_whole(tmp_path: Path) -> None:
    records = [record(f"t{n}", model, run, (n * run % 3) / 2, usage={"input_tokens": n, "cost_usd": None})
               for n in range(1, 6) for model in ("alpha", "beta") for run in (1, 2)]
    write_reports(records, tmp_path)
    ordered = sorted(records, key=lambda r: (r.path, r.case_index, r.nodeid))
    summary = summarize(ordered)
    text = (tmp_path / "summary.json").read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(summary)) and text.endswith("}\n")
    assert (tmp_path / "dashboard.html").read_text(encoding="utf-8") == render_dashboard(summary, ordered)
    lines = {line.strip().rstrip(",") for line in text.splitlines()}
    tasks = json.loads(text)["suites"][0]["tasks"]
    assert len(tasks) == 5 and all(json.dumps(row, sort_keys=True, separators=(", ", ": ")) in lines for row in tasks)


def test_summary_json_indents_mappings_and_writes_a_row_per_line() -> None:
    value = {"b": [{"x": 1, "m": {"k": [1, 2]}}, {"x": 2, "m": {"k": 3}, "l": [4]}], "a": {"n": None, "s": "é\u2014<"},
             "deep": [{"rows": [{"y": 1}]}], "empty": {}, "none": [], "plain": [1, "two", 3.5, True],
             "numbers": {1: "one"}, "nan": float("nan")}
    text = "".join(summary_json(value))
    assert text == """{
  "a": {
    "n": null,
    "s": "\\u00e9\\u2014<"
  },
  "b": [
    {
      "m": {
        "k": [1, 2]
      },
      "x": 1
    },
    {"l": [4], "m": {"k": 3}, "x": 2}
  ],
  "deep": [
    {
      "rows": [
        {"y": 1}
      ]
    }
  ],
  "empty": {},
  "nan": NaN,
  "none": [],
  "numbers": {"1": "one"},
  "plain": [1, "two", 3.5, true]
}"""
    assert json.dumps(json.loads(text), sort_keys=True) == json.dumps(value, sort_keys=True)


def test_equal_cells_and_junit_properties_are_one_object_and_escaped() -> None:
    assert table_cell("model", "<m>") is table_cell("model", "<m>")
    assert table_cell("model", "<m>") == '<td class="col-model">&lt;m&gt;</td>'
    assert junit_property("bench_model", "m") is junit_property("bench_model", "m") == ("bench_model", "m")


def test_a_local_servers_missing_price_is_one_note_for_every_call() -> None:
    model = ModelSpec(name="m", provider=ProviderSpec("local", "openai_compatible", "http://127.0.0.1:9/v1"),
                      id="bench-model", label="m")
    first, second = call_cost(model, Usage(2, 3)), call_cost(model, Usage(5, 7))
    assert first.usd is None and first.note == (
        "no known price for 'bench-model' at http://127.0.0.1:9/v1 (a local server); "
        "declare pricing: for the model in the suite")
    assert second is first and first.local  # a dollar budget neither counts nor stops at such calls
