"""`bench report` rebuilds the run's report.md from its records: the same records give the same file."""

from __future__ import annotations

import re

import pytest

from bench_plugin.cli import main

# matrix variables written out of alphabetical order: results.jsonl stores each record's keys sorted
SUITE = """
suite: grid
models:
  a: {provider: echo}
  b: {provider: scripted, script: [{contains: zz, reply: "hi"}, {reply: "no"}]}
matrix:
  zone: [zz, yy]
  colour: [red, blue]
tasks:
  - id: "t-{{ zone }}-{{ colour }}"
    prompt: "hi {{ zone }} {{ colour }}"
scorers:
  - {name: C, type: contains, value: hi}
"""


def headings(text: str) -> list[str]:
    return re.findall(r"^#### By .*$", text, flags=re.MULTILINE)


def test_bench_report_orders_the_breakdowns_as_the_run_did(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": SUITE})
    pytester.runpytest("suites", "--bench-html", "off").assert_outcomes(passed=6, failed=2)
    results = pytester.path / "bench-results"
    run_headings = headings((results / "report.md").read_text(encoding="utf-8"))
    assert run_headings == ["#### By colour (task variable)", "#### By zone (task variable)"]

    assert main(["report", str(results / "results.jsonl"), "-o", str(pytester.path / "rebuilt")]) == 0
    assert headings((pytester.path / "rebuilt" / "report.md").read_text(encoding="utf-8")) == run_headings
