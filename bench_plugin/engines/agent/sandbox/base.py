"""The interface a sandbox backend fills in: how to start a program inside it; running it is shared."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

from bench_plugin.core.places import take_place
from bench_plugin.engines.agent.sandbox.launch import CommandResult, Launch
from bench_plugin.engines.agent.sandbox.process import run_launch
from bench_plugin.suite.agent.spec import SandboxLimits


class Sandbox(ABC):
    """A place to run programs in a workspace, with limits; one object serves a whole case.

    Args:
        limits: what each program may spend.
    """

    name: str = ""
    """The backend, as records and messages name it: ``bubblewrap``, ``container`` or ``none``."""

    def __init__(self, limits: SandboxLimits) -> None:
        self.limits = limits

    @abstractmethod
    def launch(self, argv: Sequence[str], workspace: Path, *, network: bool) -> Launch:
        """How to start ``argv`` in ``workspace`` inside this sandbox.

        Raises:
            ToolFailure: when the program cannot be found.
        """

    async def run(self, argv: Sequence[str], workspace: Path, *, timeout_s: float,
                  network: bool = False) -> CommandResult:
        """Run ``argv`` in ``workspace``; everything it started is stopped at ``timeout_s`` at the latest.

        Raises:
            ToolFailure: when the program does not exist or cannot be started.
        """
        launch = self.launch(argv, workspace, network=network)
        await take_place()  # in one of the places of the cases at work: as many programs at most (a final check's)
        return await run_launch(launch, argv, workspace, timeout_s=timeout_s, limits=self.limits,
                                isolated=self.isolated)

    @property
    def isolated(self) -> bool:
        """Whether every process a program starts dies with it (own PID namespace)."""
        return True
