"""UniversalBackrooms JSONL templates: one line per participant, ``{lmN_key}`` placeholders."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.suite.conversation.jsonl_template import (
    fill_line,
    fill_placeholders,
    placeholder_variables,
    read_template,
)

PEOPLE = [
    {"index": 1, "name": "Claude 1", "model": {"name": "opus", "label": "Claude"}, "company": "anthropic"},
    {"index": 2, "name": "GPT4o 2", "model": {"name": "gpt4o", "label": "GPT4o"}, "company": "openai", "mood": "dry"},
]


def test_placeholders_name_each_participants_actor_company_model_and_vars() -> None:
    variables = placeholder_variables(PEOPLE)
    assert variables == {
        "lm1_company": "anthropic", "lm1_actor": "Claude 1", "lm1_model": "Claude",
        "lm2_company": "openai", "lm2_mood": "dry", "lm2_actor": "GPT4o 2", "lm2_model": "GPT4o",
    }
    assert fill_placeholders("{lm1_actor} meets {lm2_actor}@{lm2_company} {lm2_mood}", variables) == (
        "Claude 1 meets GPT4o 2@openai dry"
    )


def test_double_braces_are_escapes_as_in_str_format_and_other_braces_stay() -> None:
    art = "{ }  {x}  {{lm1_actor}}  {{{lm1_actor}}}  {lm1}  }"
    assert fill_placeholders(art, placeholder_variables(PEOPLE)) == "{ }  {x}  {lm1_actor}  {Claude 1}  {lm1}  }"


def test_unknown_placeholders_are_errors() -> None:
    variables = placeholder_variables(PEOPLE)
    with pytest.raises(ValueError, match=r"\{lm3_actor\} names participant 3, but there is no such participant"):
        fill_placeholders("{lm3_actor}", variables)
    with pytest.raises(ValueError, match=r"unknown placeholder \{lm1_mood\}: participants have actor, company, model"):
        fill_placeholders("{lm1_mood}", variables)


def test_a_template_file_gives_one_checked_line_per_participant(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"system_prompt": "Hi {lm1_actor}", "context": [{"role": "user", "content": "{lm2_company}:~/$"}]}\n'
        "\n"
        '{"system_prompt": ""}\n'
    )
    first, second = (fill_line(line, placeholder_variables(PEOPLE)) for line in read_template(path))
    assert first.system_prompt == "Hi Claude 1" and first.context[0].content == "openai:~/$"
    assert second.system_prompt == "" and second.context == ()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "t.jsonl: no participant lines"),
        ("[1]\n", "t.jsonl:1: expected a JSON object with system_prompt and context"),
        ('{"system_prompt": 3}\n', "t.jsonl:1: system_prompt must be a string"),
        ('{"context": [{"role": "user"}]}\n', "t.jsonl:1: context[0]: expected"),
        ('{"prompt": "x"}\n', "t.jsonl:1: unknown key 'prompt' (keys: system_prompt, context)"),
    ],
)
def test_a_bad_template_file_says_which_line(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with pytest.raises(
        (ValueError, TypeError), match=error.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        read_template(path)
