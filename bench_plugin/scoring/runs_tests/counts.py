"""How many tests passed, as the runner reports it: a JUnit XML file it wrote, else pytest's summary line.

Both come from the process that ran the answer's code, so both are read as hostile: the XML file is
bounded in size and parsed without external entities (``xml.etree`` fetches none, and expat refuses
exponential entity expansion), numbers are checked. Code that wants to fake its results can (it runs
in the same process as the tests, as in every HumanEval-style harness); the sandbox keeps it from
doing more than that.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

MAX_REPORT_BYTES = 5_000_000
_SUMMARY = re.compile(r"^=*\s*(?P<counts>(?:\d+ [a-z]+(?:, )?)+) in [\d.]+s(?: \([^)]*\))?\s*=*\s*$")
_COUNT = re.compile(r"(\d+) ([a-z]+)")
_FAILING = ("failed", "error", "errors")


@dataclass(frozen=True)
class TestCounts:
    """Tests that passed and that failed (errors included); skipped and expected failures count in neither."""

    __test__ = False  # a pytest collecting a test module that imports it must not take it for tests

    passed: int
    failed: int
    source: str  # where they were read: "junit" or "summary"

    @property
    def total(self) -> int:
        """The tests that ran to a verdict."""
        return self.passed + self.failed

    def to_dict(self) -> dict[str, int | str]:
        """As the record's component keeps them."""
        return {"passed": self.passed, "failed": self.failed, "total": self.total, "source": self.source}


def read_counts(report: Path, output: str) -> TestCounts | None:
    """The counts from the JUnit XML at ``report`` (when the runner wrote one), else from ``output``; None: neither."""
    return _from_junit(report) or _from_summary(output)


def _from_junit(report: Path) -> TestCounts | None:
    """``<testsuites>``/``<testsuite>`` totals: tests, failures, errors, skipped."""
    root = _junit_root(report)
    suites = [] if root is None else [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        return None
    tests = sum(_number(suite, "tests") for suite in suites)
    failed = sum(_number(suite, "failures") + _number(suite, "errors") for suite in suites)
    passed = tests - failed - sum(_number(suite, "skipped") for suite in suites)
    return TestCounts(passed, failed, "junit") if passed >= 0 else None


def _junit_root(report: Path) -> ElementTree.Element | None:
    """The report's root element; None when it is missing, a link (not followed), too large or not XML."""
    if report.is_symlink() or not report.is_file() or report.stat().st_size > MAX_REPORT_BYTES:
        return None
    try:
        return ElementTree.parse(report).getroot()
    except (ElementTree.ParseError, OSError, ValueError):
        return None


def _number(element: ElementTree.Element, name: str) -> int:
    text = element.get(name, "0")
    return int(text) if text.isdigit() and len(text) < 10 else 0


def _from_summary(output: str) -> TestCounts | None:
    """Pytest's last summary line (``3 passed, 1 failed in 0.12s``, with or without ``=`` around it)."""
    for line in reversed(output.splitlines()):
        found = _SUMMARY.match(line.strip())
        if found is not None:
            counts = {word: int(number) for number, word in _COUNT.findall(found["counts"])}
            failed = sum(counts.get(word, 0) for word in _FAILING)
            return TestCounts(counts.get("passed", 0), failed, "summary")
    return None
