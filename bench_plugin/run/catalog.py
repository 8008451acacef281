"""What a suite may name that code implements: provider types, engines and scorer types, per folder.

Built-ins and entry points are the same everywhere; a ``conftest.py`` adds to them for the suites in
its folder, through the hooks of ``hookspecs.py`` asked with the suite file's hook proxy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pluggy import HookRelay

from bench_plugin.core.errors import SuiteError
from bench_plugin.core.registry import Registry
from bench_plugin.engines.registry import ENGINES, Engine
from bench_plugin.providers.registry import PROVIDER_TYPES, ProviderFactory
from bench_plugin.scoring.context import ScorerType
from bench_plugin.scoring.registry import SCORER_TYPES
from bench_plugin.suite.spec import CaseSpec

T = TypeVar("T")


@dataclass(frozen=True)
class Catalog:
    """The registries one suite file is built and run with."""

    providers: Registry[ProviderFactory]
    engines: Registry[Engine]
    scorers: Registry[ScorerType]

    def builtin_only(self, case: CaseSpec) -> bool:
        """Whether ``case`` runs only this package's engine and scorer types: none of a project's or a package's."""
        return self.engines.builtin(case.engine) and all(self.scorers.builtin(scorer.type) for scorer in case.scorers)


BUILTIN_CATALOG = Catalog(PROVIDER_TYPES, ENGINES, SCORER_TYPES)
"""Built-ins and installed packages' entry points, without any project's conftest.py."""


def catalog_from_hooks(hook: HookRelay) -> Catalog:
    """The built-in catalog plus what the conftest files and plugins behind ``hook`` add.

    Args:
        hook: a pytest hook proxy (``node.ihook`` for folder-scoped conftests, ``config.hook``).

    Raises:
        SuiteError: a hook returned something that is not a usable implementation.
    """
    return Catalog(
        providers=_extended(PROVIDER_TYPES, hook.pytest_bench_provider_types(), "pytest_bench_provider_types"),
        engines=_extended(ENGINES, hook.pytest_bench_engines(), "pytest_bench_engines"),
        scorers=_extended(SCORER_TYPES, hook.pytest_bench_scorer_types(), "pytest_bench_scorer_types"),
    )


def _extended(registry: Registry[T], results: Sequence[Mapping[str, object]], hook_name: str) -> Registry[T]:
    if not results:
        return registry
    merged: dict[str, object] = {}
    for result in reversed(results):  # pluggy calls the deepest conftest first: let it win
        merged.update(result)
    try:
        return registry.with_registered(merged)
    except TypeError as exc:
        raise SuiteError(f"{hook_name} returned something that is not a {registry.kind}: {exc}") from exc


def base_urls_from_hooks(hook: HookRelay, config: object) -> dict[str, str]:
    """The base URLs the conftest files behind ``hook`` give (``pytest_bench_base_urls``), deepest winning."""
    merged: dict[str, str] = {}
    for result in reversed(hook.pytest_bench_base_urls(config=config)):
        merged.update((str(name), str(url)) for name, url in dict(result).items())
    return merged
