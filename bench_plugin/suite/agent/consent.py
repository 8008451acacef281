"""A suite cannot turn the sandbox off by itself: its ``sandbox: none`` needs the user's consent.

Suites get shared and downloaded, and an agent task runs programs a model chose. ``sandbox: none`` in a
suite (at the top or in a task) is honoured only when the user said so: ``--bench-sandbox none`` (which
runs every agent task of the run without isolation) or the ini option ``bench_allow_no_sandbox = true``
(which lets suites ask for it). Otherwise the suite does not load, at the key that asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.agent.spec import SandboxOverride
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path

ALLOW_NO_SANDBOX_INI = "bench_allow_no_sandbox"
CONSENT_HINT = (f"if you trust this suite to run programs on this machine unconfined, say so: --bench-sandbox none "
                f"(every agent task of the run), or the ini option {ALLOW_NO_SANDBOX_INI} = true (suites may then "
                f"ask for it; on the command line: -o {ALLOW_NO_SANDBOX_INI}=true); otherwise remove it, and the "
                "commands run in the strongest sandbox that works here (auto)")


def check_sandbox_consent(loaded: LoadedSuite, task: Mapping[str, Any], base: KeyPath,
                          override: SandboxOverride | None) -> None:
    """Refuse the ``sandbox: none`` that would apply to the agent task at ``base`` without the user's consent.

    The task's ``sandbox:`` wins over the suite's, so the key blamed is the one that decides; a suite's
    ``none`` that a task overrides asks for nothing. The command line's ``--bench-sandbox`` wins over
    both (and its ``none`` is the user's own choice).

    Raises:
        SuiteError: at the ``sandbox`` (or ``sandbox.backend``) key that asks for ``none``, with its line quoted.
    """
    if override is not None and (override.backend is not None or override.allow_none):
        return
    for entry, path in ((task.get("sandbox"), (*base, "sandbox")), (loaded.data.get("sandbox"), ("sandbox",))):
        backend, key_path = _backend(entry, path)
        if backend is None:
            continue
        if backend != "none":
            return
        line = loaded.lines.line_of(key_path)
        raise SuiteError("the suite asks to run agent commands without a sandbox (none), and a suite cannot turn "
                         "isolation off by itself: the programs a model chooses could read this machine's files "
                         "and pytest's environment (API keys included)",
                         path=loaded.display_path, line=line, key=format_key_path(key_path), hint=CONSENT_HINT,
                         excerpt=loaded.excerpt(line, context=0))


def _backend(entry: Any, path: KeyPath) -> tuple[str | None, KeyPath]:
    """The backend a ``sandbox:`` value names, and the key path that names it (None: it names none)."""
    if isinstance(entry, str):
        return entry, path
    if isinstance(entry, Mapping) and "backend" in entry:
        return str(entry["backend"]), (*path, "backend")
    return None, path
