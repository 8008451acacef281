"""Provider types by name: the wire formats and offline sources a suite's ``type:`` may name.

A project adds its own from ``conftest.py`` (``pytest_bench_provider_types``), a package through
the ``bench_plugin.providers`` entry point group. The endpoints a suite may name without declaring
them (``openai``, ``anthropic``, ``ollama``...) are in ``bench_plugin.core.endpoints.PRESETS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.registry import Registry, require_callable
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.interface import Provider

ProviderFactory = Callable[[ProviderSpec, HttpPool], Provider]
"""Make the provider for one endpoint; ``HttpPool`` holds the runner's shared httpx clients."""

OFFLINE_TYPES = ("echo", "scripted", "replay")
HTTP_TYPES = ("openai_compatible", "openai", "anthropic", "application")
VARIABLE_TYPES = ("application",)
"""Provider types whose requests carry the case's variables (templates render them in): the cache keys them."""


def adapt_provider_factory(value: object) -> ProviderFactory:
    """A provider type is a class (or any callable) taking ``(spec, http)`` and returning a Provider.

    Raises:
        TypeError: ``value`` is not callable.
    """
    shape = "a provider type must be a callable (spec, http) -> Provider"
    return cast(ProviderFactory, require_callable(value, shape))


PROVIDER_TYPES: Registry[ProviderFactory] = Registry(
    "provider type",
    "bench_plugin.providers",
    {
        "openai_compatible": "bench_plugin.providers.openai_compat:OpenAICompatProvider",
        "openai": "bench_plugin.providers.openai_compat:OpenAICompatProvider",
        "anthropic": "bench_plugin.providers.anthropic:AnthropicProvider",
        "application": "bench_plugin.providers.application:ApplicationProvider",
        "echo": "bench_plugin.providers.offline:EchoProvider",
        "scripted": "bench_plugin.providers.offline:ScriptedProvider",
        "replay": "bench_plugin.providers.offline:ReplayProvider",
    },
    adapt_provider_factory,
)


def provider_types() -> list[str]:
    """Every provider type a suite may name: built-ins first, then installed packages'."""
    return PROVIDER_TYPES.names()


def create_provider(spec: ProviderSpec, http: HttpPool, types: Registry[ProviderFactory] = PROVIDER_TYPES) -> Provider:
    """Make the provider for ``spec`` (a package's type is imported only now, when named).

    Raises:
        UnknownName: an unknown type (rare: suites are checked against the same registry).
    """
    return types.get(spec.type)(spec, http)
