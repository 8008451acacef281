"""Dataset rows, and fields joined in from other files (MT-Bench's reference answers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_plugin.core.errors import CaseError
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.datasets import join_rows, load_dataset, load_rows
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text

QUESTIONS = [
    {"question_id": 81, "category": "writing", "turns": ["Write.", "Rewrite."]},
    {"question_id": 111, "category": "math", "turns": ["Area?", "Circle?"]},
]
REFERENCES = [
    {"question_id": 111, "choices": [{"turns": ["3", "5pi"]}]},
    {"question_id": 111, "choices": [{"turns": ["ignored: the first record wins", ""]}]},
]
JOIN = {"file": "refs.jsonl", "key": "question_id",
        "fields": {"ref_1": "choices.0.turns.0", "ref_2": "choices.0.turns.1"}}


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_a_left_join_adds_the_fields_of_the_first_match_and_none_without_one() -> None:
    joined = join_rows(QUESTIONS, REFERENCES, JOIN)
    assert joined[0] == {**QUESTIONS[0], "ref_1": None, "ref_2": None}
    assert joined[1] == {**QUESTIONS[1], "ref_1": "3", "ref_2": "5pi"}


def test_keys_compare_as_text_so_csv_strings_meet_json_numbers() -> None:
    rows = [{"question_id": "111"}]
    assert join_rows(rows, REFERENCES, JOIN)[0]["ref_2"] == "5pi"


def test_a_missing_field_in_the_matching_record_names_the_file_and_key() -> None:
    with pytest.raises(CaseError, match=r"refs.jsonl, the record for question_id 111: field 'choices.0.turns.2'"):
        join_rows(QUESTIONS, REFERENCES, {**JOIN, "fields": {"ref_3": "choices.0.turns.2"}})


def test_load_dataset_reads_joins_relative_to_the_data_folder(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    write_jsonl(tmp_path / "refs.jsonl", REFERENCES)
    rows = load_dataset(tmp_path, {"file": "questions.jsonl", "join": [JOIN]})
    assert [row["ref_1"] for row in rows] == [None, "3"]


def test_joined_fields_are_case_variables_and_filters_see_them(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "questions.jsonl", QUESTIONS)
    write_jsonl(tmp_path / "refs.jsonl", REFERENCES)
    text = (
        "models:\n  a: {provider: echo}\n"
        "tasks:\n"
        "  - id: 'q{{ question_id }}'\n"
        "    dataset:\n"
        "      file: questions.jsonl\n"
        "      filter: ref_1 is not none\n"
        "      join:\n"
        "        - {file: refs.jsonl, key: question_id, fields: {ref_1: choices.0.turns.0}}\n"
        "    prompt: '{{ turns[0] }} (reference: {{ ref_1 }})'\n"
    )
    path = tmp_path / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_suite_text(text, path=path, display_path="suites/demo.yaml")
    (case,) = expand_suite(build_suite(loaded))
    assert case.task == "q111" and case.variables["ref_1"] == "3"
    assert case.messages[-1].content == "Area? (reference: 3)"


def test_a_dataset_that_is_not_utf8_names_the_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_bytes("q,a\ncafé,1\n".encode("latin-1"))
    with pytest.raises(CaseError, match=r"dataset file rows\.csv is not UTF-8: byte 0xe9 at line 2, column 4"):
        load_rows(tmp_path / "rows.csv")
