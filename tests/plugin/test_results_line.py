"""The terminal's "results:" line names what this run wrote, and says apart what earlier runs left in the folder."""

from __future__ import annotations

import pytest

from suites import CAPITALS  # type: ignore[import-not-found]


def test_the_results_line_names_what_this_run_wrote_and_what_earlier_runs_left(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    earlier = pytester.path / "bench-results"
    (earlier / "conversations" / "backrooms").mkdir(parents=True)  # as a run of other suites leaves them
    (earlier / "mt_bench.csv").write_text("model\r\n")
    result = pytester.runpytest("suites", "-k", "france and atlas", "--bench-html", "off")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "results: *bench-results/ (results.jsonl, report.md, summary.json, dashboard.html)",
        "left from earlier runs, not written by this one: mt_bench.csv, conversations/",
    ])
    assert (earlier / "dashboard.html").is_file()


def test_a_clean_folder_has_nothing_left_from_earlier_runs(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    result = pytester.runpytest("suites", "-k", "france and atlas", "--bench-html", "off")
    result.stdout.fnmatch_lines(["results: *(results.jsonl, report.md, summary.json, dashboard.html)"])
    result.stdout.no_fnmatch_line("*left from earlier runs*")
