"""The suite's aggregates: key, built into table specs, with mistakes pointing at the YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.aggregates.build import build_aggregates, read_suite_aggregates
from bench_plugin.suite.aggregates.spec import Baseline, Column, Sort
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.loader import load_suite_text

HEAD = """\
models:
  a: {provider: echo}
judges:
  j: {provider: scripted, script: [{reply: "0"}]}
matrix:
  amount: [50, 200]
tasks:
  - id: "t-{{ amount }}"
    tags: {perspective: landlord}
    prompt: hi
scorers:
  - {name: score, type: llm_judge, judge: j, prompt: "{{ answer }}", scale: [-1, 1], parse: {number: first}}
aggregates:
  bins:
    stance:
      of: score
      labels: {neg: {max: -0.33}, neu: {}, pos: {min: 0.33}}
  tables:
    - name: summary
      by: [model_id]
      csv: summary.csv
      columns:
"""


def load(columns: str, head: str = HEAD) -> object:
    loaded = load_suite_text(head + columns, path=Path("demo.yaml"), display_path="suites/demo.yaml")
    return build_aggregates(loaded)


def error_for(columns: str, head: str = HEAD) -> str:
    loaded = load_suite_text(head + columns, path=Path("demo.yaml"), display_path="suites/demo.yaml")
    with pytest.raises(SuiteError) as info:
        build_suite(loaded)
    return str(info.value)


def test_proportions_become_one_rate_column_per_label_in_order() -> None:
    spec = load("        - {name: n, fn: count}\n        - {fn: proportions, of: stance, prefix: p_}\n")
    (table,) = spec.tables  # type: ignore[attr-defined]
    assert [c.name for c in table.columns] == ["n", "p_neg", "p_neu", "p_pos"]
    assert table.columns[1] == Column("p_neg", "rate", event={"stance": ("neg",)})
    assert table.title == "summary" and table.csv == "summary.csv"


def test_uplift_baseline_and_conditions_compare_as_text() -> None:
    spec = load(
        "        - name: up\n          fn: uplift\n          where: {perspective: landlord, amount: [50, 200]}\n"
        "          event: {stance: pos}\n"
        "          baseline: {where: {perspective: neutral}, key: [amount], per_model: true}\n"
    )
    (column,) = spec.tables[0].columns  # type: ignore[attr-defined]
    assert column.where == {"perspective": ("landlord",), "amount": ("50", "200")}
    assert column.baseline == Baseline(where={"perspective": ("neutral",)}, key=("amount",), per_model=True)
    assert column.baseline.fields == ("model", "amount")


def test_unknown_component_suggests_the_close_one() -> None:
    message = error_for("        - {name: m, fn: mean, of: scroe}\n")
    assert message.splitlines()[0] == (
        "suites/demo.yaml:23: aggregates.tables[0].columns[0].of: unknown component 'scroe'")
    assert "hint: did you mean 'score'? components: score" in message


def test_unknown_field_in_a_slice_is_caught_when_no_dataset_brings_fields() -> None:
    message = error_for("        - {name: n, fn: count, where: {perspectiv: landlord}}\n")
    assert "aggregates.tables[0].columns[0].where.perspectiv: unknown field 'perspectiv'" in message
    assert "did you mean 'perspective'?" in message


def test_a_key_the_fn_does_not_read_is_an_error() -> None:
    message = error_for("        - {name: n, fn: count, event: {stance: pos}}\n")
    assert "aggregates.tables[0].columns[0].event: 'event' is not used by fn: count" in message
    assert "hint: fn: count takes name, where" in message


def test_missing_keys_are_schema_errors() -> None:
    assert "columns[0]: missing required key 'baseline'" in error_for(
        "        - {name: u, fn: uplift, event: {stance: pos}}\n"
    )
    assert "columns[0]: missing required key 'of'" in error_for("        - {fn: proportions}\n")


def test_two_open_bins_and_repeated_columns_are_errors() -> None:
    head = HEAD.replace("neu: {}, pos: {min: 0.33}", "neu: {}, other: {}")
    assert "only one label may have no bounds" in error_for("        - {name: n, fn: count}\n", head)
    message = error_for("        - {name: p_neg, fn: count}\n        - {fn: proportions, of: stance, prefix: p_}\n")
    assert "column name 'p_neg' is used twice" in message


def test_the_reporter_reads_aggregates_from_the_suite_file(tmp_path: Path) -> None:
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "demo.yaml").write_text(HEAD + "        - {name: n, fn: count}\n", encoding="utf-8")
    (tmp_path / "suites" / "plain.yaml").write_text("models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n")
    found = read_suite_aggregates(["suites/demo.yaml", "suites/plain.yaml", "suites/gone.yaml"], tmp_path)
    assert list(found) == ["suites/demo.yaml"]
    assert found["suites/demo.yaml"].tables[0].columns == (Column("n", "count"),)


PER_TURN_HEAD = HEAD.replace(
    "scale: [-1, 1], parse: {number: first}}", "scale: [-1, 1], parse: {number: first}, per_turn: true}"
)


def test_turn_components_of_a_per_turn_scorer_can_be_averaged_and_rows_sorted() -> None:
    spec = load(
        "        - {name: overall, fn: mean, of: score}\n        - {name: turn_2, fn: mean, of: score.t2}\n"
        "      sort: {column: overall, descending: true}\n",
        head=PER_TURN_HEAD,
    )
    (table,) = spec.tables  # type: ignore[attr-defined]
    assert table.columns[1] == Column("turn_2", "mean", of="score.t2")
    assert table.sort == Sort("overall", descending=True)


def test_turn_components_need_a_per_turn_scorer() -> None:
    message = error_for("        - {name: turn_1, fn: mean, of: score.t1}\n")
    assert "columns[0].of: unknown component 'score.t1'" in message


def test_sort_names_a_column_of_the_table() -> None:
    message = error_for("        - {name: overall, fn: mean, of: score}\n      sort: {column: overal}\n")
    assert "tables[0].sort.column: unknown column 'overal'" in message
    assert "did you mean 'overall'?" in message
