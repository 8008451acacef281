"""``runs_tests`` end to end: the answer's code runs against the task's tests in the sandbox, and is scored.

Passing, a share of the tests, failing, an endless loop stopped at the timeout, a crash and an answer
without code are the model's results (scores with reasons); a machine without a sandbox skips the case
before the model is called; a test file missing from the suite's folder fails the case at collection.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import SandboxError
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.suite.agent.spec import SandboxSpec

CHECKS = '''\
from solution import add


def test_small():
    assert add(1, 2) == 3


def test_zero():
    assert add(0, 0) == 0


def test_negative():
    assert add(-1, -2) == -3
'''


def reply(code: str) -> str:
    """A scripted reply holding ``code`` in a python block, as YAML text."""
    return json.dumps(f"Here it is:\n```python\n{code}\n```\nThat should do.")


GOOD = reply("def add(a, b):\n    return a + b")
REPLIES = {
    "good": GOOD,
    "half": reply("def add(a, b):\n    return abs(a) + abs(b)"),
    "wrong": reply("def add(a, b):\n    return a * b"),
    "crash": reply("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
    "prose": json.dumps("I would return a plus b."),
    "loop": reply("def add(a, b):\n    while True:\n        pass"),
}
MODELS = "".join(f"  {name}: {{provider: scripted, script: [{{reply: {text}}}]}}\n" for name, text in REPLIES.items())
SUITE = f"""\
models:
{MODELS}tasks:
  - id: add
    prompt: Write add(a, b).
    models: [good, half, wrong, crash, prose]
    scorers:
      - {{name: T, type: runs_tests, tests: [checks/check_add.py], timeout: 120}}
  - id: spin
    prompt: Write add(a, b).
    models: [loop]
    scorers:
      - {{name: T, type: runs_tests, test_files: {{check_add.py: {json.dumps(CHECKS)}}}, timeout: 3}}
