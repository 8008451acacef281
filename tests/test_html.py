"""pytest-html integration: our columns carry values, and model output can never run as HTML."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.report.html import HtmlReportHooks, case_view, extras_for, format_transcript

PAYLOAD = "<script>alert(1)</script>"

CONFTEST = f"""
import pytest
from bench_plugin.report.html import HtmlReportHooks, extras_for

PAYLOAD = {PAYLOAD!r}


def pytest_configure(config):
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(HtmlReportHooks(), "bench-html-hooks")


def record_for(item):
    if item.name.startswith("test_judged"):
        return {{
            "nodeid": item.nodeid, "model": "gpt-4o", "model_label": "gpt-4o <b>bold</b>",
            "task": "capital-france", "status": "passed", "composite": 0.75,
            "response": PAYLOAD,
            "transcript": [
                {{"role": "user", "content": "Capital of France?"}},
                {{"role": "assistant", "name": "bot", "content": PAYLOAD}},
            ],
            "scores": {{"components": [{{
                "name": "judge <i>", "value": 0.75, "judge_output": "Verdict: " + PAYLOAD,
            }}], "composite": 0.75}},
        }}
    if item.name == "test_unscored":
        return {{"nodeid": item.nodeid, "model": "claude", "task": "math", "status": "unscored",
                 "composite": None, "response": "4"}}
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    record = record_for(item)
    if report.when == "call" and record is not None:
        report.bench_record = record
        report.extras = extras_for(record, linked=True)
    return report
"""

TESTS = """
import pytest

@pytest.mark.parametrize("x", [1], ids=["<img src=x onerror=alert(2)>"])
def test_judged(x):
    pass

def test_unscored():
    pass

def test_plain():
    pass
"""


class TagCollector(HTMLParser):
    """The element tags a browser would create from a piece of HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.blob: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if ("id", "data-container") in attrs:
            self.blob = dict(attrs)["data-jsonblob"]


def tags_in(fragment: str) -> list[str]:
    parser = TagCollector()
    parser.feed(fragment)
    return parser.tags


def load_report(path: Path) -> tuple[str, dict[str, Any]]:
    """The report's text and the JSON blob its script turns into table rows (as the browser sees it)."""
    text = path.read_text(encoding="utf-8")
    parser = TagCollector()
    parser.feed(text)
    assert parser.blob is not None
    return text, json.loads(parser.blob)


def extra_content(report_dir: Path, extra: dict[str, Any]) -> str:
    """What the browser shows when the extra's link is opened."""
    content = str(extra["content"])
    if content.startswith("data:"):
        header, _, data = content.partition(",")
        assert header.endswith(";base64")
        return base64.b64decode(data).decode("utf-8")
    return (report_dir / content).read_text(encoding="utf-8")


@pytest.fixture(params=[True, False], ids=["self-contained", "assets"])
def html_run(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> tuple[Path, str, dict[str, Any]]:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cases=TESTS)
    args = ["-p", "no:bench_plugin", "-p", "no:asyncio", "-p", "no:cacheprovider", "--html=report.html"]
    if request.param:
        args.append("--self-contained-html")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=3)
    text, data = load_report(pytester.path / "report.html")
    return pytester.path, text, data


