"""What a case produced: the conversation, its turns, reasoning split from answers, an agent's tool calls.

Engines write it; scorers, records and reports read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.chat import Completion, Message
from bench_plugin.core.endpoints import ThinkingSpec


@dataclass(frozen=True)
class Transcript:
    """The conversation a case produced.

    ``messages``: the prompt plus the model's replies as sent back (raw, with any thinking);
    ``response``: the last answer, which scorers see; ``turns``: each user turn and its reply;
    ``completions``: every call made (in a model-to-model conversation, the calls of the model
    under test). ``conversation``: a model-to-model conversation's log as plain data (participants,
    messages, events, how it ended); ``text``: how judges read the conversation (speaker names and
    events), when it is not ``role: content`` blocks of ``messages``. ``agent``: a tool-using agent's
    run (tool calls, checks of the final workspace, final files, budget). ``structured_output``: the answer read
    as JSON against the task's ``output_schema:`` (None for a task without one).
    """

    messages: tuple[Message, ...]
    response: str
    completions: tuple[Completion, ...]
    turns: tuple[TurnResult, ...] = ()
    conversation: Mapping[str, Any] | None = None
    text: str | None = None
    agent: AgentRun | None = None
    structured_output: StructuredOutput | None = None


@dataclass(frozen=True)
class StructuredOutput:
    """The answer of an ``output_schema:`` task read as JSON: its value, or why it is not a valid answer.

    ``schema`` is the schema's name; ``value`` the parsed JSON (None when it did not parse); ``problem`` why the
    answer does not do (it does not parse, or does not match the schema); ``refusal`` the model's words when it
    declined. A problem or a refusal fails the case: the model did badly, it is not an error of the case.
    """

    schema: str
    value: Any = None
    problem: str | None = None
    refusal: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the case fails whatever its scores, or None: the answer parsed and matched."""
        if self.refusal is not None:
            return f"the model refused to answer: {self.refusal}"
        return None if self.problem is None else f"the answer {self.problem}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it (``structured_output``)."""
        return {"schema": self.schema, "value": self.value, "valid": self.failure is None, "problem": self.problem,
                "refusal": self.refusal}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StructuredOutput:
        """A record's ``structured_output`` back (re-judging keeps its verdict)."""
        return cls(str(data.get("schema", "")), data.get("value"), data.get("problem"), data.get("refusal"))


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
        """Whether the model answered this turn (it was sent and a reply came back)."""
        return not self.skipped and self.answer is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it."""
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


@dataclass(frozen=True)
class ThinkingSplit:
    """A reply split by ``split_thinking``.

    ``format_valid`` is None when the model declares no ``thinking:`` (nothing was checked).
    """

    answer: str
    thinking: str | None = None
    format_valid: bool | None = None


def split_thinking(text: str, spec: ThinkingSpec | None) -> ThinkingSplit:
    """Split ``text`` at the model's thinking tags.

    The format is valid when exactly one of the declared tag pairs is present, its opening and
    closing tags appear once each (compared case-insensitively) and in that order. Then the
    thinking is the stripped text between the tags and the answer the stripped text after the
    closing tag. Otherwise the answer is the whole text, unchanged, and the thinking None.

    Example:
        >>> split_thinking("<think>2+2</think> 4", ThinkingSpec())
        ThinkingSplit(answer='4', thinking='2+2', format_valid=True)
    """
    if spec is None:
        return ThinkingSplit(answer=text)
    found = [(_find_all(text, opening), _find_all(text, closing)) for opening, closing in spec.tags]
    present = [(opens, closes) for opens, closes in found if opens or closes]
    if len(present) != 1:
        return ThinkingSplit(answer=text, format_valid=False)
    opens, closes = present[0]
    if len(opens) != 1 or len(closes) != 1 or closes[0].start() < opens[0].end():
        return ThinkingSplit(answer=text, format_valid=False)
    thinking = text[opens[0].end() : closes[0].start()].strip()
    return ThinkingSplit(answer=text[closes[0].end() :].strip(), thinking=thinking, format_valid=True)


def _find_all(text: str, tag: str) -> list[re.Match[str]]:
    # a regex rather than text.lower(): lowercasing may change lengths, and so the offsets
    return list(re.finditer(re.escape(tag), text, re.IGNORECASE)) if tag else []


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as it happened.

    ``step`` is the model call that asked for it (1-based, over the case), ``turn`` the user turn.
    ``arguments`` are the parsed arguments (or the text the model wrote, when it is not a JSON object).
    ``output`` is what the model was sent back; ``error`` the failure, when ``ok`` is false.
    ``family`` (read, edit, search, execute...), ``mutating``, ``target`` (the path written or read) and
    ``command`` (the command text) are what the trajectory scorer counts.
    """

    step: int
    turn: int
    id: str
    name: str
    arguments: Any
    ok: bool
    output: str
    error: str | None = None
    family: str = "unknown"
    mutating: bool = False
    target: str | None = None
    command: str | None = None
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it."""
        return {
            "step": self.step, "turn": self.turn, "id": self.id, "name": self.name, "arguments": self.arguments,
            "ok": self.ok, "output": self.output, "error": self.error, "family": self.family,
            "mutating": self.mutating, "target": self.target, "command": self.command,
            "duration_s": round(self.duration_s, 4),
        }


@dataclass(frozen=True)
class CheckResult:
    """One deterministic check of the final state (a completion assertion) and its evidence."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it."""
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class AgentRun:
    """An agent case's run: the tools offered, every call, the checks, the final files and the budget.

    ``checks`` holds the checks of each ``completion`` scorer
    (by scorer name), the final workspace files (``path``, ``size``, and ``text`` for small text files)
    and the budget: steps (model calls) used, seconds, and why the loop was stopped, if it was.
    ``sandbox`` is the backend its programs ran in (None: it ran none); records name it only when it is
    ``none``, so that every report can flag the cases whose commands ran without isolation.
    """

    tools: tuple[str, ...]
    tool_calls: tuple[ToolCallRecord, ...] = ()
    checks: Mapping[str, tuple[CheckResult, ...]] = field(default_factory=dict)
    files: tuple[Mapping[str, Any], ...] = ()
    steps: int = 0
    max_steps: int = 0
    max_seconds: float = 0.0
    elapsed_s: float = 0.0
    stopped: str | None = None
    sandbox: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it."""
        return {
            "tools": list(self.tools),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "checks": {name: [check.to_dict() for check in checks] for name, checks in self.checks.items()},
            "files": [dict(entry) for entry in self.files],
            "budget": {"steps": self.steps, "max_steps": self.max_steps, "elapsed_s": round(self.elapsed_s, 3),
                       "max_seconds": self.max_seconds, "stopped": self.stopped},
            **({"sandbox": "none"} if self.sandbox == "none" else {}),
        }
