"""A suite cannot turn the sandbox off by itself, and a run without isolation is flagged in every output.

``sandbox: none`` in a suite needs the user's consent (``--bench-sandbox none`` or the ini option
``bench_allow_no_sandbox``); otherwise the file does not load, at the key that asks. With consent, the
terminal, report.md, summary.json, dashboard.html and report.html all say which cases ran unconfined.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NODEID = "suites/attack.yaml::attack[agent-run1]"


def agent_suite(*, top: str = "", task: str = "") -> str:
    """A scripted agent that runs one program (with ``python3``), then answers ``done``."""
    return f"""{top}
models:
  agent:
    provider: scripted
    script:
      - {{turn: 1, tool_calls: [{{name: run_command, arguments: {{command: "python3 -c \\"print(42)\\""}}}}]}}
      - {{reply: done}}
tasks:
  - id: attack
    prompt: Run it.
    tools: [{{type: command, allow: [python3], timeout: 20}}]
{task}
    scorers:
      - {{name: C, type: completion, checks: [{{answer: true, contains: done}}]}}
"""


def run(pytester: pytest.Pytester, suite: str, *args: str) -> tuple[pytest.RunResult, Path]:
    pytester.makefile(".yaml", **{"suites/attack": suite})
    out = pytester.path / "out"
    return pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-output", str(out), *args), out


@pytest.mark.parametrize(("top", "task", "where"), [
    ("sandbox: none", "", "attack.yaml:1: sandbox: "),
    ("sandbox: {backend: none, max_processes: 8}", "", "attack.yaml:1: sandbox.backend: "),
    ("", "    sandbox: none", "attack.yaml:11: tasks[0].sandbox: "),
    ("sandbox: bubblewrap", "    sandbox:\n      max_file_mb: 5\n      backend: none",
     "attack.yaml:14: tasks[0].sandbox.backend: "),
])
def test_a_suite_cannot_turn_the_sandbox_off_by_itself(pytester: pytest.Pytester, top: str, task: str,
                                                        where: str) -> None:
    result, out = run(pytester, agent_suite(top=top, task=task))
    assert result.ret != 0
    result.stdout.fnmatch_lines([
        f"*{where.replace('[', '[[]')}the suite asks to run agent commands without a sandbox (none), and a suite "
        "cannot turn isolation off by itself*",
        "*|*none*",  # the line, quoted
        "*hint: if you trust this suite*--bench-sandbox none*bench_allow_no_sandbox = true*",
        "*Interrupted: 1 error during collection*",
    ])
    assert "Traceback" not in result.stdout.str()
    results = out / "results.jsonl"
    assert not results.exists() or results.read_text() == ""  # nothing ran


@pytest.mark.parametrize("consent", ["ini", "-o", "--bench-sandbox none"])
def test_with_consent_it_runs_and_every_output_flags_it(pytester: pytest.Pytester, consent: str) -> None:
    args: tuple[str, ...] = ()
    if consent == "ini":
        pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nbench_allow_no_sandbox = true\n")
    elif consent == "-o":
        args = ("-o", "bench_allow_no_sandbox=true")
    else:
        args = ("--bench-sandbox", "none")
    result, out = run(pytester, agent_suite(top="sandbox: none"), *args)
    result.assert_outcomes(passed=1)
    record = json.loads((out / "results.jsonl").read_text())
    assert record["agent"]["sandbox"] == "none" and "stdout:\n42\n" in record["agent"]["tool_calls"][0]["output"]
    result.stdout.fnmatch_lines([f"*WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in 1 case(s): "
                                 f"{NODEID.replace('[', '[[]')}*"])
    report = (out / "report.md").read_text()
    assert report.startswith("# Benchmark report\n\n> **WARNING: agent commands ran WITHOUT a sandbox** "
                             "(`sandbox: none`) in 1 case: they could read this machine's files and pytest's "
                             "environment (API keys included)")
    assert f"> - `suites/attack.yaml` (1 case): `{NODEID}`" in report
    assert "## attack (`suites/attack.yaml`)\n\n> **WARNING: agent commands ran WITHOUT a sandbox**" in report
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suites"][0]["sandbox"] == {"none": [NODEID]}
    for page in ("dashboard.html", "report.html"):
        html = (out / page).read_text()
        banner = re.search(r'<div class="bench-unsandboxed" role="alert"[^>]*>(.*?)</div>', html)
        assert banner is not None, page
        assert "WARNING: agent commands ran WITHOUT a sandbox" in banner.group(1) and NODEID in banner.group(1)


def test_a_task_or_the_command_line_that_picks_a_sandbox_needs_no_consent(pytester: pytest.Pytester) -> None:
    overridden = agent_suite(top="sandbox: none", task="    sandbox: {backend: bubblewrap}")
    result, _ = run(pytester, overridden, "--collect-only")
    assert result.ret == 0 and "without a sandbox" not in result.stdout.str()
    result, _ = run(pytester, agent_suite(top="sandbox: none"), "--collect-only", "--bench-sandbox", "auto")
    assert result.ret == 0 and "without a sandbox" not in result.stdout.str()


def test_a_run_in_which_nothing_ran_unconfined_has_no_flag(pytester: pytest.Pytester) -> None:
    suite = "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi, scorers: [{type: contains, value: hi}]}\n"
    result, out = run(pytester, suite)
    result.assert_outcomes(passed=1)
    assert "WITHOUT a sandbox" not in result.stdout.str()
    assert "WITHOUT a sandbox" not in (out / "report.md").read_text()
    assert "sandbox" not in json.loads((out / "summary.json").read_text())["suites"][0]
    for page in ("dashboard.html", "report.html"):
        assert "bench-unsandboxed" not in (out / page).read_text()


@pytest.mark.slow
def test_under_xdist_the_flags_are_written_by_the_controller(pytester: pytest.Pytester) -> None:
    result, out = run(pytester, agent_suite(top="sandbox: none"), "-n", "2", "-o", "bench_allow_no_sandbox=true")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in 1 case(s)*"])
    assert json.loads((out / "summary.json").read_text())["suites"][0]["sandbox"] == {"none": [NODEID]}
    assert (out / "report.md").read_text().startswith("# Benchmark report\n\n> **WARNING: agent commands ran WITHOUT")
    for page in ("dashboard.html", "report.html"):
        assert 'class="bench-unsandboxed"' in (out / page).read_text(), page
