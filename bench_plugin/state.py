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
    seen_models: set[str] = field(default_factory=set)
    seen_providers: set[str] = field(default_factory=set)
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

    def check_model_names(self, session: pytest.Session) -> None:
        """--bench-models names that no collected suite knows are a usage error, not silence."""
        names = self.expand_options.models
        if not names or not self.seen_providers:
            return
        unknown = [
            n for n in names if n not in self.seen_models and n.partition(":")[0] not in self.seen_providers
        ]
        if unknown:
            raise pytest.UsageError(
                f"--bench-models: unknown model(s) {', '.join(unknown)}. Choose from the suites' models "
                f"({', '.join(sorted(self.seen_models)) or 'none'}) or write PROVIDER:MODEL with a provider "
                f"from: {', '.join(sorted(self.seen_providers))}"
            )

    def close(self) -> None:
        if "runner" in self.__dict__:
            self.runner.close()


STATE_KEY = pytest.StashKey[BenchState]()
