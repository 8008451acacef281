"""No sandbox (``--bench-sandbox none``): programs run as pytest's own children, with limits but no isolation.

They get the clean environment, the kernel limits (CPU time, memory, file size; not processes, which
would count the caller's own), the output limit and the timeout, which kills their process group. They
can read and write whatever pytest's user can, see its processes (and, through ``/proc``, pytest's
environment: API keys included), reach the network, and leave behind a process that left the group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.entry import entry_argv
from bench_plugin.engines.agent.sandbox.launch import Launch, environment, find_program, python_argv


class UnconfinedSandbox(Sandbox):
    """Programs run directly (``none``); every report flags the cases that used it."""

    name = "none"

    @property
    def isolated(self) -> bool:
        """Never: a process that leaves the process group outlives the program."""
        return False

    def launch(self, argv: Sequence[str], workspace: Path, *, network: bool) -> Launch:
        """The entry (limits), then the program; ``network`` changes nothing: there is no way to take it away."""
        argv = python_argv(argv)
        find_program(argv, workspace)
        command = entry_argv(argv, workspace, self.limits, uid=None, count_processes=False)
        return Launch(tuple(command), environment(workspace), workspace)
