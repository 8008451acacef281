"""The checks of an agent's final state (a ``completion`` scorer's ``checks:``), run on the workspace.

They run before the workspace is removed; their commands run in the case's sandbox, without network.
The C scorer (``scoring/agent/task_completion.py``) reads their results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import ToolFailure
from bench_plugin.core.json_text import json_equal, load_json
from bench_plugin.core.transcript import CheckResult
from bench_plugin.engines.agent.program import run_argv, split_command
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.workspace import confine
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

TEXT_CONDITIONS = ("contains", "not_contains", "matches", "json_equals", "ignore_case")


CONDITIONS: Mapping[str, tuple[str, ...]] = {
    "file": ("exists", "min_size", *TEXT_CONDITIONS),
    "answer": TEXT_CONDITIONS,
    "command": ("exit_code", "timeout", "stdout_contains", "stdout_not_contains", "stdout_matches",
                "stderr_contains", "json_equals", "ignore_case"),
}


DEFAULT_COMMAND_TIMEOUT_S = 60.0


async def verify_completion(case: CaseSpec, root: Path, answer: str,
                            sandbox: Sandbox | None = None) -> dict[str, tuple[CheckResult, ...]]:
    """Run the checks of every ``completion`` scorer of the case on the final workspace and answer.

    Command checks run in ``sandbox`` (None: the default one).

    Raises:
        CaseError: a template in a check does not render.
    """
    results: dict[str, tuple[CheckResult, ...]] = {}
    for spec in case.scorers:
        if spec.type == "completion":
            checks = _render(spec.options.get("checks", []), case, spec)
            results[spec.name] = tuple([await run_check(check, root, answer, sandbox) for check in checks])
    return results


def has_command_checks(case: CaseSpec) -> bool:
    """Whether a ``completion`` scorer of the case runs a program (then the case needs a sandbox)."""
    return any(spec.type == "completion" and isinstance(check, Mapping) and "command" in check
               for spec in case.scorers for check in spec.options.get("checks", []) or [])


def _render(value: Any, case: CaseSpec, spec: ScorerSpec) -> Any:
    if isinstance(value, list):
        return [_render(item, case, spec) for item in value]
    if isinstance(value, Mapping):
        return {key: _render(item, case, spec) for key, item in value.items()}
    if isinstance(value, str) and case.templates is not None and ("{{" in value or "{%" in value):
        # the scorer's vars: too, as its other templates see them (and as CompletionScorer.check_case allows)
        variables = {**case.variables, **case.scorer_vars.get(spec.name, {})}
        return case.templates.evaluate(value, variables, key=f"{spec.key}.checks", line=spec.line)
    return value


async def run_check(check: Mapping[str, Any], root: Path, answer: str, sandbox: Sandbox | None = None) -> CheckResult:
    """One assertion: passed, with the first reason it failed or what was found (a command runs in ``sandbox``)."""
    if "file" in check:
        name = check.get("name") or f"file {check['file']}"
        passed, detail = _check_file(check, root)
    elif "answer" in check:
        name = check.get("name") or "answer"
        passed, detail = _check_text(answer, check, "the answer", extract=True)
    else:
        name = check.get("name") or f"command {check['command']!r}"
        passed, detail = await _check_command(check, root, sandbox)
    return CheckResult(str(name), passed, detail)


def _check_file(check: Mapping[str, Any], root: Path) -> tuple[bool, str]:
    try:
        path = confine(root, str(check["file"]))
    except ToolFailure as exc:
        return False, str(exc)
    if check.get("exists", True) is False:
        return (not path.exists()), ("absent, as expected" if not path.exists() else "exists, but should not")
    if not path.is_file():
        return False, "missing" if not path.exists() else "is a folder, not a file"
    size = path.stat().st_size
    if size < check.get("min_size", 0):
        return False, f"{size} bytes, fewer than {check['min_size']}"
    passed, detail = _check_text(path.read_bytes().decode("utf-8", "replace"), check, "the file", extract=False)
    return passed, (detail if not passed else f"exists ({size} bytes){'; ' + detail if detail else ''}")


def _strings(value: Any) -> list[str]:
    return [str(item) for item in (value if isinstance(value, list) else [value])]


def _check_text(text: str, check: Mapping[str, Any], what: str, *, extract: bool) -> tuple[bool, str]:
    """The text conditions (``contains``, ``not_contains``, ``matches``, ``json_equals``), first failure wins."""
    folded = text.lower() if check.get("ignore_case") else text
    found: list[str] = []
    for needle in _strings(check.get("contains", [])):
        if (needle.lower() if check.get("ignore_case") else needle) not in folded:
            return False, f"{what} does not contain {needle!r}"
        found.append(f"contains {needle!r}")
    for needle in _strings(check.get("not_contains", [])):
        if (needle.lower() if check.get("ignore_case") else needle) in folded:
            return False, f"{what} contains {needle!r}"
    pattern = check.get("matches")
    if pattern is not None:
        flags = re.MULTILINE | re.DOTALL | (re.IGNORECASE if check.get("ignore_case") else 0)
        if re.search(str(pattern), text, flags) is None:
            return False, f"{what} does not match /{pattern}/"
        found.append(f"matches /{pattern}/")
    if "json_equals" in check:
        try:
            value = load_json(text, extract=extract)
        except ValueError as exc:
            return False, f"{what}: {exc}"
        if not json_equal(value, check["json_equals"]):
            shown = json.dumps(value, ensure_ascii=False)
            expected = json.dumps(check["json_equals"], ensure_ascii=False)
            return False, f"{what} holds {shown[:200]}, expected {expected[:200]}"
        found.append("JSON equal")
    return True, ", ".join(found)


async def _check_command(check: Mapping[str, Any], root: Path, sandbox: Sandbox | None) -> tuple[bool, str]:
    try:
        argv = split_command(check["command"])
        result = await run_argv(argv, root, float(check.get("timeout", DEFAULT_COMMAND_TIMEOUT_S)), sandbox)
    except ToolFailure as exc:
        return False, str(exc)
    if result.timed_out:
        return False, f"timed out after {check.get('timeout', DEFAULT_COMMAND_TIMEOUT_S):g} s"
    if result.note is not None:
        return False, f"exit code {result.exit_code}: {result.note}"
    expected = check.get("exit_code", 0)
    last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or [""]
    if expected is not None and result.exit_code != expected:
        return False, f"exit code {result.exit_code}, expected {expected}" + (f": {last[0][:200]}" if last[0] else "")
    for needle in _strings(check.get("stderr_contains", [])):
        if needle not in result.stderr:
            return False, f"stderr does not contain {needle!r}"
    passed, detail = _check_text(result.stdout, {**check, "contains": check.get("stdout_contains", []),
                                                 "not_contains": check.get("stdout_not_contains", []),
                                                 "matches": check.get("stdout_matches")}, "stdout", extract=False)
    return passed, (f"exit code {result.exit_code}" + (f"; {detail}" if detail else "")) if passed else detail
