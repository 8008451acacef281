"""Per-session state kept in ``config.stash``: options as the suite layer wants them, runner, scheduler."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import pytest
from pluggy import HookRelay

from bench_plugin.providers.registry import PROVIDER_TYPES
from bench_plugin.run.case import PreparedCase
from bench_plugin.run.catalog import catalog_from_hooks
from bench_plugin.run.run_history import RunHistory
from bench_plugin.run.runner import Runner, RunnerSettings
from bench_plugin.run.schedule import Scheduler
from bench_plugin.run.shards import Shard
from bench_plugin.suite.build import BuildOptions
from bench_plugin.suite.expand import ExpandOptions
from bench_plugin.suite.spec import CaseSpec


@dataclass
class BenchState:
    """What the hooks share for one pytest session (one per xdist worker, one on the controller)."""

    concurrency: int
    build_options: BuildOptions
    expand_options: ExpandOptions
    hook: HookRelay | None = None  # config.hook: the session-wide hook relay (provider types are session-wide)
    shard: Shard | None = None  # --bench-shard: this machine's part of the cases
    calls: RunnerSettings = field(default_factory=RunnerSettings)  # limits, budgets, progress
    history: RunHistory = field(default_factory=RunHistory)  # earlier results: reuse, re-judge (run_history.py)
    # suite path -> its tasks, as collected: which earlier records belong to tasks a suite no longer has
    suite_tasks: dict[str, frozenset[str]] = field(default_factory=dict)
    _markers: set[str] = field(default_factory=set)

    @cached_property
    def runner(self) -> Runner:
        """The background runner, made on first use."""
        # made on first use, after collection: every conftest.py that adds a provider type is loaded
        providers = catalog_from_hooks(self.hook).providers if self.hook is not None else PROVIDER_TYPES
        return Runner(self.concurrency, providers, self.calls)

    @cached_property
    def scheduler(self) -> Scheduler[PreparedCase]:
        """The look-ahead over the selected cases, feeding the runner."""
        runner = self.runner
        scheduler = Scheduler(runner.submit, window=2 * self.concurrency, waiting=lambda: runner.waiting_cases,
                              phase=load_phase)
        runner.on_case_waits = scheduler.widen
        return scheduler

    def register_marker(self, config: pytest.Config, name: str) -> None:
        """Declare markers made from suite data, so --strict-markers accepts them."""
        if name not in self._markers:
            self._markers.add(name)
            config.addinivalue_line("markers", f"{name}: bench_plugin case marker")

    def note_tasks(self, path: str, cases: Iterable[CaseSpec]) -> None:
        """Keep a collected suite's tasks, when the session continues earlier records (the others need none)."""
        if self.history.settings.keep_earlier:
            self.suite_tasks[path] = frozenset(case.task for case in cases)

    def wait_until_quiet(self, timeout: float) -> bool:
        """Wait for the runner's loop to be quiet (``Runner.wait_until_quiet``); True at once when none was started."""
        return self.runner.wait_until_quiet(timeout) if "runner" in self.__dict__ else True

    def close(self) -> None:
        """Stop the runner, if one was started."""
        if "runner" in self.__dict__:
            self.runner.close()


def load_phase(case: PreparedCase) -> object:
    """A case's phase for the scheduler: its suite's load step (None outside any: no phase to wait for)."""
    step = case.spec.load
    return None if step is None else (case.spec.path, step)


STATE_KEY = pytest.StashKey[BenchState]()
SUITE_TASKS_OUTPUT = "bench_suite_tasks"
"""A worker's ``workeroutput`` key: ``BenchState.suite_tasks`` (path -> sorted task ids), for the controller."""
