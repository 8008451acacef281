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
