"""Progress while cases wait: done / total, started, calls in flight, errors, and who waits, why, how long."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from bench_plugin.calls.run_status import RunStatus
from bench_plugin.mock.server import MockServer
from bench_plugin.plugin import progress


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
    assert line == ("bench: 3/10 cases done, 3 started, 0 calls in flight, 1 error, 1 not run; waiting: local (1 call) "
                    "2 s: rpm limit 60/min; openai (2 calls) 30 s: HTTP 429, server asked 30 s")
    assert status.waits == {}
    with status.calling():
        assert status.line(total=None).startswith("bench: 3 cases done, 3 started, 1 call in flight, 1 error")


def test_status_line_counts_the_cases_waiting_for_a_place_to_run_a_command():
    status = RunStatus()
    for _ in range(3):
        status.case_started()
    with status.waiting_for_place(), status.waiting_for_place(), status.waiting("local", "rpm limit 60/min", 2):
        line = status.line(total=4)
    # still started, as a case whose call waits is
    assert line == ("bench: 0/4 cases done, 3 started, 0 calls in flight, 0 errors, 2 waiting for a place to run a "
                    "command; waiting: local (1 call) 2 s: rpm limit 60/min")
    assert status.line(total=4) == "bench: 0/4 cases done, 3 started, 0 calls in flight, 0 errors"


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
    assert re.fullmatch(r"bench: 0/1 cases done, 1 started, 0 calls in flight, 0 errors; waiting: mock/wait-\w+ "
                        r"\(1 call\) [0-3] s: "
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


def command_suite(server: MockServer, model_id: str) -> str:
    """Two agent cases, each running one 2 s command; the first call of the two gets a 429 asking for 1 s."""
    server.add_rule({"model": model_id, "status": 429, "retry_after": "1", "times": 1})
    server.add_rule({"model": model_id, "tool_result": ".", "reply": "done"})
    server.add_rule({"model": model_id, "tool_calls": [
        {"name": "run_command", "arguments": {"command": 'python3 -c "import time; time.sleep(2)"'}}]})
    return f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: 10}}
models:
  agent: {{provider: mock, id: {model_id}}}
matrix:
  n: [1, 2]
tasks:
  - id: 'job-{{{{ n }}}}'
    prompt: Run it.
    tools: [{{type: command, allow: [python3], timeout: 30}}]
    scorers:
      - {{name: C, type: completion, checks: [{{answer: true, contains: done}}]}}
"""


def test_a_case_waiting_for_a_place_to_run_a_command_is_shown_waiting(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a case was shown only as in flight.

    The 429 has the first case give its place up, so the second starts; with one place, whichever runs its command
    second waits for the place while the other's command runs.
    """
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.2)  # a line at every tick of the wait, not one in 5 s
    pytester.makefile(".yaml", **{"suites/agent": command_suite(mock_server, f"place-{uuid.uuid4().hex[:8]}")})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-sandbox", "none",
                                "--bench-concurrency", "1", "--bench-cache", "off")
    result.assert_outcomes(passed=2)
    progress_lines = [line for line in result.stdout.lines if line.startswith("bench: ")]
    waiting = [line for line in progress_lines if "waiting for a place" in line]
    assert waiting, progress_lines
    assert all(re.match(r"bench: 0/2 cases done, 2 started, \d calls? in flight, 0 errors, 1 waiting for a place "
                        r"to run a command", line) for line in waiting), waiting


def test_cases_started_and_calls_in_flight_are_counted_apart(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line said "0/4 cases done, 4 in flight" while the provider let one call go at a time."""
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.2)  # a line at every tick of the wait, not one in 5 s
    monkeypatch.setattr(progress, "DRAW_AFTER_S", 0.2)  # and from the first ticks: each answer takes 0.8 s
    model_id = f"slow-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "delay": 0.8})
    pytester.makefile(".yaml", **{"suites/slow": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', concurrency: 1}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: 'greet-{{{{ n }}}}', matrix: {{n: [1, 2, 3, 4]}}, prompt: 'Say hello to Ada'}}
"""})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-cache", "off")
    result.assert_outcomes(passed=4)
    progress_lines = [line for line in result.stdout.lines if line.startswith("bench: ")]
    assert progress_lines
    for line in progress_lines:
        found = re.match(r"bench: \d/4 cases done, (\d) started, ([01]) calls? in flight, 0 errors", line)
        assert found is not None, line
