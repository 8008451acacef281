"""Schema errors read as 'file:line: key.path: expected X, got Y' with a hint where one helps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.schema import check_against_schema, suite_schema

REPO = Path(__file__).resolve().parents[1]


def error_for(text: str) -> str:
    loaded = load_suite_text(text, path=Path("demo.yaml"), display_path="suites/demo.yaml")
    with pytest.raises(SuiteError) as info:
        check_against_schema(loaded)
    return str(info.value)


def test_packaged_schema_matches_the_published_copy() -> None:
    published = json.loads((REPO / "schemas" / "suite.schema.json").read_text(encoding="utf-8"))
    assert published == suite_schema()


def test_unknown_key_suggests_the_close_one() -> None:
    message = error_for("models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    promt: hi\n")
    assert message.splitlines()[0] == "suites/demo.yaml:5: tasks[0].promt: unknown key 'promt'"
    assert "hint: did you mean 'prompt'?" in message


def test_wrong_type_says_expected_and_found() -> None:
    # (pass_threshold: high is checked at build: a text threshold may be a template, tests/test_data_features.py)
    message = error_for("models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\nruns: many\n")
    assert message.splitlines()[0] == "suites/demo.yaml:5: runs: expected a whole number, got 'many'"


def test_out_of_range_number() -> None:
    message = error_for("models:\n  a: {provider: echo, temperature: -1}\ntasks:\n  - {id: t, prompt: hi}\n")
    assert "models.a.temperature: expected a number >= 0, got -1" in message


def test_missing_required_key() -> None:
    message = error_for("models:\n  a: {label: x}\ntasks:\n  - {id: t, prompt: hi}\n")
    assert message.startswith("suites/demo.yaml:2: models.a: missing required key 'provider'")


def test_task_needs_exactly_one_prompt_form() -> None:
    message = error_for("models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    prompt: hi\n    prompt_file: x.j2\n")
    assert ("tasks[0]: expected exactly one of prompt, prompt_file, messages, turns, phases, conversation, "
            "prompts; found prompt, prompt_file") in message


def test_scorer_option_typo_is_caught_per_type() -> None:
    message = error_for(
        "models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    prompt: hi\n"
        "    scorers:\n      - {type: contains, valeu: x}\n"
    )
    assert "tasks[0].scorers[0].valeu: unknown key 'valeu'" in message
    assert "did you mean 'value'?" in message


def test_enum_lists_choices() -> None:
    message = error_for("models:\n  a: {provider: echo, system_prompt: folded}\ntasks:\n  - {id: t, prompt: hi}\n")
    assert "expected one of native, fold, drop, got 'folded'" in message
