"""Which sandbox a task's programs run in: the task's ``sandbox:`` over the suite's, the command line over both.

Agent tasks run programs (``command`` tools, command checks), and so do scorers that run the answer's
code (``runs_tests``) in any task: those use the suite's ``sandbox:`` (a task without tools has none
of its own) with the command line's choice over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.agent.consent import check_sandbox_consent
from bench_plugin.suite.agent.spec import SandboxLimits, SandboxOverride, SandboxSpec
from bench_plugin.suite.loader import LoadedSuite

PROGRAM_SCORERS = ("runs_tests",)
"""Scorer types that run programs in the sandbox (the answer's code against tests)."""
# sandbox: key -> SandboxLimits field
_LIMIT_KEYS = {"max_cpu_seconds": "cpu_seconds", "max_memory_mb": "memory_mb", "max_processes": "processes",
               "max_file_mb": "file_mb", "max_output_kb": "output_kb"}


def build_sandbox(suite: str | Mapping[str, Any] | None, task: str | Mapping[str, Any] | None,
                  override: SandboxOverride | None = None) -> SandboxSpec:
    """The sandbox of a task: its ``sandbox:`` key by key over the suite's, then the command line's choice.

    A string names the backend (``sandbox: none``); a mapping may also give ``image`` and the limits.
    """
    merged = _merged_sandbox(suite, task, override)
    limits = SandboxLimits(**{field: int(merged[key]) for key, field in _LIMIT_KEYS.items() if key in merged})
    defaults = SandboxSpec()
    return SandboxSpec(backend=str(merged.get("backend", defaults.backend)),
                       image=str(merged.get("image", defaults.image)), limits=limits)


def suite_sandbox(loaded: LoadedSuite, override: SandboxOverride | None) -> tuple[SandboxSpec, SuiteError | None]:
    """The sandbox of the programs a scorer runs, and the refusal to raise if one does without the user's consent.

    A suite's ``sandbox: none`` needs the user's consent (``consent.py``); the refusal is raised only when a
    case has a scorer that runs programs (``PROGRAM_SCORERS``), so that a suite whose tools pick their own
    sandbox loads as before.
    """
    sandbox = build_sandbox(loaded.data.get("sandbox"), None, override)
    try:
        check_sandbox_consent(loaded, {}, (), override)
    except SuiteError as refusal:
        return sandbox, refusal
    return sandbox, None


def runs_programs(types: tuple[str, ...]) -> bool:
    """Whether one of the scorer ``types`` runs programs in the sandbox."""
    return any(kind in PROGRAM_SCORERS for kind in types)


def _merged_sandbox(suite: str | Mapping[str, Any] | None, task: str | Mapping[str, Any] | None,
                    override: SandboxOverride | None) -> dict[str, Any]:
    """The suite's ``sandbox:``, the task's key by key over it, then the command line's backend and image."""
    merged: dict[str, Any] = {}
    for entry in (suite, task):
        if entry is not None:
            merged.update({"backend": entry} if isinstance(entry, str) else entry)
    if override is None:
        return merged
    if override.backend is not None:
        merged["backend"] = override.backend
    if override.image is not None:
        merged["image"] = override.image
    return merged
