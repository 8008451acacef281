"""The end of a run: report.html first, then our reports from the records the store kept packed.

So the page pytest-html builds and our records with their summary are never in memory together, the
largest moment of a long run; what every report says stays as before.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

# zone before apple: not alphabetical, as results.jsonl writes a record's keys
SUITE = """
suite: order
models:
  parrot: {provider: echo}
  mimic: {provider: echo}
matrix:
  zone: [north, south]
  apple: [red, green]
tasks:
  - {id: "t-{{ zone }}-{{ apple }}", prompt: "{% if zone == 'north' %}Ada{% else %}Bob{% endif %} {{ apple }}"}
scorers:
  - {name: C, type: contains, value: Ada}
  - {name: D, type: contains, value: red}
"""

# when pytest-html's page is written, whether our summary.json already is
WATCH_ORDER = """
from pathlib import Path


def pytest_html_results_summary(prefix, summary, postfix, session):
    out = Path(session.config.rootpath)
    (out / "seen.txt").write_text(str((out / "bench-results" / "summary.json").exists()))
"""

_TIMING = {"duration_s", "latency_s", "mean_latency_s", "started_at", "timestamp"}


def scrubbed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: scrubbed(v) for k, v in value.items() if k not in _TIMING}
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    return value


def outputs(folder: Path) -> dict[str, Any]:
    """summary.json and report.md, timing aside."""
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    return {"summary": scrubbed(json.loads((folder / "summary.json").read_text(encoding="utf-8"))),
            "markdown": re.sub(r"\b\d+\.\d+ s\b", "<s>", markdown)}


def test_breakdowns_list_variables_in_name_order(pytester: pytest.Pytester) -> None:
    """Not the suite's order: results.jsonl keeps keys sorted, and `bench report` must rebuild the same file."""
    pytester.makefile(".yaml", **{"suites/order": SUITE})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(passed=2, failed=6)
    summary = json.loads((pytester.path / "bench-results" / "summary.json").read_text(encoding="utf-8"))
    [suite] = summary["suites"]
    assert [b["dimension"] for b in suite["breakdowns"]] == ["apple", "zone"]
    markdown = (pytester.path / "bench-results" / "report.md").read_text(encoding="utf-8")
    assert markdown.index("#### By apple") < markdown.index("#### By zone")


def test_report_html_is_written_before_ours_and_ours_say_the_same(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/order": SUITE})
    pytester.makeconftest(WATCH_ORDER)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-output", "plain", "--bench-html", "off")
    result.assert_outcomes(passed=2, failed=6)
    assert not (pytester.path / "seen.txt").exists()

    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=6)
    assert (pytester.path / "seen.txt").read_text() == "False"  # report.html was drawn before summary.json
    html = pytester.path / "bench-results" / "report.html"
    assert html.is_file() and "t-north-red" in html.read_text(encoding="utf-8")
    result.stdout.fnmatch_lines(["*results: *(results.jsonl, report.md, summary.json, dashboard.html)",
                                 "*Generated html report*"])
    assert outputs(pytester.path / "bench-results") == outputs(pytester.path / "plain")


def test_a_resumed_named_run_reports_kept_and_new_cases_alike(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/order": SUITE})
    first = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off", "--bench-run", "r",
                               "-k", "north")
    first.assert_outcomes(passed=2, failed=2)
    again = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off", "--bench-run", "r")
    again.assert_outcomes(passed=2, failed=6)
    again.stdout.fnmatch_lines(["*4 cases reused from run r*"])
    summary = json.loads((pytester.path / "bench-results" / "runs" / "r" / "summary.json").read_text("utf-8"))
    [suite] = summary["suites"]
    assert suite["totals"]["cases"] == 8 and suite["totals"]["passed"] == 2
    assert [row["model"] for row in suite["models"]] == ["parrot", "mimic"]


# whether the report writers were loading while the cases ran, seen as pytest-html draws its page
WATCH_WRITERS = """
from pathlib import Path


def pytest_html_results_summary(prefix, summary, postfix, session):
    reporter = session.config.pluginmanager.get_plugin("bench_reporter")
    (Path(session.config.rootpath) / "writers.txt").write_text(str(reporter._writers is not None))
"""


LARGE_FROM_8 = """
import bench_plugin.plugin.reporter

bench_plugin.plugin.reporter.LATE_WRITERS_FROM = 8
"""


def test_in_a_large_run_the_writers_load_after_report_html_and_write_the_same(pytester: pytest.Pytester) -> None:
    from bench_plugin.plugin import reporter

    assert not reporter.writers_load_late(reporter.LATE_WRITERS_FROM - 1, html=True)
    assert reporter.writers_load_late(reporter.LATE_WRITERS_FROM, html=True)
    assert not reporter.writers_load_late(10 * reporter.LATE_WRITERS_FROM, html=False)  # no page: no such moment

    pytester.makefile(".yaml", **{"suites/order": SUITE})
    pytester.makeconftest(WATCH_WRITERS)
    pytester.inline_run("suites", "-p", "no:cacheprovider", "--bench-output", "early").assertoutcome(
        passed=2, failed=6)
    assert (pytester.path / "writers.txt").read_text() == "True"  # a small run: loaded while its cases ran
    # 8 cases make a large run here; set in the run's own conftest.py, on the module the run's plugin uses
    # (an inline run may import the plugin's modules afresh)
    pytester.makeconftest(WATCH_WRITERS + LARGE_FROM_8)
    pytester.inline_run("suites", "-p", "no:cacheprovider", "--bench-output", "late").assertoutcome(
        passed=2, failed=6)
    assert (pytester.path / "writers.txt").read_text() == "False"
    assert outputs(pytester.path / "late") == outputs(pytester.path / "early")
    assert (pytester.path / "late" / "dashboard.html").is_file()
