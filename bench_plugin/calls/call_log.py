"""Every model call one case made, judges and failed calls included, as the record keeps them.

The engine's transcript holds only the answers it used; what the endpoints were asked, how many
attempts each call took, what each cost and which call failed is known only where calls are made
(the runner), and is written down here for the case's record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench_plugin.calls.pricing import Cost, add_costs
from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.errors import ProviderError


@dataclass
class CallEntry:
    """One call: who was asked, how many attempts it took, and its answer or its error."""

    purpose: str
    model: str
    provider: str
    turn: int
    attempts: int = 0
    completion: Completion | None = None
    error: BaseException | None = None
    cost: Cost = field(default_factory=lambda: Cost(None))
    cache: str | None = None  # what the response cache did for it (record.CACHE_USES), None when not asked

    @classmethod
    def of(cls, request: CompletionRequest) -> CallEntry:
        """A call about to be made."""
        return cls(request.purpose, request.model.name, request.model.provider.name, request.turn)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the record's ``call_log``."""
        out: dict[str, Any] = {"purpose": self.purpose, "model": self.model, "provider": self.provider,
                               "turn": self.turn, "attempts": self.attempts}
        completion = self.completion
        if completion is not None:
            out.update(input_tokens=completion.usage.input_tokens, output_tokens=completion.usage.output_tokens,
                       cost_usd=self.cost.usd, latency_s=completion.latency_s,
                       finish_reason=completion.finish_reason, response_id=completion.request_id)
            if self.cost.note:
                out["cost_note"] = self.cost.note
            out.update(stream_timing(completion))
        if self.error is not None:
            out["error"] = error_fields(self.error)
        if self.cache is not None:
            out["cache"] = self.cache
        return out


def stream_timing(completion: Completion) -> dict[str, float]:
    """A streamed answer's ``ttft_s``, ``tokens_per_s`` and ``itl_s`` as measured; nothing for a cache hit.

    A hit made no call this run: whatever the stored answer took is no latency of this endpoint now.
    """
    if completion.cached:
        return {}
    timing = {"ttft_s": completion.ttft_s, "tokens_per_s": completion.tokens_per_s, "itl_s": completion.itl_s}
    return {name: value for name, value in timing.items() if value is not None}


def error_fields(exc: BaseException) -> dict[str, Any]:
    """``kind``, ``type``, ``message`` and ``status`` of a call's error."""
    if isinstance(exc, ProviderError):
        return {"kind": exc.kind, "type": type(exc).__name__, "message": exc.message, "status": exc.status}
    return {"kind": "internal", "type": type(exc).__name__, "message": str(exc), "status": None}


@dataclass
class CallLog:
    """The calls of one case, in the order they were made."""

    entries: list[CallEntry] = field(default_factory=list)

    def start(self, request: CompletionRequest) -> CallEntry:
        """Note a call about to be made; the runner fills in its outcome."""
        entry = CallEntry.of(request)
        self.entries.append(entry)
        return entry

    def failed_call(self) -> CallEntry | None:
        """The last call that ended in an error (the one that ended the case, when it errored)."""
        return next((entry for entry in reversed(self.entries) if entry.error is not None), None)

    def judge_usage(self) -> dict[str, Any]:
        """Tokens, cost, calls and attempts of the judges' calls, failed ones included."""
        judged = [entry for entry in self.entries if entry.purpose == "judge"]
        answered = [entry.completion for entry in judged if entry.completion is not None]
        cost = add_costs([entry.cost for entry in judged if entry.completion is not None])
        usage: dict[str, Any] = {
            "input_tokens": _sum(c.usage.input_tokens for c in answered),
            "output_tokens": _sum(c.usage.output_tokens for c in answered),
            "cost_usd": cost.usd, "calls": len(judged), "attempts": sum(entry.attempts for entry in judged),
        }
        if cost.note:
            usage["cost_note"] = cost.note
        return usage

    def to_list(self) -> list[dict[str, Any]]:
        """The record's ``call_log``."""
        return [entry.to_dict() for entry in self.entries]


def _sum(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
