"""What the pytest-html page says of a run's cases: a skip's message, the cases counted, a measured case."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

SUITE = (
    "models:\n  a: {provider: echo}\n"
    "judges:\n"
    "  vague:\n    provider: scripted\n    script:\n      - {reply: 'It is fine I guess.'}\n"
    "  rater:\n    provider: scripted\n    script:\n      - {reply: 'Rating: [[1]]'}\n"
    "tasks:\n"
    "  - id: unreadable\n    prompt: hello\n"
    "    scorers:\n      - {name: J, type: llm_judge, judge: vague, prompt: 'Rate: {{ answer }}'}\n"
    "  - id: measured\n    prompt: hello\n"
    "    scorers:\n      - {name: J, type: llm_judge, judge: rater, prompt: 'Rate: {{ answer }}'}\n"
)


class BlobFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.blob: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if ("id", "data-container") in attrs:
            self.blob = dict(attrs)["data-jsonblob"]


@pytest.fixture
def page(pytester: pytest.Pytester) -> tuple[str, dict[str, Any]]:
    pytest.importorskip("pytest_html")
    pytester.makefile(".yaml", **{"suites/demo": SUITE})
    pytester.runpytest("suites", "--html=report.html", "--self-contained-html").assert_outcomes(passed=1, skipped=1)
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    finder = BlobFinder()
    finder.feed(text)
    assert finder.blob is not None
    return text, json.loads(finder.blob)


def row(data: dict[str, Any], task: str) -> dict[str, Any]:
    (found,) = [tests[0] for nodeid, tests in data["tests"].items() if f"::{task}[" in nodeid]
    return found


def test_a_skipped_case_shows_its_message_not_a_python_tuple(page: tuple[str, dict[str, Any]]) -> None:
    _, data = page
    log = row(data, "unreadable")["log"]
    assert "('" not in log and "Skipped:" not in log
    assert re.match(r"\S*suites/demo\.yaml:\d+: unscored: .*could not read a score from the judge reply", log)


def test_a_case_passed_without_a_pass_rule_reads_as_measured(page: tuple[str, dict[str, Any]]) -> None:
    text, data = page
    cells = "".join(row(data, "measured")["resultsTableRow"])
    assert '<td class="col-score">0.0000 measured, no pass rule</td>' in cells
    # pytest-html reads the result from the cell's text (filters, counts): the text stays, the style shows Measured
    assert '<td class="col-result bench-measured">Passed</td>' in cells
    assert row(data, "measured")["result"] == "Passed"
    assert ".col-result.bench-measured::before{content:'Measured'" in text


def test_the_page_counts_cases_including_skipped_ones(page: tuple[str, dict[str, Any]]) -> None:
    text, _ = page
    assert "2 cases: 1 measured (passed: no pass rule a score can fail), 1 unscored" in text


def test_a_grade_under_pass_threshold_0_reads_as_measured_not_passed(pytester: pytest.Pytester) -> None:
    """MT-Bench (``pass_threshold: 0``: a grade, not a test) showed Passed beside a score of 0.0000."""
    pytest.importorskip("pytest_html")
    suite = (SUITE.split("tasks:")[0] + "pass_threshold: 0\ntasks:\n  - id: graded\n    prompt: hello\n"
             "    scorers:\n      - {name: J, type: llm_judge, judge: rater, prompt: 'Rate: {{ answer }}'}\n")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    pytester.runpytest("suites", "--html=report.html", "--self-contained-html").assert_outcomes(passed=1)
    finder = BlobFinder()
    finder.feed((pytester.path / "report.html").read_text(encoding="utf-8"))
    assert finder.blob is not None
    cells = "".join(row(json.loads(finder.blob), "graded")["resultsTableRow"])
    assert '<td class="col-result bench-measured">Passed</td>' in cells  # shown as Measured
    assert '<td class="col-score">0.0000 measured, pass_threshold 0</td>' in cells
