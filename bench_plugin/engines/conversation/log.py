"""The log of a model-to-model conversation: what was said, by whom, and every event, as plain data.

The log is what scorers and judges read (``render_text``: speaker names, notices and events), what
the record keeps (``conversation``) and what ``report/conversation_log.py`` saves per case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SEED = "seed"
MESSAGE = "message"
NOTICE = "notice"  # shown to the participants (e.g. "[AI-1 changed its temperature]")
EVENT = "event"  # never shown to the participants: commands, a muted turn, a join, the end


@dataclass(frozen=True)
class LogEntry:
    """One entry of the conversation log.

    ``content`` is, for a message, what the other participants see (the answer without thinking
    text and without hidden commands); for a notice, its text; for an event, what happened. ``raw``
    is a message's reply as the model gave it. ``event`` names an event: a command's name, ``skip``
    (a muted turn), ``join``, ``stop`` (a stop sequence) or ``end`` (the last round was played);
    ``ok`` is False for a command that failed.
    """

    kind: str
    round: int
    content: str
    speaker: str | None = None
    participant: int | None = None
    raw: str | None = None
    thinking: str | None = None
    event: str | None = None
    ok: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as the record keeps it: participants numbered from 1, only the fields of its kind."""
        out: dict[str, Any] = {"kind": self.kind, "round": self.round, "speaker": self.speaker,
                               "content": self.content}
        if self.participant is not None:
            out["participant"] = self.participant + 1
        if self.kind == MESSAGE:
            out.update(raw=self.raw, thinking=self.thinking)
        if self.kind == EVENT:
            out.update(event=self.event, ok=self.ok)
        return out


def render_text(participants: Sequence[Mapping[str, Any]], entries: Sequence[LogEntry]) -> str:
    """The conversation as a judge reads it, blocks separated by blank lines.

    First who took part, then each message under its speaker's name, notices as they were shown, and
    events marked ``[event]``.

    Example:
        Participants: AI-1 (alpha), AI-2 (beta)

        User: Let's begin.

        AI-1: Hello.

        [event] AI-1 set its temperature to 1.5
    """
    names = ", ".join(f"{p['name']} ({p['model_label']})" for p in participants)
    blocks = [f"Participants: {names}"]
    for entry in entries:
        if entry.kind in (SEED, MESSAGE):
            blocks.append(f"{entry.speaker}: {entry.content}".rstrip())
        elif entry.kind == NOTICE:
            blocks.append(entry.content)
        else:
            blocks.append(f"[event] {entry.content}")
    return "\n\n".join(blocks)


def ending(entries: Sequence[LogEntry]) -> dict[str, Any] | None:
    """How the conversation ended (``stop`` or ``end``): the reason, who, when and the text."""
    for entry in reversed(entries):
        if entry.kind == EVENT and entry.event in ("stop", "end"):
            reason = "stop_sequence" if entry.event == "stop" else "max_turns"
            return {"reason": reason, "by": entry.speaker, "round": entry.round, "detail": entry.content}
    return None
