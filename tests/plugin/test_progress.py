"""Progress while cases wait: done / total, in flight, errors, and which provider waits, why and how long."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from bench_plugin.mock.server import MockServer
from bench_plugin.run_status import RunStatus


def test_status_line_counts_cases_and_groups_the_waits():
    status = RunStatus()
    for _ in range(5):
        status.case_started()
    status.case_finished("passed")
    status.case_finished("error")
    status.case_finished("skipped", ran=False)
    with status.waiting("openai", "HTTP 429, server asked 30 s", 30), \
            status.waiting("openai", "HTTP 429, server asked 30 s", 10), status.waiting("local", "rpm limit 60/min", 2):
        line = status.line(total=10)
    # the time before the why: a line cut at the terminal's width keeps it
    assert line == ("bench: 3/10 cases done, 3 in flight, 1 error, 1 not run; waiting: local (1 call) 2 s: rpm limit "
                    "60/min; openai (2 calls) 30 s: HTTP 429, server asked 30 s")
    assert status.waits == {}
    assert status.line(total=None).startswith("bench: 3 cases done, 3 in flight, 1 error")


def test_a_wait_that_is_over_shows_no_time_left():
    status = RunStatus()
    with status.waiting("p", "paused after HTTP 429", 0.0):
        time.sleep(0.01)
        assert status.line(1).endswith("p (1 call) 0 s: paused after HTTP 429")


def limited_suite(server: MockServer, model_id: str) -> str:
    server.add_rule({"model": model_id, "status": 429, "retry_after": "3", "times": 1})
    return f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: 5}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: greet, prompt: 'Say hello to Ada'}}
scorers:
  - {{type: contains, value: Ada}}
"""


def test_a_case_held_by_a_429_shows_who_waits_why_and_for_how_long(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    pytester.makefile(".yaml", **{"suites/http": limited_suite(mock_server, f"wait-{uuid.uuid4().hex[:8]}")})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    lines = result.stdout.lines
    progress = [i for i, line in enumerate(lines) if line.startswith("bench: ")]
    assert len(progress) == 1  # not a terminal: one line per LOG_EVERY_S at most
    # the model's own wait, named as endpoint/model-id
    assert re.fullmatch(r"bench: 0/1 cases done, 1 in flight, 0 errors; waiting: mock/wait-\w+ \(1 call\) [0-3] s: "
                        r"HTTP 429, server asked 3 s", lines[progress[0]]), lines[progress[0]]
    assert lines[progress[0] - 1] == "suites/http.yaml "
    assert lines[progress[0] + 1].startswith("suites/http.yaml .")  # pytest's letter after its line's start


def test_verbose_runs_write_the_tests_line_again_under_the_progress(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    pytester.makefile(".yaml", **{"suites/http": limited_suite(mock_server, f"wait-{uuid.uuid4().hex[:8]}")})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["bench: 0/1 cases done*waiting: mock*", "suites/http.yaml::greet?m-run1? PASSED*"])


def test_quiet_runs_show_no_progress(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    pytester.makefile(".yaml", **{"suites/http": limited_suite(mock_server, f"wait-{uuid.uuid4().hex[:8]}")})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if line.startswith("bench: ")]
