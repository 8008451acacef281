"""A plain single-turn suite starts without importing the rooms of features it does not use (start-up)."""

from __future__ import annotations

import json
from typing import Any

import pytest

# the modules a fresh process holds once collection is over, written by the inner run's conftest.py
RECORD_MODULES = """\
import gc
import json
import sys

import pytest


def pytest_configure(config):
    config.stash_gc = (gc.get_freeze_count(), [])


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    session.config.stash_gc[1].append(gc.isenabled())
    with open("modules.json", "w") as out:
        json.dump({"modules": sorted(sys.modules), "frozen_at_configure": session.config.stash_gc[0],
                   "gc_enabled_in_collection": session.config.stash_gc[1]}, out)


def pytest_sessionfinish(session):
    with open("gc_after.json", "w") as out:
        json.dump(gc.isenabled(), out)
"""

PLAIN = """\
models:
  parrot: {provider: echo}
matrix:
  n: [1, 2, 3]
tasks:
  - {id: "case-{{ n }}", prompt: "Say {{ n }}"}
scorers:
  - {name: C, type: contains, value: "{{ n }}"}
"""

FEATURES = """\
models:
  ana: {provider: scripted, script: [{reply: "The door hums."}]}
  ben: {provider: scripted, script: [{reply: "It hums in B flat."}]}
tasks:
  - id: door
    conversation:
      mode: shared
      seed: Describe the door.
      participants: [{name: AI-1, model: ana}, {name: AI-2, model: ben}]
      max_turns: 1
  - {id: plain, prompt: Hello, models: [ana]}
scorers:
  - {name: C, type: contains, value: door}
aggregates:
  tables:
    - name: counts
      columns:
        - {name: n, fn: count}
"""

# what a plain suite never needs: each is imported when a suite uses its word (or, for the report
# writers, when the reports are written)
NOT_IMPORTED = [
    "bench_plugin.scoring.judge.llm_judge",  # llm_judge scorers, and recorded verdicts of replay judges
    "bench_plugin.scoring.graders.base",
    "bench_plugin.scoring.code",  # python scorers
    "bench_plugin.suite.conversation.spec",  # conversation:
    "bench_plugin.suite.conversation.check",
    "bench_plugin.suite.agent.build",  # tools:
    "bench_plugin.suite.agent.check",
    "bench_plugin.engines.agent.run",
    "bench_plugin.suite.aggregates.build",  # aggregates:
    "bench_plugin.suite.aggregates.spec",
    "bench_plugin.suite.leaderboard",  # leaderboard:
    "bench_plugin.plugin.xdist_schedule",  # only a process that distributes with -n
    "xdist.scheduler",
    "dotenv",  # only a run with a .env file
    "bench_plugin.report.write",  # the report writers: at the end of a run
    "numpy",
    "scipy",
    "bench_plugin.mock.server",
    "bench_plugin.cli",
]


def collected_modules(pytester: pytest.Pytester, suite: str, *args: str) -> dict[str, Any]:
    pytester.makeconftest(RECORD_MODULES)
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
    recorded: dict[str, Any] = json.loads((pytester.path / "modules.json").read_text())
    return recorded


def test_plain_suite_does_not_import_feature_rooms(pytester: pytest.Pytester) -> None:
    modules = set(collected_modules(pytester, PLAIN)["modules"])
    # the suite was read and validated in this process: the check below looks at the right list
    assert {"bench_plugin.suite.loader", "bench_plugin.suite.schema", "jsonschema"} <= modules
    assert sorted(modules.intersection(NOT_IMPORTED)) == []


def test_feature_rooms_are_imported_when_a_suite_names_them(pytester: pytest.Pytester) -> None:
    modules = set(collected_modules(pytester, FEATURES, "--collect-only")["modules"])
    assert {"bench_plugin.suite.conversation.check", "bench_plugin.suite.conversation.spec",
            "bench_plugin.suite.aggregates.build", "bench_plugin.suite.aggregates.spec"} <= modules
    assert "bench_plugin.suite.agent.check" not in modules


def test_collection_runs_with_the_garbage_collector_paused(pytester: pytest.Pytester) -> None:
    recorded = collected_modules(pytester, PLAIN)
    assert recorded["gc_enabled_in_collection"] == [False]
    assert json.loads((pytester.path / "gc_after.json").read_text()) is True
    assert recorded["frozen_at_configure"] > 0  # startup.py set pytest's objects aside


def test_collector_runs_again_after_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORD_MODULES)
    pytester.makefile(".yaml", **{"suites/demo": "models: [not, a, mapping\n"})
    result = pytester.runpytest_subprocess("suites/demo.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*suites/demo.yaml:1:*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert json.loads((pytester.path / "gc_after.json").read_text()) is True
