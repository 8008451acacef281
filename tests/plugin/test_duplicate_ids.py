"""Duplicate case ids, through ``bench validate`` and pytest's collection: which task, and what its id lacks."""

from __future__ import annotations

import pytest

from bench_plugin.cli import main

MATRIX = """\
models:
  bot:
    provider: scripted
    script:
      - {reply: "Paris"}
matrix:
  n: [1, 2, 3]
  size: [small, large]
tasks:
  - id: "fine-{{ n }}-{{ size }}"
    prompt: Capital of France?
    scorers: [{name: C, type: contains, value: Paris}]
  - prompt: Add {{ n }} to the {{ size }} one
    id: add
    scorers: [{name: C, type: contains, value: Paris}]
"""

OWN = [
    "*demo.yaml:13: tasks[[]1[]].id: 5 case id(s) are not unique:",
    "  add[[]bot-run1[]]  6 cases of the task at line 13",
    "  hint: the task at line 13 expands to 6 cases with the same id, because its id does not use the matrix "
    'variables n and size: add {{ n }} and {{ size }} to the id, e.g. id: "add-{{ n }}-{{ size }}"',
]

TWO_TASKS = """\
models:
  bot: {provider: echo}
tasks:
  - {id: same, prompt: x}
  - id: same
    prompt: y
"""

DATASET = """\
models:
  bot: {provider: echo}
matrix:
  n: [1, 2]
tasks:
  - id: "q-{{ n }}"
    dataset: {file: rows.jsonl}
    prompt: "{{ question }}"
"""


def validate(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, list[str]]:
    pytester.makefile(".yaml", **{"suites/demo": text})
    code = main(["validate", str(pytester.path / "suites")])
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


def test_a_task_whose_id_ignores_the_matrix_is_named_with_the_variables_to_add(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both duplicates came from one task: the message said "line 13 and line 13", five times."""
    code, lines = validate(pytester, capsys, MATRIX)
    assert code != 0
    pytest.LineMatcher(lines).fnmatch_lines(OWN, consecutive=True)
    assert not [line for line in lines if "line 13 and line 13" in line]
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(OWN, consecutive=True)
    result.stdout.no_fnmatch_line("*line 13 and line 13*")


def test_two_tasks_with_one_id_keep_the_table_of_lines(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = validate(pytester, capsys, TWO_TASKS)
    assert code != 0
    pytest.LineMatcher(lines).fnmatch_lines([
        "*demo.yaml:5: tasks[[]1[]].id: 1 case id(s) are not unique:",
        "  same[[]bot-run1[]]  line 4 and line 5",
        "  hint: give each task a distinct id; with a matrix or dataset put a varying field in the id, "
        'e.g. id: "landlord-{{ amount }}-{{ category }}"',
    ], consecutive=True)


def test_a_task_whose_id_ignores_its_dataset_rows_is_told_to_add_a_field(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".jsonl", **{"suites/rows": '{"question": "a"}\n{"question": "b"}\n'})
    code, lines = validate(pytester, capsys, DATASET)
    assert code != 0
    pytest.LineMatcher(lines).fnmatch_lines([
        "  q-1[[]bot-run1[]]  2 cases of the task at line 6",
        "  q-2[[]bot-run1[]]  2 cases of the task at line 6",
        "  hint: the task at line 6 expands to 2 cases with the same id, because its id does not use its dataset's "
        "rows: add {{ row_index }} (the row's place in the file) or a field that tells the rows apart to the id, "
        'e.g. id: "q-{{ n }}-{{ row_index }}"',
    ], consecutive=True)
