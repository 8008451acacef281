"""Who a call goes to: an endpoint (ProviderSpec), a model on it (ModelSpec), its price and reasoning tags.

Built from a suite (``suite/build.py``) or from ``provider:model-id`` on the command line; the
built-in presets are the endpoints a suite may name without declaring them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench_plugin.core.frozen import freeze_fields


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a provider's ``base_url``, or None: http(s), a host, a port from 1 to 65535.

    Found when the suite is read (``bench validate`` too), instead of as an error of every call.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a bracket left open, a port out of range or not a number
        return f"not a usable URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return "expected a URL that starts with http:// or https://"
    if not parts.hostname:
        return "the URL names no host"
    if port == 0:
        return "port 0 is no server's port"
    try:  # what the call would meet: httpx's own reading (an IPv6 host such as [::1]] passes urlsplit)
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        return f"not a usable URL: {exc}"
    return None


@dataclass(frozen=True)
class Pricing:
    """US dollars per million tokens, used to put a cost on every call."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """US dollars for these token counts; None when the endpoint reported neither."""
        if input_tokens is None and output_tokens is None:
            return None
        return ((input_tokens or 0) * self.input_per_mtok + (output_tokens or 0) * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class ProviderSpec:
    """How to reach one endpoint. ``options`` holds type-specific keys (e.g. a replay file).

    Call limits (the runner keeps them, ``limits.py``): ``concurrency`` calls in flight, ``rpm``
    requests and ``tpm`` tokens per minute, each attempt at most ``timeout_s`` in all, ``max_retries`` retries
    of failures other than rate limits, and ``max_wait_s`` seconds of waiting between one call's attempts.
    An answer longer than ``max_response_bytes`` (16 MB) is refused as it arrives. ``stream``: ask for
    server-sent events (``providers/streaming.py``), to measure the time to first token and the token rate.
    """

    name: str
    type: str
    base_url: str | None = None
    api_key_env: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    max_retries: int = 2
    concurrency: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    rpm: float | None = None
    tpm: float | None = None
    max_wait_s: float | None = None
    max_response_bytes: int = 16 * 1024 * 1024
    stream: bool = False

    def __post_init__(self) -> None:
        freeze_fields(self, "headers", "options")


@dataclass(frozen=True)
class ThinkingSpec:
    """Where a model writes its reasoning: tag pairs such as ``("<think>", "</think>")``.

    The answer is split into reasoning and answer (``engines/thinking.py``); scorers see the answer.
    """

    tags: tuple[tuple[str, str], ...] = (("<think>", "</think>"),)


@dataclass(frozen=True)
class ModelSpec:
    """One model as a suite names it.

    ``name`` is the suite's key for the model and appears in test ids; ``id`` is what the API is sent.
    ``system_prompt`` is ``native`` (send a system role), ``fold`` (prepend it to the first user
    message through ``system_fold_template``) or ``drop``. ``concurrency``, ``rpm`` and ``tpm`` limit
    the calls of this model alone, within its provider's limits. ``stream``: this model's calls stream
    (True) or not (False); None follows its provider's ``stream``.
    """

    name: str
    provider: ProviderSpec
    id: str
    label: str
    params: Mapping[str, Any] = field(default_factory=dict)
    system_prompt: str = "native"
    system_fold_template: str = "{{ system }}\n\n"
    headers: Mapping[str, str] = field(default_factory=dict)
    pricing: Pricing | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    thinking: ThinkingSpec | None = None
    concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    stream: bool | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "params", "headers", "options")

    def template_vars(self) -> dict[str, str]:
        """``model`` as templates see it: the suite's name for it, the API id and the label."""
        return {"name": self.name, "id": self.id, "label": self.label}


# Presets a suite (or --bench-models provider:model) can name without declaring them.
PRESETS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec("openai", "openai_compatible", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openrouter": ProviderSpec(
        "openrouter", "openai_compatible", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"
    ),
    "anthropic": ProviderSpec("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "ollama": ProviderSpec("ollama", "openai_compatible", "http://localhost:11434/v1"),
    "vllm": ProviderSpec("vllm", "openai_compatible", "http://localhost:8000/v1"),
    "llamacpp": ProviderSpec("llamacpp", "openai_compatible", "http://localhost:8080/v1"),
    "echo": ProviderSpec("echo", "echo"),
    "scripted": ProviderSpec("scripted", "scripted"),
    "replay": ProviderSpec("replay", "replay"),
}
