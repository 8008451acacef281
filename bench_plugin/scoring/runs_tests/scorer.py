"""``type: runs_tests``: the code of the answer, written beside the task's tests in a fresh workspace, run there.

The command (pytest by default) runs in the case's sandbox (the one agent tasks use: same backends and
limits, no network), in a workspace of its own that is removed after. The value is the share of tests
that passed where the runner reports it (``counts.py``), else 1 or 0 by the exit code; the component
passes when the command exits 0 with no failing test (with a ``threshold:``, when the value reaches it).
What the model's code does wrong (no code, a failing test, an endless loop killed at the timeout, a
crash, a kernel limit) is a low score with the reason; a machine where no sandbox works skips the
case before the model is called (``before_case``).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.errors import CaseError, ToolFailure
from bench_plugin.core.text_safety import shown
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.engines.agent.sandbox.launch import CommandResult, clip
from bench_plugin.engines.agent.workspace import create_workspace, remove_workspace
from bench_plugin.scoring.code_source import suite_folders
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.runs_tests.code_blocks import extract_code
from bench_plugin.scoring.runs_tests.counts import TestCounts, read_counts
from bench_plugin.scoring.runs_tests.options import DEFAULT_COMMAND, JUNIT_FILE, RunsTestsOptions
from bench_plugin.suite.agent.spec import SandboxSpec, WorkspaceSpec
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

SHOWN_OUTPUT_CHARS = 3_000
"""What the component's evidence keeps of the test output."""
_DURATION = re.compile(r"(\d+ [a-z]+) in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")


class RunsTests:
    """The scorer type: ``parse`` checks the options once."""

    @classmethod
    def parse(cls, spec: ScorerSpec) -> RunsTestsScorer:
        """Raises: ValueError (or TypeError) naming the bad option."""
        return RunsTestsScorer(spec, RunsTestsOptions.parse(spec))


@dataclass(frozen=True)
class RunsTestsScorer:
    """A parsed ``runs_tests`` scorer."""

    spec: ScorerSpec
    options: RunsTestsOptions

    def check_case(self, case: CaseSpec) -> None:
        """At collection: every test file the case names exists in the suite's folders, and the inline ones render.

        Raises:
            CaseError: at the scorer's line, naming the option, the path and where it was looked for.
        """
        self._workspace(case)

    async def before_case(self, case: CaseSpec) -> None:
        """Before the model is called: a sandbox the case may use works here.

        Raises:
            SandboxError: none does; the case is skipped with the fix, and nothing was spent.
        """
        await open_sandbox(_sandbox_of(case))

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Run the tests on the answer's code.

        Raises:
            CaseError: the command cannot be started (no such program): the suite's to fix.
            SandboxError: no sandbox works here (the case is skipped).
        """
        options = self.options
        code = extract_code(context.response, options.code, options.language)
        if code is None:
            return self._component(0.0, False, f"no code to run: {_what_missing(options)}")
        sandbox = await open_sandbox(_sandbox_of(context.case))
        result, counts = await self._run(sandbox, context.case, code)
        return self._scored(result, counts, sandbox.name)

    async def _run(self, sandbox: Sandbox, case: CaseSpec, code: str) -> tuple[CommandResult, TestCounts | None]:
        workspace = self._workspace(case)
        root = create_workspace(WorkspaceSpec(workspace.copies, {**workspace.files, self.options.file: code},
                                              workspace.readable))
        try:
            result = await sandbox.run(self._command(workspace), root, timeout_s=self.options.timeout_s, network=False)
            return result, read_counts(root / JUNIT_FILE, result.stdout)
        except ToolFailure as exc:
            raise self._error(case, f"cannot run the test command: {exc}", "command") from exc
        finally:
            remove_workspace(root)

    def _command(self, workspace: WorkspaceSpec) -> tuple[str, ...]:
        """The suite's command, else pytest on the test files (named: pytest collects them whatever their names)."""
        if self.options.command is not None:
            return self.options.command
        return (*DEFAULT_COMMAND, *(target for _, target in workspace.copies), *workspace.files)

    def _workspace(self, case: CaseSpec) -> WorkspaceSpec:
        """The test files of the case: copies from the suite's folders, then the inline ones, rendered.

        Raises:
            CaseError: a test path that does not exist or leads outside the folders, a template that fails.
        """
        folders = suite_folders(case)
        copies = []
        for index, name in enumerate(self.options.tests):
            where = f"{self.spec.key}.tests[{index}]"
            shown_name = self._render(case, name, where)
            source = folders.confine(shown_name, path=case.path, key=where, line=self.spec.line)
            if not source.exists():
                raise self._error(case, f"{shown_name!r} does not exist under the suite's folder ({folders.root})",
                                  f"tests[{index}]", hint="tests: names files or folders relative to the suite file")
            copies.append((source, source.name))
        files = {name: self._render(case, text, f"{self.spec.key}.test_files.{name}")
                 for name, text in self.options.test_files.items()}
        return WorkspaceSpec(tuple(copies), files, readable=(folders.root, *folders.allowed))

    def _render(self, case: CaseSpec, text: str, key: str) -> str:
        if case.templates is None or ("{{" not in text and "{%" not in text):
            return text
        return case.templates.render(text, case.variables, key=key, line=self.spec.line)

    def _scored(self, result: CommandResult, counts: TestCounts | None, sandbox: str) -> ComponentScore:
        """The value, the verdict and the evidence of a finished (or stopped) run."""
        verdict, share, passed = _verdict(result, counts, self.options.timeout_s)
        value = share if self.options.partial_credit else float(passed)
        extra: dict[str, Any] = {"exit_code": result.exit_code, "sandbox": sandbox,
                                 "tests": counts.to_dict() if counts is not None else None}
        detail = f"{verdict}\n{_output(result)}".rstrip()
        return self._component(value, passed, detail, extra)

    def _component(self, value: float, passed: bool, detail: str,
                   extra: dict[str, Any] | None = None) -> ComponentScore:
        """The component; with a ``threshold:`` the threshold decides, not every test (no verdict of its own)."""
        thresholded = self.spec.threshold is not None or self.spec.threshold_template is not None
        return ComponentScore(name=self.spec.name, value=value, raw=value, passed=None if thresholded else passed,
                              detail=detail, extra=extra or {})

    def _error(self, case: CaseSpec, message: str, option: str, hint: str | None = None) -> CaseError:
        return CaseError(f"runs_tests: {message}", path=case.path, line=self.spec.line,
                         key=f"{self.spec.key}.{option}", hint=hint)


