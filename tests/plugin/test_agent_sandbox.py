"""Agent commands run in a sandbox, end to end: the attacks of issue 11 (item 1) through a whole pytest run.

A scripted agent runs each attack with the ``command`` tool; the records, reports and terminal say what
happened. Where bubblewrap does not work here, the tests that need it skip with the reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.engines.agent.sandbox import choose
from bench_plugin.suite.agent.spec import SandboxLimits


@pytest.fixture
def bubblewrap() -> None:
    found, reason = asyncio.run(choose.bubblewrap(SandboxLimits()))
    if found is None:
        pytest.skip(f"bubblewrap does not work here: {reason}")


def attack_suite(commands: list[str], *, allow: tuple[str, ...] = ("python3",), timeout: float = 10,
                 tool: str = "", task: str = "", top: str = "") -> str:
    """A suite whose scripted agent runs ``commands`` one per model call, then answers ``done``."""
    rules = "\n".join(
        f"      - {{turn: {n}, tool_calls: [{{name: run_command, arguments: {{command: {json.dumps(command)}}}}}]}}"
        for n, command in enumerate(commands, 1)
    )
    return f"""{top}
models:
  agent:
    provider: scripted
    script:
{rules}
      - {{reply: done}}
tasks:
  - id: attack
    prompt: Try it.
    tools: [{{type: command, allow: [{", ".join(allow)}], timeout: {timeout}{tool}}}]
    budget: {{max_seconds: 120}}
{task}
    scorers:
      - {{name: C, type: completion, checks: [{{answer: true, contains: done}}]}}
"""


def run_suite(pytester: pytest.Pytester, suite: str, *args: str, subprocess: bool = False
              ) -> tuple[pytest.RunResult, dict[str, Any], Path]:
    """Run the suite; (the run, the one case's record, the output folder)."""
    pytester.makefile(".yaml", **{"suites/attack": suite})
    out = pytester.path / "out"
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("suites", "-p", "no:cacheprovider", "--bench-output", str(out), *args)
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 1, result.stdout.str()
    return result, json.loads(lines[0]), out


def outputs(record: dict[str, Any]) -> list[str]:
    return [call["output"] for call in record["agent"]["tool_calls"]]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_api_key_cannot_be_read_through_proc(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                             backend: str) -> None:
    """The attack that read pytest's key from /proc/<parent>/environ; ``none`` shows that it works without."""
    if backend == "bubblewrap":
        found, reason = asyncio.run(choose.bubblewrap(SandboxLimits()))
        if found is None:
            pytest.skip(f"bubblewrap does not work here: {reason}")
    marker = f"sk-bench-marker-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", marker)  # in the environment the inner pytest starts with
    steal = ("python3 -c \"import os, glob\nfor path in ['/proc/%d/environ' % os.getppid()] + glob.glob("
             "'/proc/*/environ'):\n    try: print(path, open(path).read())\n    except OSError as e: print(path, e)\"")
    show = "python3 -c \"import os; print(dict(os.environ))\""
    result, record, out = run_suite(pytester, attack_suite([steal, show]), "--bench-sandbox", backend, subprocess=True)
    leaked = [path for path in out.rglob("*") if path.is_file() and marker in path.read_text(errors="replace")]
    if backend == "none":  # the control: without a sandbox the same attack gets the key, and the run says so
        assert any(marker in output for output in outputs(record)) and leaked
        assert record["agent"]["sandbox"] == "none"
        return
    assert not any(marker in output for output in outputs(record))
    assert leaked == [] and marker not in result.stdout.str()
    assert "sandbox" not in record["agent"]


@pytest.mark.usefixtures("bubblewrap")
def test_writes_outside_the_workspace_fail(pytester: pytest.Pytester) -> None:
    token = uuid.uuid4().hex
    home = Path(pwd.getpwuid(os.geteuid()).pw_dir)  # the real one: pytester points HOME at its folder
    targets = [f"/tmp/../bench-outside-{token}", str(pytester.path / f"suite-folder-{token}"),
               str(Path(__file__).resolve().parents[2] / f"repo-{token}"), str(home / f"home-{token}")]
    commands = [f"python3 -c \"open('{target}', 'w').write('x')\"" for target in targets]
    _, record, _ = run_suite(pytester, attack_suite([*commands, "python3 -c \"open('ok.txt', 'w').write('x')\""]))
    calls = record["agent"]["tool_calls"]
    assert [call["ok"] for call in calls] == [False] * len(targets) + [True]
    refusals = ("Read-only file system", "Permission denied", "No such file or directory")  # the last: hidden
    assert all(any(refusal in call["error"] for refusal in refusals) for call in calls[:-1])
    assert not any(Path(target).exists() for target in targets)
    assert [entry["path"] for entry in record["agent"]["files"]] == ["ok.txt"]


