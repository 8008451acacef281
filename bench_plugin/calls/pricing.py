"""What a call cost: the suite's ``pricing:`` when it declares one, else the maintained ``genai-prices`` table.

A price the project would have to keep up to date by hand goes stale within weeks; ``genai-prices``
ships its table in the wheel and is only read here (its optional updater, which fetches over the
network, is never started). A call whose price is unknown says so in the record instead of a silent null.

A server of one's own (loopback, a private network) serves models that cost nothing per token (vLLM,
Ollama, llama.cpp), unless it is a proxy to a paid API (LiteLLM, a company gateway): a model only its
maker's API serves (``gpt-4o-mini``, ``claude-sonnet-4-5``, ``gemini-2.5-pro``, ``grok-3``, also as
``openai/gpt-4o``) is priced as that API's even there, so that a dollar budget holds behind a proxy.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from bench_plugin.core.chat import Usage
from bench_plugin.core.endpoints import ModelSpec

OFFLINE_TYPES = frozenset({"echo", "scripted", "replay"})
# where a provider without base_url sends its calls (as providers/openai_compat.py and anthropic.py do)
_DEFAULT_URLS = {"openai_compatible": "https://api.openai.com/v1", "openai": "https://api.openai.com/v1",
                 "anthropic": "https://api.anthropic.com"}


@dataclass(frozen=True)
class Cost:
    """The US dollars of one call (or a sum of calls), where the price came from, or why there is none.

    ``local``: the call went to a server of one's own (loopback, a private network), which has no public price:
    a dollar budget has nothing to count there, where an unknown price of a paid API leaves it blind.
    """

    usd: float | None
    source: str | None = None
    note: str | None = None
    local: bool = False


def call_cost(model: ModelSpec, usage: Usage) -> Cost:
    """The cost of one call of ``model`` that used ``usage``.

    None (with a ``note``) when the endpoint reported no tokens or no price is known; offline providers
    (echo, scripted, replay) cost nothing to call and get None without a note.
    """
    if usage.input_tokens is None and usage.output_tokens is None:
        return Cost(None)
    if model.pricing is not None:
        return Cost(model.pricing.cost(usage.input_tokens, usage.output_tokens), "suite")
    if model.provider.type in OFFLINE_TYPES:
        return Cost(None)
    base_url = model.provider.base_url or _DEFAULT_URLS.get(model.provider.type, "")
    return _library_cost(base_url, model.provider.name, model.id, usage.input_tokens or 0, usage.output_tokens or 0)


def price_unknown(model: ModelSpec) -> str | None:
    """Why the calls of ``model``, a paid endpoint, will have no price; None when they will (or cost nothing).

    For ``bench validate``: such a model's cost stays unknown, and a ``--bench-budget-usd`` run stops at its first
    call. A server of one's own and the offline providers have no public price to miss.
    """
    cost = call_cost(model, Usage(1, 1))
    return cost.note if cost.usd is None and cost.note and not cost.local else None


def add_costs(costs: list[Cost]) -> Cost:
    """The sum of several calls' costs; unknown when any call with tokens has no price (its note is kept)."""
    missing = [cost for cost in costs if cost.usd is None and cost.note]
    if missing:
        return Cost(None, note=missing[0].note, local=all(cost.local for cost in missing))
    known = [(cost.usd, cost.source) for cost in costs if cost.usd is not None]
    if not known:
        return Cost(None)
    sources = sorted({source for _, source in known if source})
    return Cost(sum(usd for usd, _ in known), ", ".join(sources) or None)


def _library_cost(base_url: str, provider: str, model_id: str, input_tokens: int, output_tokens: int) -> Cost:
    if _is_local(base_url):  # a server of your own: no public price, unless it is a proxy to a paid API
        proxied = _proxied_price(model_id)
        if proxied is None:
            return _local_cost(base_url, model_id)
        maker, price = proxied
        source = f"{_library_name()} ({maker}'s price, through a proxy)"
    else:
        price = _library_price(base_url, model_id)
        if isinstance(price, str):
            return Cost(None, note=price)
        source = _library_name()
    try:
        calculated = price.calc_price(_usage(input_tokens, output_tokens))
    except Exception as exc:  # a price the library cannot apply to these counts (its own checks)
        return Cost(None, note=f"genai-prices could not price {model_id!r} on {provider}: {exc}")
    return Cost(float(calculated["total_price"]), source)


