"""Provider types by name, built-in presets, and third-party types from entry points."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any

from bench_plugin.endpoints import ProviderSpec

ENTRY_POINT_GROUP = "bench_plugin.providers"


OFFLINE_TYPES = ("echo", "scripted", "replay")
HTTP_TYPES = ("openai_compatible", "openai", "anthropic")


def _builtin_factories() -> dict[str, Callable[..., Any]]:
    from bench_plugin.providers.anthropic import AnthropicProvider
    from bench_plugin.providers.offline import EchoProvider, ReplayProvider, ScriptedProvider
    from bench_plugin.providers.openai_compat import OpenAICompatProvider

    return {
        "openai_compatible": OpenAICompatProvider,
        "openai": OpenAICompatProvider,
        "anthropic": AnthropicProvider,
        "echo": lambda spec, http: EchoProvider(spec),
        "scripted": lambda spec, http: ScriptedProvider(spec),
        "replay": lambda spec, http: ReplayProvider(spec),
    }


def provider_types() -> list[str]:
    """Every provider type a suite may name: built-ins first, then installed plugins."""
    names = [*HTTP_TYPES, *OFFLINE_TYPES]
    names += sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name not in names)
    return names


def create_provider(spec: ProviderSpec, http: Any) -> Any:
    """Instantiate the provider for ``spec``; plugins are imported only when named.

    Raises:
        KeyError: for an unknown type (the caller has already validated names, so this is rare).
    """
    factories = _builtin_factories()
    if spec.type in factories:
        return factories[spec.type](spec, http)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec.type:
            return ep.load()(spec, http)
    raise KeyError(spec.type)