def _sandbox_of(case: CaseSpec) -> SandboxSpec:
    return case.sandbox if case.sandbox is not None else SandboxSpec()


def _what_missing(options: RunsTestsOptions) -> str:
    if options.code == "answer":
        return "the answer is empty"
    language = f" of {options.language}" if options.language else ""
    return f"the answer has no fenced code block{language} (```)"


def _verdict(result: CommandResult, counts: TestCounts | None, timeout_s: float) -> tuple[str, float, bool]:
    """(what happened, the share of tests passed, whether the run passed) of a run."""
    if result.timed_out:
        return f"timed out after {timeout_s:g} s: the code ran too long (an endless loop?)", 0.0, False
    if result.note is not None:
        return f"stopped: {result.note} (exit code {result.exit_code})", 0.0, False
    if counts is None:
        passed = result.exit_code == 0
        return f"{_ended(result.exit_code)}; the runner reported no test counts", float(passed), passed
    if counts.total == 0:
        return f"no test ran (exit code {result.exit_code})", 0.0, False
    passed = result.exit_code == 0 and counts.failed == 0
    return (f"{counts.passed} of {counts.total} tests passed (exit code {result.exit_code})",
            counts.passed / counts.total, passed)


def _ended(exit_code: int | None) -> str:
    """How the command ended: its exit code, and the signal that killed it (a crash) when the code says one did."""
    number = -exit_code if exit_code is not None and exit_code < 0 else (exit_code or 0) - 128
    try:
        name = signal.Signals(number).name if number > 0 else None
    except ValueError:
        name = None
    return f"exit code {exit_code}" + (f" (killed by {name}: the code crashed)" if name else "")


def _output(result: CommandResult) -> str:
    """The test output as evidence: stdout then stderr, bounded, control characters shown.

    pytest's durations (``3 passed in 0.09s``) are left out, so that a record says the same on every run.
    """
    text = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr.strip() else "")
    return shown(clip(_DURATION.sub(r"\1", text.strip()), SHOWN_OUTPUT_CHARS))