# makers whose models (but these) only their own paid APIs serve: a local endpoint naming one is a proxy to it
_PAID_ONLY_MAKERS = frozenset({"openai", "anthropic", "google", "x-ai"})
_OPEN_WEIGHTS = ("gpt-oss", "gemma")  # the weights are public: a local server may run them itself
# the names those makers give their models, after an optional LiteLLM prefix (``openai/``): any other name is
# not looked up, since loading the price table takes 0.18 s, in the loop's thread at a run's first answer
_PAID_ONLY_NAMES = re.compile(r"(?:[\w.-]+/)?(?:gpt-|chatgpt|o\d|claude|gemini|grok|codex|computer-use)", re.IGNORECASE)


@lru_cache(maxsize=256)
def _proxied_price(model_id: str) -> tuple[str, Any] | None:
    """``(maker, price)`` of a model only its maker's paid API serves, called through a server of one's own.

    None for any other model: an Ollama tag (``deepseek-r1:7b``), open weights (``gpt-oss-20b``), a name
    the table does not know. The id may carry a LiteLLM provider prefix (``anthropic/claude-sonnet-4-5``).
    """
    if ":" in model_id or any(name in model_id.lower() for name in _OPEN_WEIGHTS):
        return None
    if not _PAID_ONLY_NAMES.match(model_id):
        return None
    try:  # start-up: the price table is large; it loads on the first call that needs a price
        from genai_prices import data_snapshot
    except ImportError:
        return None
    try:
        maker, model = data_snapshot.get_snapshot().find_provider_model(model_id, None, "litellm", None)
    except LookupError:
        return None
    if maker.id not in _PAID_ONLY_MAKERS:
        return None
    return maker.id, model.get_prices(datetime.now(timezone.utc))


@lru_cache(maxsize=256)
def _local_cost(base_url: str, model_id: str) -> Cost:
    """The unknown cost of a call to a server of one's own: one note per model and server, not one per call."""
    return Cost(None, note=f"no known price for {model_id!r} at {base_url} (a local server); "
                           "declare pricing: for the model in the suite", local=True)


@lru_cache(maxsize=256)
def _is_local(base_url: str) -> bool:
    """Whether ``base_url`` is this machine or a private network: loopback, private IPs, a dotless host name."""
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:  # not a usable URL: its calls fail, and there is no price to find
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host or host.endswith((".local", ".internal", ".lan", ".localhost"))
    return address.is_private or address.is_loopback or address.is_link_local


@lru_cache(maxsize=256)
def _library_price(base_url: str, model_id: str) -> Any:
    """The library's price of ``model_id`` at ``base_url`` (``ModelPrice``), or a note saying why there is none."""
    try:  # start-up: the price table is large; it loads on the first call that needs a price
        from genai_prices import data_snapshot
    except ImportError:
        return f"no price for {model_id!r}: genai-prices is not installed; declare pricing: in the suite"
    try:
        _, model = data_snapshot.get_snapshot().find_provider_model(model_id, None, None, base_url or None)
    except LookupError:
        where = base_url or "an endpoint without base_url"
        return f"no known price for {model_id!r} at {where}; declare pricing: for the model in the suite"
    return model.get_prices(datetime.now(timezone.utc))


@lru_cache(maxsize=1)
def _library_name() -> str:
    from genai_prices import __version__  # start-up: only when a price came from the library

    return f"genai-prices {__version__}"


def _usage(input_tokens: int, output_tokens: int) -> Any:
    from genai_prices import Usage as LibraryUsage  # start-up: only when a price came from the library

    return LibraryUsage(input_tokens=input_tokens, output_tokens=output_tokens)
