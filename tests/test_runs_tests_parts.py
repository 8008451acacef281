"""The parts of ``runs_tests`` that need no sandbox: finding the code in an answer, reading the test counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.scoring.runs_tests.code_blocks import extract_code, fenced_blocks
from bench_plugin.scoring.runs_tests.counts import read_counts
from bench_plugin.scoring.runs_tests.options import DEFAULT_COMMAND, RunsTestsOptions
from bench_plugin.suite.spec import ScorerSpec

ANSWER = """Here is a helper:

```
print("untagged")
```

Then the function:

~~~~Python
def f():
    return 1
~~~~

And how to call it:

```python
print(f())
```
"""


@pytest.mark.parametrize(("code", "language", "expected"), [
    ("first_block", None, 'print("untagged")\n'),
    ("last_block", None, "print(f())\n"),
    ("first_block", "python", "def f():\n    return 1\n"),
    ("first_block", "py", "def f():\n    return 1\n"),
    ("last_block", "python", "print(f())\n"),
    ("first_block", "rust", 'print("untagged")\n'),  # no rust block: the untagged ones count
    ("answer", None, ANSWER),
])
def test_the_code_is_the_block_the_options_name(code: str, language: str | None, expected: str) -> None:
    assert extract_code(ANSWER, code, language) == expected


def test_an_answer_without_a_block_has_no_code() -> None:
    assert extract_code("just words, `inline` code", "first_block") is None
    assert extract_code("```python\n```", "first_block") is None  # an empty block is no code
    assert extract_code("  \n", "answer") is None


def test_a_block_cut_off_at_the_token_limit_runs_to_the_end() -> None:
    assert fenced_blocks("```python\ndef f():\n    return")[0].text == "def f():\n    return\n"


def test_a_longer_fence_holds_a_shorter_one() -> None:
    text = "````markdown\n```python\nx = 1\n```\n````"
    assert extract_code(text, "first_block") == "```python\nx = 1\n```\n"


def test_counts_come_from_the_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text('<testsuites><testsuite tests="5" failures="1" errors="1" skipped="1"/></testsuites>')
    counts = read_counts(report, "9 passed in 0.1s")
    assert counts is not None and (counts.passed, counts.failed, counts.total, counts.source) == (2, 2, 4, "junit")


@pytest.mark.parametrize(("output", "expected"), [
    ("..F\n2 passed, 1 failed in 0.05s\n", (2, 1)),
    ("===== 1 failed, 3 passed, 2 warnings in 1.20s =====", (3, 1)),
    ("E   SyntaxError\n1 error in 0.10s", (0, 1)),
    ("=== 4 passed, 1 skipped in 0.3s (0:00:00) ===", (4, 0)),
])
def test_counts_come_from_pytests_summary_line_without_a_report(tmp_path: Path, output: str,
                                                                  expected: tuple[int, int]) -> None:
    counts = read_counts(tmp_path / "none.xml", output)
    assert counts is not None and (counts.passed, counts.failed) == expected


@pytest.mark.parametrize("report", [
    "not xml", '<testsuites><testsuite tests="1" failures="3"/></testsuites>', "<other/>",
])
def test_a_report_that_cannot_be_read_gives_no_counts(tmp_path: Path, report: str) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(report)
    assert read_counts(path, "no summary here") is None


def test_numbers_that_are_not_counts_count_nothing(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text('<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite tests="&a;" failures="-1" errors="99999999999"/>')
    counts = read_counts(path, "")
    assert counts is not None and counts.total == 0  # scored as "no test ran"


def test_a_linked_report_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.xml"
    elsewhere.write_text('<testsuite tests="3"/>')
    (tmp_path / "junit.xml").symlink_to(elsewhere)
    assert read_counts(tmp_path / "junit.xml", "") is None


def test_the_default_command_is_pytest_on_the_test_files() -> None:
    options = RunsTestsOptions.parse(ScorerSpec("T", "runs_tests", {"tests": "tests/check_a.py"}, "scorers[0]"))
    assert options.tests == ("tests/check_a.py",) and options.command is None
    assert DEFAULT_COMMAND[:5] == ("python3", "-W", "ignore::DeprecationWarning", "-m", "pytest")
    given = RunsTestsOptions.parse(ScorerSpec("T", "runs_tests", {"test_files": {"t.py": "x"},
                                                                    "command": "python3 t.py --fast"}, "s"))
    assert given.command == ("python3", "t.py", "--fast")
