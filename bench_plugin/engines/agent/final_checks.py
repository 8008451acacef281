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
from bench_plugin.engines.agent.program import CommandResult, run_argv, split_command
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
    if isinstance(value, str) and _is_template(value):
        return _render_text(value, case, spec)
    return value


def _is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def _render_text(text: str, case: CaseSpec, spec: ScorerSpec) -> Any:
    """A template in a check, rendered to its native type when it is one expression (``templates.evaluate``)."""
    if case.templates is None:
        return text
    # the scorer's vars: too, as its other templates see them (and as CompletionScorer.check_case allows)
    variables = {**case.variables, **case.scorer_vars.get(spec.name, {})}
    return case.templates.evaluate(text, variables, key=f"{spec.key}.checks", line=spec.line)


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
    return _check_file_content(path, check)


def _check_file_content(path: Path, check: Mapping[str, Any]) -> tuple[bool, str]:
    """``min_size`` and the text conditions of a file that exists."""
    size = path.stat().st_size
    if size < check.get("min_size", 0):
        return False, f"{size} bytes, fewer than {check['min_size']}"
    passed, detail = _check_text(path.read_bytes().decode("utf-8", "replace"), check, "the file", extract=False)
    if not passed:
        return False, detail
    return True, f"exists ({size} bytes){'; ' + detail if detail else ''}"


def _strings(value: Any) -> list[str]:
    return [str(item) for item in (value if isinstance(value, list) else [value])]


def _check_text(text: str, check: Mapping[str, Any], what: str, *, extract: bool) -> tuple[bool, str]:
    """The text conditions (``contains``, ``not_contains``, ``matches``, ``json_equals``), first failure wins."""
    conditions = _TextConditions(text, check, what, extract=extract)
    for condition in (conditions.contains, conditions.not_contains, conditions.matches, conditions.json_equals):
        failure = condition()
        if failure is not None:
            return False, failure
    return True, ", ".join(conditions.found)


class _TextConditions:
    """The text conditions of one check on one text: each returns why it failed (None: it held).

    ``found`` collects what held, for the detail of a check that passed.
    """

    def __init__(self, text: str, check: Mapping[str, Any], what: str, *, extract: bool) -> None:
        self.text, self.check, self.what, self.extract = text, check, what, extract
        self.ignore_case = bool(check.get("ignore_case"))
        self.folded = self.fold(text)
        self.found: list[str] = []

    def fold(self, text: str) -> str:
        return text.lower() if self.ignore_case else text

    def contains(self) -> str | None:
        for needle in _strings(self.check.get("contains", [])):
            if self.fold(needle) not in self.folded:
                return f"{self.what} does not contain {needle!r}"
            self.found.append(f"contains {needle!r}")
        return None

    def not_contains(self) -> str | None:
        for needle in _strings(self.check.get("not_contains", [])):
            if self.fold(needle) in self.folded:
                return f"{self.what} contains {needle!r}"
        return None

    def matches(self) -> str | None:
        pattern = self.check.get("matches")
        if pattern is None:
            return None
        flags = re.MULTILINE | re.DOTALL | (re.IGNORECASE if self.ignore_case else 0)
        if re.search(str(pattern), self.text, flags) is None:
            return f"{self.what} does not match /{pattern}/"
        self.found.append(f"matches /{pattern}/")
        return None

    def json_equals(self) -> str | None:
        if "json_equals" not in self.check:
            return None
        try:
            value = load_json(self.text, extract=self.extract)
        except ValueError as exc:
            return f"{self.what}: {exc}"
        if not json_equal(value, self.check["json_equals"]):
            shown = json.dumps(value, ensure_ascii=False)
            expected = json.dumps(self.check["json_equals"], ensure_ascii=False)
            return f"{self.what} holds {shown[:200]}, expected {expected[:200]}"
        self.found.append("JSON equal")
        return None


async def _check_command(check: Mapping[str, Any], root: Path, sandbox: Sandbox | None) -> tuple[bool, str]:
    try:
        argv = split_command(check["command"])
        result = await run_argv(argv, root, float(check.get("timeout", DEFAULT_COMMAND_TIMEOUT_S)), sandbox)
    except ToolFailure as exc:
        return False, str(exc)
    failure = _command_failure(check, result)
    if failure is not None:
        return False, failure
    passed, detail = _check_text(result.stdout, _stdout_conditions(check), "stdout", extract=False)
    if not passed:
        return False, detail
    return True, f"exit code {result.exit_code}" + (f"; {detail}" if detail else "")


def _stdout_conditions(check: Mapping[str, Any]) -> dict[str, Any]:
    """A command check with its ``stdout_*`` conditions under the names of the text conditions."""
    return {**check, "contains": check.get("stdout_contains", []), "not_contains": check.get("stdout_not_contains", []),
            "matches": check.get("stdout_matches")}


def _command_failure(check: Mapping[str, Any], result: CommandResult) -> str | None:
    """Why the command failed before its stdout is read: the timeout, a limit, the exit code, stderr."""
    if result.timed_out:
        return f"timed out after {check.get('timeout', DEFAULT_COMMAND_TIMEOUT_S):g} s"
    if result.note is not None:
        return f"exit code {result.exit_code}: {result.note}"
    expected = check.get("exit_code", 0)
    if expected is not None and result.exit_code != expected:
        return f"exit code {result.exit_code}, expected {expected}" + _last_line(result)
    for needle in _strings(check.get("stderr_contains", [])):
        if needle not in result.stderr:
            return f"stderr does not contain {needle!r}"
    return None


def _last_line(result: CommandResult) -> str:
    """``: `` and the last line the command wrote (to stderr, else stdout), or nothing when it wrote none."""
    last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or [""]
    return f": {last[0][:200]}" if last[0] else ""
