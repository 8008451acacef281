"""Expansion is deterministic: tasks x variants x models x runs, in YAML order."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.expand import ExpandOptions, expand_suite
from bench_plugin.suite.loader import load_suite_text


def expand(text: str, tmp_path: Path, **options: object):
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    loaded = load_suite_text(text, path=path, display_path="suites/demo.yaml")
    return expand_suite(build_suite(loaded, BuildOptions()), ExpandOptions(**options))  # type: ignore[arg-type]


GRID = (
    "models:\n  a: {provider: echo}\n  b: {provider: echo}\n"
    "matrix:\n  x: [1, 2]\n  y: [u, v]\n"
    "derived:\n  xy: '{{ x * 10 }}'\n"
    "tasks:\n  - {id: 't-{{ x }}{{ y }}', prompt: '{{ xy }} {{ y }}'}\n"
)


def test_order_is_task_variant_model_run(tmp_path: Path) -> None:
    ids = [c.case_id for c in expand(GRID, tmp_path, runs=2)]
    assert ids[:5] == ["t-1u[a-run1]", "t-1u[a-run2]", "t-1u[b-run1]", "t-1u[b-run2]", "t-1v[a-run1]"]
    assert len(ids) == 2 * 2 * 2 * 2


def test_expansion_is_repeatable(tmp_path: Path) -> None:
    first = [(c.case_id, c.messages) for c in expand(GRID, tmp_path)]
    assert first == [(c.case_id, c.messages) for c in expand(GRID, tmp_path)]


def test_derived_variable_keeps_native_type(tmp_path: Path) -> None:
    case = expand(GRID, tmp_path)[0]
    assert case.variables["xy"] == 10
    assert case.messages[-1].content == "10 u"


def test_case_index_numbers_cases_in_order(tmp_path: Path) -> None:
    assert [c.index for c in expand(GRID, tmp_path)] == list(range(8))


def test_bench_models_selects_and_orders(tmp_path: Path) -> None:
    cases = expand(GRID, tmp_path, models=("b", "echo:other"))
    assert {c.model_name for c in cases} == {"b", "echo:other"}


def test_task_models_restricts_the_task(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\n  b: {provider: echo}\ntasks:\n  - {id: t, prompt: x, models: [b]}\n"
    assert [c.case_id for c in expand(text, tmp_path)] == ["t[b-run1]"]


def test_default_false_model_runs_only_when_named(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\n  b: {provider: echo, default: false}\ntasks:\n  - {id: t, prompt: x}\n"
    assert [c.model_name for c in expand(text, tmp_path)] == ["a"]
    assert [c.model_name for c in expand(text, tmp_path, models=("b",))] == ["b"]


def test_model_defaults_are_overridden_by_the_model(tmp_path: Path) -> None:
    text = (
        "defaults: {temperature: 0.7, max_tokens: 100}\n"
        "models:\n  a: {provider: echo, temperature: 0}\ntasks:\n  - {id: t, prompt: x}\n"
    )
    (case,) = expand(text, tmp_path)
    assert case.model is not None and dict(case.model.params) == {"temperature": 0, "max_tokens": 100}


def test_mapping_tags_become_key_value_tags(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: x, tags: {level: '{{ 1 + 1 }}'}}\n"
    assert expand(text, tmp_path)[0].tags == ("level=2",)


def test_duplicate_ids_raise_with_a_table(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\nmatrix:\n  n: [1, 2]\ntasks:\n  - {id: same, prompt: x}\n"
    with pytest.raises(SuiteError, match="not unique"):
        expand(text, tmp_path)


def test_broken_variant_gets_its_own_id_and_problem(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\nmatrix:\n  n: [1, 2]\ntasks:\n  - {id: 'x-{{ m }}', prompt: x}\n"
    cases = expand(text, tmp_path)
    assert [c.case_id for c in cases] == ["tasks-0-1[a-run1]", "tasks-0-2[a-run1]"]
    assert all("'m' is undefined" in str(c.problem) for c in cases)


def test_missing_dataset_file_is_a_case_problem_with_the_line(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    dataset: {file: nope.jsonl}\n    prompt: x\n"
    (case,) = expand(text, tmp_path)
    assert str(case.problem).startswith("suites/demo.yaml:5: tasks[0].dataset: cannot read dataset file")


def test_broken_tag_template_is_a_case_problem_not_silence(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: x, tags: ['{{ nope }}']}\n"
    (case,) = expand(text, tmp_path)
    assert "tasks[0].tags: template error: 'nope' is undefined" in str(case.problem)


def test_unknown_model_in_task_models_fails_visibly(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: x, models: [a, b]}\n"
    cases = expand(text, tmp_path)
    assert [c.case_id for c in cases] == ["t[b-run1]", "t[a-run1]"]
    assert str(cases[0].problem).startswith("suites/demo.yaml:4: tasks[0].models: unknown model 'b'")


def test_command_line_models_get_the_suite_defaults(tmp_path: Path) -> None:
    text = "defaults: {temperature: 0.2}\nmodels:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: x}\n"
    (case,) = expand(text, tmp_path, models=("openai:gpt-4o-mini",))
    assert case.model is not None and case.model.params["temperature"] == 0.2


def test_unnamed_task_scorer_adds_to_suite_scorer_of_the_same_type(tmp_path: Path) -> None:
    text = (
        "models:\n  a: {provider: echo}\nscorers:\n  - {type: contains, value: x}\n"
        "tasks:\n  - id: t\n    prompt: x y\n    scorers:\n      - {type: contains, value: y}\n"
    )
    (case,) = expand(text, tmp_path)
    assert [(s.name, s.options["value"]) for s in case.scorers] == [("contains", "x"), ("contains_2", "y")]


def test_boolean_tags_read_as_yaml_writes_them(tmp_path: Path) -> None:
    text = "models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: x, tags: {hard: true}}\n"
    assert expand(text, tmp_path)[0].tags == ("hard=true",)
