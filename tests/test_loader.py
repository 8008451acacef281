"""The YAML loader keeps a line for every key path and rejects what YAML would silently accept."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import format_key_path, load_suite_file, load_suite_text


def load(text: str):
    return load_suite_text(text, path=Path("demo.yaml"), display_path="suites/demo.yaml")


def test_line_of_nested_key_is_the_key_line() -> None:
    loaded = load("models:\n  a: {provider: echo}\ntasks:\n  - id: t1\n    prompt: hi\n  - id: t2\n    prompt: yo\n")
    assert loaded.lines.line_of(("tasks", 1, "prompt")) == 6
    assert loaded.lines.line_of(("models", "a", "provider")) == 1
    assert loaded.lines.line_of(("tasks", 1, "missing", "deeper")) == 5  # nearest ancestor: tasks[1]


def test_duplicate_key_is_an_error_with_both_lines() -> None:
    with pytest.raises(SuiteError) as info:
        load("models: {}\ntasks: []\nmodels: {}\n")
    message = str(info.value)
    assert message.startswith("suites/demo.yaml:3: models: duplicate key 'models' (first on line 1)")


def test_invalid_yaml_names_file_and_line() -> None:
    with pytest.raises(SuiteError) as info:
        load("models:\n  a: [1, 2\ntasks: []\n")
    assert str(info.value).startswith("suites/demo.yaml:2:6: models.a: this '[' is never closed with ']'")


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(SuiteError, match="expected a mapping at the top level"):
        load("- just\n- a list\n")


def test_anchors_and_merge_keys_are_honoured() -> None:
    loaded = load("base: &b {provider: echo, label: X}\nmodels:\n  a:\n    <<: *b\n    label: Y\n")
    assert loaded.data["models"]["a"] == {"provider": "echo", "label": "Y"}


def test_excerpt_marks_the_line() -> None:
    loaded = load("a: 1\nb: 2\nc: 3\n")
    assert loaded.excerpt(1) == "    1 | a: 1\n  > 2 | b: 2\n    3 | c: 3"


def test_format_key_path() -> None:
    assert format_key_path(("tasks", 3, "scorers", 1, "weight")) == "tasks[3].scorers[1].weight"


def test_a_suite_that_is_not_utf8_names_the_line_and_column(tmp_path: Path) -> None:
    suite = tmp_path / "demo.yaml"
    suite.write_bytes("suite: d\ntasks:\n  - id: t\n    prompt: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SuiteError) as info:
        load_suite_file(suite, "suites/demo.yaml")
    assert str(info.value).startswith("suites/demo.yaml:4:16: the file is not UTF-8: byte 0xe9 cannot be read")
    assert "save the file as UTF-8" in str(info.value)