def rows_by_test(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {nodeid.split("::")[-1]: tests[0] for nodeid, tests in data["tests"].items()}


def test_model_task_score_columns_follow_the_test_column(html_run: tuple[Path, str, dict[str, Any]]) -> None:
    _, text, _ = html_run
    positions = [
        text.index(f'data-column-type="{key}"') for key in ("testId", "model", "task", "score", "duration")
    ]
    assert positions == sorted(positions)
    assert '<th class="sortable" data-column-type="model">Model</th>' in text


def test_rows_show_record_values_escaped_and_blank_without_a_record(
    html_run: tuple[Path, str, dict[str, Any]],
) -> None:
    _, _, data = html_run
    rows = rows_by_test(data)
    judged = rows["test_judged[<img src=x onerror=alert(2)>]"]["resultsTableRow"]
    assert (
        judged[1]
        == '<td class="col-testId">test_cases.py::test_judged[&lt;img src=x onerror=alert(2)&gt;]</td>'
    )
    assert judged[2:5] == [
        '<td class="col-model">gpt-4o &lt;b&gt;bold&lt;/b&gt;</td>',
        '<td class="col-task">capital-france</td>',
        '<td class="col-score">0.7500</td>',
    ]
    assert rows["test_unscored"]["resultsTableRow"][2:5] == [
        '<td class="col-model">claude</td>',
        '<td class="col-task">math</td>',
        '<td class="col-score">unscored</td>',
    ]
    assert rows["test_plain"]["resultsTableRow"][2:5] == [
        '<td class="col-model"></td>',
        '<td class="col-task"></td>',
        '<td class="col-score"></td>',
    ]


def test_no_markup_from_records_reaches_the_page(html_run: tuple[Path, str, dict[str, Any]]) -> None:
    _, text, data = html_run
    assert PAYLOAD not in text
    for test in data["tests"].values():
        for row in test:
            # the page's script puts these through innerHTML: only our own cells and links may appear
            for cell in row["resultsTableRow"]:
                assert set(tags_in(cell)) <= {"td", "a"}, cell
            assert "<script" not in row["log"]


def test_transcript_and_judge_output_are_linked_as_plain_text(
    html_run: tuple[Path, str, dict[str, Any]],
) -> None:
    report_dir, _, data = html_run
    extras = {
        extra["name"]: extra
        for extra in rows_by_test(data)["test_judged[<img src=x onerror=alert(2)>]"]["extras"]
    }
    assert list(extras) == ["Transcript", "Judge: judge &lt;i&gt;", "Record"]
    assert [extras[name]["mime_type"] for name in extras] == ["text/plain", "text/plain", "application/json"]

    transcript = extra_content(report_dir, extras["Transcript"])
    assert transcript == f"user: Capital of France?\n\nassistant (bot): {PAYLOAD}"
    assert extra_content(report_dir, extras["Judge: judge &lt;i&gt;"]) == f"Verdict: {PAYLOAD}"
    record = json.loads(extra_content(report_dir, extras["Record"]))
    assert record["response"] == PAYLOAD
    for extra in extras.values():
        assert str(extra["content"]).startswith(("data:text/plain;", "data:application/json;", "assets/"))


def test_hooks_are_optional_so_they_register_without_pytest_html(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from bench_plugin.report.html import HtmlReportHooks\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(HtmlReportHooks(), 'bench-html-hooks')\n"
    )
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:bench_plugin", "-p", "no:asyncio", "-p", "no:html")
    result.assert_outcomes(passed=1)


def test_extras_for_a_record_without_transcript_falls_back_to_prompt_and_response() -> None:
    record = {"messages": [{"role": "system", "content": "Be brief."}], "response": "Paris"}
    assert format_transcript(record) == "system: Be brief.\n\nassistant: Paris"
    names = [extra["name"] for extra in extras_for(record, linked=True)]
    assert names == ["Transcript", "Record"]


def test_header_columns_go_after_the_test_column_wherever_it_is() -> None:
    cells = [
        '<th data-column-type="result">Result</th>',
        "<th>Extra</th>",
        '<th data-column-type="testId">Test</th>',
    ]
    HtmlReportHooks().pytest_html_results_table_header(cells)
    assert [cell.split(">")[1].split("<")[0] for cell in cells] == [
        "Result",
        "Extra",
        "Test",
        "Model",
        "Task",
        "Score",
        "Run",
        "Components",
    ]


def test_control_characters_of_an_answer_are_shown_not_obeyed_in_the_case_view() -> None:
    """A bidirectional override made the browser show ``safe\u202etxt.exe`` reordered, as ``safeexe.txt``."""
    record = {"messages": [{"role": "user", "content": "name a file"}], "response": "safe\u202etxt.exe\u061c \x1b[2J",
              "transcript": [{"role": "assistant", "content": "safe\u202etxt.exe\u061c \x1b[2J"}]}
    view = case_view(record)
    assert "\u202e" not in view and "\u061c" not in view and "\x1b" not in view
    assert "safe\\u202etxt.exe\\u061c \\x1b[2J" in view
