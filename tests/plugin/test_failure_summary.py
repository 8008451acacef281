"""pytest's failure summary with the scan for teardown sections kept linear: the same output, the same stats."""

from __future__ import annotations

import pytest

SUITE = (
    "models:\n  m: {provider: echo}\n"
    "matrix:\n  n: [0, 1, 2, 3, 4, 5]\n"
    "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }}'}\n"
    "scorers:\n  - {name: C, type: contains, value: \"{{ n if n % 3 else 'absent' }}\"}\n"
)

NOISY_TEST = """
import pytest

@pytest.fixture
def noisy():
    yield
    print("said at teardown")

def test_fails_with_teardown_output(noisy):
    assert 0

def test_passes_with_teardown_output(noisy):
    pass
"""

COUNTING_CONFTEST = """
def pytest_terminal_summary(terminalreporter):
    seen = len(terminalreporter.stats.get("", []))
    terminalreporter.write_line(f"passed setup and teardown reports seen: {seen}")
"""


def run_both(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, pytest.RunResult]:
    pytester.makefile(".yaml", **{"suites/demo": SUITE})
    pytester.makepyfile(test_noisy=NOISY_TEST)
    pytester.makeconftest(COUNTING_CONFTEST)
    ours = pytester.runpytest("suites", "test_noisy.py", "-p", "no:randomly", *args)
    pytesters = pytester.runpytest("suites", "test_noisy.py", "-p", "no:randomly", "-p", "no:bench_failure_summary",
                                   "-p", "no:bench_failure_summary_put_back", *args)
    return ours, pytesters


def summary(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if " in " not in line or "passed" not in line]


@pytest.mark.parametrize("args", [(), ("-rP",), ("--tb=short",)])
def test_failure_summary_prints_what_pytest_prints(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    ours, pytesters = run_both(pytester, *args)
    ours.assert_outcomes(passed=5, failed=3)
    assert summary(ours) == summary(pytesters)
    ours.stdout.fnmatch_lines(["*Captured stdout teardown*", "said at teardown"])


def test_other_plugins_summaries_see_every_passed_phase_report(pytester: pytest.Pytester) -> None:
    ours, _ = run_both(pytester)
    # 8 items: each passed setup, and the teardown of every item (the failures' setups passed too)
    ours.stdout.fnmatch_lines(["passed setup and teardown reports seen: 16"])
