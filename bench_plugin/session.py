"""Per-session state kept in ``config.stash``: options as the suite layer wants them, runner, scheduler."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import pytest

from bench_plugin.runner import Runner
from bench_plugin.schedule import Scheduler
from bench_plugin.suite.build import BuildOptions
from bench_plugin.suite.expand import ExpandOptions


@dataclass
class BenchState:
    """What the hooks share for one pytest session (one per xdist worker, one on the controller)."""

    concurrency: int
    build_options: BuildOptions
    expand_options: ExpandOptions
    _markers: set[str] = field(default_factory=set)

    @cached_property
    def runner(self) -> Runner:
        return Runner(self.concurrency)

    @cached_property
    def scheduler(self) -> Scheduler:
        return Scheduler(self.runner.submit, window=2 * self.concurrency)

    def register_marker(self, config: pytest.Config, name: str) -> None:
        """Declare markers made from suite data, so --strict-markers accepts them."""
        if name not in self._markers:
            self._markers.add(name)
            config.addinivalue_line("markers", f"{name}: bench_plugin case marker")

    def close(self) -> None:
        if "runner" in self.__dict__:
            self.runner.close()


STATE_KEY = pytest.StashKey[BenchState]()
