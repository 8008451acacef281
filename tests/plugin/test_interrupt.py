"""Ctrl-C or SIGTERM stops a run promptly, keeps every result that had finished and writes the reports."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid

import pytest

from bench_plugin.mock.server import MockServer


def default_sigint() -> None:
    """Ctrl-C as a terminal gives it: a test run started in the background (`cmd &`) ignores SIGINT, and its kids."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_run_keeps_finished_results_and_writes_its_reports(
    pytester: pytest.Pytester, mock_server: MockServer, stop: signal.Signals
) -> None:
    """Ctrl-C, and SIGTERM (a cancelled CI job, ``docker stop``), which used to end the process without reports."""
    model_id = f"slow-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "delay": 0.4})
    pytester.makefile(".yaml", **{"suites/slow": (
        f"providers:\n  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
        f"models:\n  m: {{provider: local, id: {model_id}}}\n"
        "tasks:\n  - {id: t, prompt: hello}\n"
    )})
    results = pytester.path / "bench-results" / "results.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "suites", "--bench-runs", "200", "--bench-concurrency", "2",
         "-p", "no:cacheprovider"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 3):
        time.sleep(0.05)
    process.send_signal(stop)
    interrupted_at = time.monotonic()
    output, _ = process.communicate(timeout=60)
    stopped_after = time.monotonic() - interrupted_at
    # the rest of the run would take 39 s; a loaded machine took 7 s to stop (the output tells where it waited)
    assert stopped_after < 20, f"the run did not stop ({stopped_after:.1f} s):\n{output[-3000:]}"
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    lines = results.read_text().splitlines()
    assert 3 <= len(lines) < 200
    assert all(json.loads(line)["status"] == "passed" for line in lines)
    assert (pytester.path / "bench-results" / "report.md").exists()


def test_a_projects_own_tests_keep_sigterms_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain=(
        "import signal\n\n"
        "def test_default():\n"
        "    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL\n"
    ))
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


STOP_AFTER_TWO = """\
import pytest

reported = []


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "call":
        reported.append(report.nodeid)
        if len(reported) == 2:
            raise KeyboardInterrupt  # Ctrl-C after two cases
"""


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_after_ctrl_c_the_summary_says_what_did_not_run_and_how_to_resume(pytester: pytest.Pytester,
                                                                          named: bool) -> None:
    pytester.makeconftest(STOP_AFTER_TWO)
    pytester.makefile(".yaml", **{"suites/echo": "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"})
    run = ["--bench-run", "nightly"] if named else []
    result = pytester.runpytest_inprocess("suites", "--bench-runs", "6", "--bench-concurrency", "1", "-p",
                                          "no:cacheprovider", *run, no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    if named:
        result.stdout.fnmatch_lines(["interrupted: * of 6 selected cases did not run or finish; the same command "
                                     "resumes run nightly: the cases it finished are reused, not sent again"])
    else:
        result.stdout.fnmatch_lines(["interrupted: 4 of 6 selected cases did not run or finish (a named run, "
                                     "--bench-run NAME, resumes where it stopped)"])


def test_a_session_removes_the_temporary_files_a_killed_one_left(pytester: pytest.Pytester) -> None:
    """A SIGKILL while summary.json was replaced left ``.summary.json.*.tmp``, still there after the resume."""
    output = pytester.path / "bench-results"
    left = [output / ".summary.json.k3j9_x2a.tmp", output / "conversations" / "echo" / ".t[m-run1].md.ab12cd34.tmp"]
    for path in left:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half a file")
    mine = output / ".notes.tmp"  # not a name of ours
    mine.write_text("kept")
    pytester.makefile(".yaml", **{"suites/echo": "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert not any(path.exists() for path in left)
    assert mine.read_text() == "kept"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_no_call_starts_after_ctrl_c_or_sigterm(
    pytester: pytest.Pytester, mock_server: MockServer, stop: signal.Signals
) -> None:
    """16 to 60 calls still started more than 50 ms after the signal, which a resumed run then paid for again.

    The mock server notes when each request arrived (the system's monotonic clock, the same in both processes).
    The end of the session takes a second here (a large run's reports), during which the runner went on; a
    request counts as late from 200 ms after the signal, so a loaded machine's slow wake-ups are not counted.
    """
    pytester.makeconftest(
        "import time\nimport pytest\n\n\n@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_sessionfinish(session):\n    time.sleep(1.0)\n")
    model_id = f"slow-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "delay": 0.3})
    pytester.makefile(".yaml", **{"suites/slow": (
        f"providers:\n  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
        f"models:\n  m: {{provider: local, id: {model_id}}}\n"
        "tasks:\n  - {id: t, prompt: hello}\n"
    )})
    results = pytester.path / "bench-results" / "runs" / "nightly" / "results.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "suites", "--bench-runs", "300", "--bench-concurrency", "16",
         "--bench-run", "nightly", "-p", "no:cacheprovider"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 3):
        time.sleep(0.05)
    process.send_signal(stop)
    signalled = time.monotonic()
    output, _ = process.communicate(timeout=60)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    arrived = [request["at"] for request in mock_server.requests if request["model"] == model_id]
    late = [at - signalled for at in arrived if at > signalled + 0.2]
    assert len(arrived) >= 3 and late == [], f"{len(late)} of {len(arrived)} calls started after the signal"


def test_a_stop_whose_keyboard_interrupt_python_dropped_still_ends_the_session_as_interrupted(
    pytester: pytest.Pytester,
) -> None:
    """The handler sets the stop flag, then raises KeyboardInterrupt, which Python drops inside a weakref callback.

    Every case left then errored with CancelledError and the session ended as failed: the flag alone must end it.
    """
    pytester.makeconftest(
        "from bench_plugin.plugin.session import STATE_KEY\n\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call' and report.nodeid.endswith('-run3]'):\n"
        "        STATE[0].calls.status.stop_calls()  # what the signal handler does, its KeyboardInterrupt lost\n\n\n"
        "STATE = []\n\n\n"
        "def pytest_configure(config):\n"
        "    STATE.append(config.stash[STATE_KEY])\n")
    pytester.makefile(".yaml", **{"suites/s": "models: {m: {provider: echo}}\ntasks: [{id: t, prompt: hi}]\n"})
    result = pytester.runpytest_subprocess("suites", "--bench-runs", "40", "--bench-concurrency", "1",
                                           "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert "CancelledError" not in result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) == 0 and outcomes.get("passed", 0) < 40, outcomes
