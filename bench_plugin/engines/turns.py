"""One turn of a conversation as it happened: what was asked, the reply, its reasoning, its cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench_plugin.engines.thinking import split_thinking
from bench_plugin.providers.base import Completion
from bench_plugin.suite.spec import Message, ThinkingSpec


@dataclass(frozen=True)
class TurnResult:
    """A scripted user turn and the model's reply (or why the turn was skipped).

    ``index`` is the turn's 1-based position in the task (skipped turns count, so ``J.t2`` always
    means the second turn written); ``call`` is the 1-based number of the model call that answered
    it (skipped turns make no call). ``raw`` is the reply as sent back, which stays in the model's
    history; ``answer`` is what scorers see (the text after the thinking tags, when the model has
    ``thinking:``). ``context`` is the conversation the model was sent for this turn, ending with
    the user message; it is not part of the record, which has the whole transcript.
    """

    index: int
    phase: int = 1
    user: str | None = None
    raw: str | None = None
    answer: str | None = None
    thinking: str | None = None
    format_valid: bool | None = None
    skipped: bool = False
    skip_reason: str | None = None
    call: int | None = None
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    context: tuple[Message, ...] = ()

    @property
    def answered(self) -> bool:
        return not self.skipped and self.answer is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "phase": self.phase,
            "call": self.call,
            "user": self.user,
            "raw": self.raw,
            "answer": self.answer,
            "thinking": self.thinking,
            "format_valid": self.format_valid,
            "skipped": self.skipped,
            "skip_reason": self.skip_reason,
            "latency_s": self.latency_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


def answered_turn(
    index: int,
    call: int,
    context: tuple[Message, ...],
    completion: Completion,
    thinking: ThinkingSpec | None,
    *,
    phase: int = 1,
) -> TurnResult:
    """The result of a turn the model answered; ``context`` is what the model was sent."""
    split = split_thinking(completion.text, thinking)
    return TurnResult(
        index=index,
        phase=phase,
        user=next((message.content for message in reversed(context) if message.role == "user"), None),
        raw=completion.text,
        answer=split.answer,
        thinking=split.thinking,
        format_valid=split.format_valid,
        call=call,
        latency_s=completion.latency_s,
        input_tokens=completion.usage.input_tokens,
        output_tokens=completion.usage.output_tokens,
        context=context,
    )


def skipped_turn(index: int, reason: str, *, phase: int = 1) -> TurnResult:
    """A turn whose gate did not hold: nothing was sent."""
    return TurnResult(index=index, phase=phase, skipped=True, skip_reason=reason)
