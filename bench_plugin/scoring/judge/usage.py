"""Tokens and latency of judge calls, summed into the one component that made several of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.core.chat import Completion


def total_usage(usages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Tokens and latency summed over several calls (None where no call reported them)."""

    def total(key: str) -> Any:
        known = [usage[key] for usage in usages if usage.get(key) is not None]
        return sum(known) if known else None

    return {"input_tokens": total("input_tokens"), "output_tokens": total("output_tokens"),
            "latency_s": total("latency_s"), "calls": sum(1 for usage in usages if usage)}


def completion_usage(completion: Completion) -> dict[str, Any]:
    """One call's tokens and latency, as ``total_usage`` adds them up."""
    return {"input_tokens": completion.usage.input_tokens, "output_tokens": completion.usage.output_tokens,
            "latency_s": completion.latency_s}