@pytest.mark.slow
@pytest.mark.usefixtures("bubblewrap")
def test_detached_children_die_at_the_timeout(pytester: pytest.Pytester) -> None:
    """A child that calls setsid kept the pipe open: a 2 s timeout took 39 s, and it outlived pytest."""
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"
    spawn = (f"python3 -c \"import subprocess, time; subprocess.Popen(['setsid', 'sleep', '{marker}']); "
             "print('detached', flush=True); time.sleep(100)\"")
    started = time.monotonic()
    _, record, _ = run_suite(pytester, attack_suite([spawn], timeout=2))
    assert time.monotonic() - started < 30
    call = record["agent"]["tool_calls"][0]
    assert call["error"].startswith("'python3' timed out after 2 s and was stopped") and "detached" in call["output"]
    assert call["duration_s"] < 10
    time.sleep(0.2)
    assert [p for p in Path("/proc").glob("[0-9]*/cmdline") if f"sleep\0{marker}".encode() in _read(p)] == []


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


@pytest.mark.usefixtures("bubblewrap")
def test_output_flood_is_cut_with_a_note(pytester: pytest.Pytester) -> None:
    flood = "python3 -c \"import sys\nwhile True: sys.stdout.write('x' * 1000000)\""
    _, record, _ = run_suite(pytester, attack_suite([flood], task="    sandbox: {max_output_kb: 256}"))
    call = record["agent"]["tool_calls"][0]
    assert not call["ok"] and call["error"].endswith("output cut at 256 KB: the program wrote more and was stopped")
    assert call["output"].endswith("note: output cut at 256 KB: the program wrote more and was stopped\n")
    assert len(call["output"]) < 20_000 and record["status"] == "passed"  # the run went on


@pytest.mark.usefixtures("bubblewrap")
def test_filling_the_disk_stops_at_the_file_size_limit(pytester: pytest.Pytester) -> None:
    fill = "python3 -c \"open('big.bin', 'wb').write(b'x' * 5000000)\""
    _, record, _ = run_suite(pytester, attack_suite([fill, "python3 -c \"print('next call works')\""],
                                                    top="sandbox: {max_file_mb: 2}"))
    first, second = record["agent"]["tool_calls"]
    assert not first["ok"] and first["error"] == "exit code 1: OSError: [Errno 27] File too large"
    assert second["ok"] and "next call works" in second["output"] and record["status"] == "passed"
    assert next(e for e in record["agent"]["files"] if e["path"] == "big.bin")["size"] <= 2 * 1024 * 1024


@pytest.mark.usefixtures("bubblewrap")
def test_network_only_when_the_tool_allows_it(pytester: pytest.Pytester) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        connect = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), "
                   "timeout=3); print('connected')\"")
        _, closed, _ = run_suite(pytester, attack_suite([connect]))
        assert not closed["agent"]["tool_calls"][0]["ok"]
        assert "connected" not in closed["agent"]["tool_calls"][0]["output"]
        _, opened, _ = run_suite(pytester, attack_suite([connect], tool=", network: true"))
        assert opened["agent"]["tool_calls"][0]["ok"] and "connected" in opened["agent"]["tool_calls"][0]["output"]


@pytest.mark.parametrize("how", ["option", "suite"])
def test_running_without_a_sandbox_is_flagged(pytester: pytest.Pytester, how: str) -> None:
    """Asked for by the user, or by a suite the user consented to (ini ``bench_allow_no_sandbox``).

    A suite's ``sandbox: none`` without consent stops collection: tests/plugin/test_sandbox_consent.py.
    """
    args = ("--bench-sandbox", "none") if how == "option" else ("-o", "bench_allow_no_sandbox=true")
    suite = attack_suite(["python3 -c \"print(1)\""], top="sandbox: none" if how == "suite" else "")
    result, record, out = run_suite(pytester, suite, *args)
    assert record["agent"]["sandbox"] == "none" and record["status"] == "passed"
    result.stdout.fnmatch_lines(["*WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in 1 case(s): "
                                 "suites/attack.yaml::attack[[]agent-run1[]]*"])
    assert (out / "report.md").read_text().startswith(
        "# Benchmark report\n\n> **WARNING: agent commands ran WITHOUT a sandbox** (`sandbox: none`) in 1 case")
    assert json.loads((out / "summary.json").read_text())["suites"][0]["sandbox"] == {
        "none": ["suites/attack.yaml::attack[agent-run1]"]}
    if how == "option":
        result.stdout.fnmatch_lines(["*agent commands run WITHOUT a sandbox (--bench-sandbox none)*"])


