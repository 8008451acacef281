"""What a model-to-model conversation holds while it runs: the seats, the speaking order, the log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.chat import Completion, Message
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.engines.conversation.log import EVENT, NOTICE, LogEntry
from bench_plugin.suite.conversation.spec import ConversationSpec, ParticipantSpec


@dataclass
class Seat:
    """A participant and what commands changed about it.

    ``history`` is its private history (broadcast mode), seeded from its context; ``last_other``
    the last message another speaker sent it there. ``joined_round`` is 0 for a starting seat.
    """

    spec: ParticipantSpec
    joined_round: int = 0
    invited_by: str | None = None
    temperature: float | None = None
    additions: list[str] = field(default_factory=list)
    heading: str = ""
    muted: bool = False
    history: list[Message] = field(default_factory=list)
    last_other: Message | None = None
    completions: list[Completion] = field(default_factory=list)
    uses: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The participant's name, as the transcript and the other participants see it."""
        return self.spec.name

    @property
    def index(self) -> int:
        """The participant's 0-based index, the one the speaking ``order`` refers to."""
        return self.spec.index

    @property
    def model(self) -> ModelSpec:
        """The model that speaks for this participant."""
        return self.spec.model

    def system_text(self) -> str:
        """The seat's system prompt, with what it added to it under the command's heading."""
        if not self.additions:
            return self.spec.system
        notes = "\n".join(f"- {text}" for text in self.additions)
        return "\n\n".join(part for part in (self.spec.system, f"{self.heading}\n{notes}".strip()) if part)

    def params(self) -> dict[str, Any]:
        """Request parameters: the participant's own, with a temperature a command set."""
        out = dict(self.spec.params)
        if self.temperature is not None:
            out["temperature"] = self.temperature
        return out

    def to_dict(self) -> dict[str, Any]:
        """The seat as the record keeps it: who, which model, how it started and what it changed."""
        model = self.model
        input_tokens = _sum(c.usage.input_tokens for c in self.completions)
        output_tokens = _sum(c.usage.output_tokens for c in self.completions)
        cost = model.pricing.cost(input_tokens, output_tokens) if model.pricing else None
        return {
            "index": self.index + 1,
            "name": self.name,
            "model": model.name,
            "model_id": model.id,
            "model_label": model.label,
            "provider": model.provider.name,
            "candidate": self.spec.candidate,
            "joined_round": self.joined_round,
            "invited_by": self.invited_by,
            "system": self.spec.system,
            "context": [m.to_dict() for m in self.spec.context],
            "params": dict(self.spec.params),
            "temperature": self.params().get("temperature", model.params.get("temperature")),
            "prompt_additions": list(self.additions),
            "calls": len(self.completions),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost,
        }


@dataclass
class Room:
    """The whole conversation in progress: seats (invited ones included), order, log, round."""

    spec: ConversationSpec
    seats: list[Seat]
    order: list[int]
    pending: list[int] = field(default_factory=list)
    entries: list[LogEntry] = field(default_factory=list)
    round: int = 0

    @classmethod
    def start(cls, spec: ConversationSpec) -> Room:
        """The room before round 1: one seat per declared participant, its history seeded from its context."""
        seats = [Seat(spec=p, history=list(p.context)) for p in spec.participants]
        return cls(spec=spec, seats=seats, order=list(spec.order))

    def event(self, event: str, content: str, seat: Seat | None = None, *, ok: bool = True) -> None:
        """Log an event of this round (a join, a command applied or failed, the end); participants never see it."""
        self.entries.append(LogEntry(EVENT, self.round, content, speaker=seat.name if seat else None,
                                     participant=seat.index if seat else None, event=event, ok=ok))

    def notice(self, content: str, seat: Seat) -> None:
        """Log a notice of this round that ``seat``'s command caused; it is shown to the participants."""
        self.entries.append(LogEntry(NOTICE, self.round, content, speaker=seat.name, participant=seat.index))


def _sum(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
