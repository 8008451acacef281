"""Cases run with the session's items out of the garbage collector's way, and a run leaves nothing frozen."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from suites import CAPITALS  # type: ignore[import-not-found]

RECORD_FREEZE = """\
import gc
import json
from pathlib import Path


def pytest_runtest_teardown(item):
    out = Path(__file__).parent / "frozen.json"
    seen = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps([*seen, gc.get_freeze_count()]))
"""


def test_items_are_frozen_while_cases_run_and_thawed_after(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.makeconftest(RECORD_FREEZE)
    before = gc.get_freeze_count()
    result = pytester.inline_run("suites", "-p", "no:randomly")
    result.assertoutcome(passed=2, failed=2)  # the parrot echoes: its answers fail
    counts = json.loads(Path(pytester.path, "frozen.json").read_text())
    assert len(counts) == 4 and all(count > before for count in counts)
    # nothing is left frozen, not even what startup.py set aside when this process loaded the plugin
    assert gc.get_freeze_count() == 0


FREEZE_AT_EXIT = """\
import atexit
import gc
from pathlib import Path

counts = {}


def pytest_sessionfinish():
    counts["end"] = gc.get_freeze_count()


def record():  # registered first, so it runs after every later atexit handler (the plugin's)
    Path(__file__).with_name("frozen-at-exit.txt").write_text(f"{counts['end']} {gc.get_freeze_count()}")


atexit.register(record)
"""


@pytest.mark.parametrize("suite", [True, False], ids=["cases", "plain-tests"])
def test_only_a_session_with_cases_freezes_what_is_left_at_exit(pytester: pytest.Pytester, suite: bool) -> None:
    """Sparing the interpreter's last collection is for the items of cases; a project's own tests keep it."""
    if suite:
        pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    pytester.makeconftest(FREEZE_AT_EXIT)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3 if suite else 1,
                                                                             failed=2 if suite else 0)
    at_end, at_exit = map(int, (pytester.path / "frozen-at-exit.txt").read_text().split())
    assert (at_exit > at_end) is suite