@pytest.mark.usefixtures("bubblewrap")
def test_the_option_wins_over_the_suite(pytester: pytest.Pytester) -> None:
    suite = attack_suite(["python3 -c \"print(1)\""], top="sandbox: none")
    result, record, _ = run_suite(pytester, suite, "--bench-sandbox", "bubblewrap")
    assert "sandbox" not in record["agent"] and "WITHOUT a sandbox" not in result.stdout.str()


def test_no_working_sandbox_skips_the_case_with_the_fix(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-running cannot help: the case is skipped with why and the fix, named at the end, and the run exits 0."""
    empty = pytester.mkdir("empty-path")
    monkeypatch.setenv("PATH", str(empty))  # no bwrap, no container engine
    monkeypatch.setattr(choose, "_ENGINE_PROBE", [])
    monkeypatch.setattr(choose, "_LANDLOCK_PROBE", ["user namespaces are off here (test)"])
    result, record, out = run_suite(pytester, attack_suite(["python3 -c \"print(1)\""]))
    result.assert_outcomes(skipped=1)
    assert result.ret == 0
    assert record["status"] == "skipped" and record["error"]["kind"] == "sandbox"
    assert record["usage"]["calls"] == 0  # no model was called
    assert "re-run" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*agent cases SKIPPED: no sandbox works on this machine (1): suites/attack.yaml::*",
                                 "*agent commands run in a sandbox, and it does not work here: "
                                 "bubblewrap: bwrap is not installed; landlock: user namespaces are off here (test)"
                                 "; container: docker is not installed*",
                                 "*hint: install bubblewrap (apt-get install bubblewrap*--bench-sandbox none*"])
    suite = json.loads((out / "summary.json").read_text())["suites"][0]
    assert suite["sandbox"]["skipped"] == [record["nodeid"]] and "bwrap is not installed" in suite["sandbox"]["reason"]
    report = (out / "report.md").read_text()
    assert "**1 case SKIPPED: no sandbox works on this machine** (nothing was run)" in report
    assert "install bubblewrap" in report
    for page in ("dashboard.html", "report.html"):
        text = (out / page).read_text()
        assert "1 case SKIPPED: no sandbox works on this machine</strong>" in text and "install bubblewrap" in text


def test_bundled_agent_suite_without_any_sandbox_skips_only_the_cases_that_run_programs(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's first command on a machine that cannot confine: exit 0, the others pass, the skips say why."""
    shutil.copytree(Path(__file__).resolve().parents[2] / "suites" / "agent_tasks", pytester.path / "agent_tasks")
    monkeypatch.setenv("PATH", str(pytester.mkdir("empty-path")))  # no bwrap, docker nor podman
    monkeypatch.setattr(choose, "_ENGINE_PROBE", [])
    monkeypatch.setattr(choose, "_LANDLOCK_PROBE", ["user namespaces are off here (test)"])
    out = pytester.path / "out"
    result = pytester.runpytest("agent_tasks", "-p", "no:cacheprovider", "--bench-output", str(out))
    assert result.ret == 0, result.stdout.str()
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    skipped = [record["nodeid"] for record in records if record["status"] == "skipped"]
    assert skipped and all(record["error"]["kind"] == "sandbox" for record in records if record["status"] == "skipped")
    assert {record["status"] for record in records} == {"passed", "skipped"}
    result.assert_outcomes(passed=len(records) - len(skipped), skipped=len(skipped))
    result.stdout.fnmatch_lines([f"*agent cases SKIPPED: no sandbox works on this machine ({len(skipped)}): *"])


def test_sandbox_key_is_checked_by_the_schema(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/attack": attack_suite(["ls"], allow=("ls",), top="sandbox: chroot")})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*attack.yaml:1: sandbox: expected one of auto, bubblewrap, landlock, seatbelt, "
                                 "container, none, got 'chroot'"])
    assert result.ret != 0