"""


@pytest.fixture
def sandbox_works() -> None:
    try:
        asyncio.run(open_sandbox(SandboxSpec()))
    except SandboxError as exc:
        pytest.skip(f"no sandbox works here: {exc}")


def write_suite(pytester: pytest.Pytester, suite: str = SUITE) -> None:
    pytester.makefile(".yaml", **{"suites/code": suite})
    checks = pytester.path / "suites" / "checks"
    checks.mkdir(exist_ok=True)
    (checks / "check_add.py").write_text(CHECKS)


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    out = pytester.path / "out"
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-output", str(out), *args)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return result, {record["model"]: record for record in records}


def component(record: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = record["scores"]["components"][0]
    return found


@pytest.mark.slow
def test_the_answers_code_is_scored_by_the_tests_it_passes(pytester: pytest.Pytester, sandbox_works: None) -> None:
    write_suite(pytester)
    result, records = run(pytester)
    result.assert_outcomes(passed=1, failed=5)
    good, half, wrong = (component(records[name]) for name in ("good", "half", "wrong"))
    assert (good["value"], good["passed"], good["tests"]["total"]) == (1.0, True, 3)
    assert good["detail"].startswith("3 of 3 tests passed (exit code 0)")
    assert good["sandbox"] in ("bubblewrap", "landlock", "seatbelt", "container")
    assert (round(half["value"], 4), half["passed"]) == (0.6667, False)
    assert half["detail"].startswith("2 of 3 tests passed (exit code 1)")
    assert "assert 3 == -3" in half["detail"]  # the test output is the evidence
    assert (wrong["value"], wrong["passed"]) == (1 / 3, False)  # add(0, 0) == 0 holds for a * b too
    crash = component(records["crash"])
    assert (crash["value"], crash["passed"], crash["tests"]) == (0.0, False, None)
    assert "killed by SIGKILL: the code crashed" in crash["detail"]
    prose = component(records["prose"])
    assert (prose["value"], prose["passed"]) == (0.0, False)
    assert prose["detail"] == "no code to run: the answer has no fenced code block (```)"
    loop = component(records["loop"])
    assert (loop["value"], loop["passed"], loop["exit_code"]) == (0.0, False, None)
    assert loop["detail"].startswith("timed out after 3 s: the code ran too long")
    assert all(record["status"] == "failed" for name, record in records.items() if name != "good")
    result.stdout.fnmatch_lines(["*code::add?half-run1?*",
                                 "score 0.6667; failed: T (2 of 3 tests passed (exit code 1)*"])


@pytest.mark.slow
def test_partial_credit_off_scores_one_or_zero(pytester: pytest.Pytester, sandbox_works: None) -> None:
    write_suite(pytester, SUITE.replace("timeout: 120}", "timeout: 120, partial_credit: false}"))
    _, records = run(pytester, "-k", "add and (good or half)")
    assert (component(records["good"])["value"], component(records["half"])["value"]) == (1.0, 0.0)
    assert component(records["half"])["tests"]["passed"] == 2  # the counts stay in the record


@pytest.mark.slow
def test_a_threshold_decides_instead_of_every_test(pytester: pytest.Pytester, sandbox_works: None) -> None:
    write_suite(pytester, SUITE.replace("timeout: 120}", "timeout: 120, threshold: 0.6}"))
    result, records = run(pytester, "-k", "add and (good or half or wrong)")
    result.assert_outcomes(passed=2, failed=1)  # half: 2 of 3 reaches 0.6; wrong: 1 of 3 does not
    assert records["half"]["status"] == "passed" and component(records["half"])["passed"] is True


def test_a_missing_test_file_fails_the_case_at_collection(pytester: pytest.Pytester) -> None:
    write_suite(pytester, SUITE.replace("[checks/check_add.py]", "['checks/check_{{ \"sub\" }}.py']"))
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "-k", "add and good", "--bench-output",
                                str(pytester.path / "out"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*code.yaml:13: tasks[[]0].scorers[[]0].tests[[]0]: runs_tests: 'checks/check_sub.py' does not exist under "
        "the suite's folder*",
        "*hint: tests: names files or folders relative to the suite file*",
    ])
    record = json.loads((pytester.path / "out" / "results.jsonl").read_text())
    assert record["status"] == "invalid" and record["usage"]["calls"] == 0  # no model was called


def test_bench_validate_names_a_missing_test_file(pytester: pytest.Pytester) -> None:
    write_suite(pytester, SUITE.replace("checks/check_add.py", "../outside/check_add.py"))
    (pytester.path / "outside").mkdir()
    (pytester.path / "outside" / "check_add.py").write_text(CHECKS)
    result = pytester.run("bench", "validate", "suites")
    assert result.ret == 1
    result.stderr.fnmatch_lines(["*tests[[]0]*../outside/check_add.py is outside the suite's folder*"])


@pytest.mark.parametrize(("option", "message"), [
    ("test_files: {}", "runs_tests: runs_tests needs tests: (files in the suite's folder) or test_files:"),
    ("tests: [a.py], command: 42", "command: expected a list or a string, got 42"),
    ("tests: [a.py], command: 'a \"b'", "runs_tests: command 'a \"b' cannot be split: No closing quotation"),
    ("tests: [a.py], timeout: 0", "timeout: expected a number > 0, got 0"),
    ("tests: [a.py], file: ../x.py", "file must be a file name inside the workspace (relative, no '..')"),
    ("tests: [a.py], code: middle_block", "code: expected one of first_block, last_block, answer"),
])
def test_bad_options_fail_at_the_scorers_line(pytester: pytest.Pytester, option: str, message: str) -> None:
    suite = f"models:\n  m: {{provider: echo}}\ntasks:\n  - id: t\n    prompt: hi\n    scorers:\n" \
            f"      - {{type: runs_tests, {option}}}\n"
    pytester.makefile(".yaml", **{"suites/bad": suite})
    (pytester.path / "suites" / "a.py").write_text("")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    assert result.ret != 0
    assert message in result.stdout.str() and "bad.yaml:7" in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_without_a_sandbox_the_case_is_skipped_before_the_model_is_called(pytester: pytest.Pytester) -> None:
    write_suite(pytester)
    # seatbelt is macOS's: elsewhere the sandbox asked for does not work, as on a machine without any
    result, records = run(pytester, "-k", "add and good", "--bench-sandbox", "seatbelt")
    result.assert_outcomes(skipped=1)
    record = records["good"]
    assert record["status"] == "skipped" and record["error"]["kind"] == "sandbox"
    assert record["usage"]["calls"] == 0 and record["response"] is None


def test_a_suite_cannot_run_the_answers_code_unconfined_by_itself(pytester: pytest.Pytester) -> None:
    write_suite(pytester, "sandbox: none\n" + SUITE)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--collect-only")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*code.yaml:1: sandbox: the suite asks to run agent commands without a sandbox*"])


@pytest.mark.slow
def test_the_answer_cannot_write_outside_its_workspace(pytester: pytest.Pytester, sandbox_works: None) -> None:
    escaped = pytester.path / "escaped.txt"
    beside = Path(tempfile.gettempdir()) / f"escaped-{uuid.uuid4().hex}.txt"  # beside the workspace
    original = pytester.path / "suites" / "checks" / "check_add.py"
    attack = (f"import pathlib\nfor target in ({str(escaped)!r}, {str(original)!r}, '../{beside.name}'):\n"
              f"    try:\n        pathlib.Path(target).write_text('owned')\n    except OSError as exc:\n"
              f"        print('refused', target, type(exc).__name__)\n"
              f"def add(a, b):\n    return a + b")
    write_suite(pytester, SUITE.replace(GOOD, reply(attack)))
    _, records = run(pytester, "-k", "add and good", "-s")
    good = component(records["good"])
    assert good["value"] == 1.0, good["detail"]
    assert not escaped.exists() and not beside.exists()
    assert original.read_text() == CHECKS


def test_code_run_without_a_sandbox_is_flagged_in_every_report(pytester: pytest.Pytester) -> None:
    write_suite(pytester)
    result, records = run(pytester, "-k", "add and good", "--bench-sandbox", "none")
    assert component(records["good"])["sandbox"] == "none" and component(records["good"])["value"] == 1.0
    result.stdout.fnmatch_lines(["*WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in 1 case(s)*"])
    summary = json.loads((pytester.path / "out" / "summary.json").read_text())
    assert summary["suites"][0]["sandbox"] == {"none": ["suites/code.yaml::add[good-run1]"]}
