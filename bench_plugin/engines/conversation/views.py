"""What each participant is sent: its own view of the conversation, in either mode.

shared: one transcript, remapped for the speaker: its own messages are ``assistant`` (as it gave
them), everyone else's ``user`` with the speaker prefix, notices ``user`` as they are, events never.
broadcast: the speaker's private history, which the engine keeps up to date.
Either way, when the last message is the speaker's own (or there is none), ``own_last`` decides.
"""

from __future__ import annotations

from collections.abc import Callable

from bench_plugin.core.chat import Message
from bench_plugin.engines.conversation.log import MESSAGE, NOTICE, SEED, LogEntry
from bench_plugin.engines.conversation.state import Room, Seat

Prefix = Callable[[str], str]


def messages_for(room: Room, seat: Seat, prefix: Prefix) -> tuple[Message, ...]:
    """The messages ``seat`` is sent for its next reply: its system prompt, then its view."""
    system = seat.system_text()
    head = [Message("system", system)] if system else []
    if room.spec.mode == "shared":
        body, last_other = _shared_view(room, seat, prefix)
    else:
        body, last_other = list(seat.history), seat.last_other
    if not body or body[-1].role == "assistant":
        body.extend(_nothing_to_answer(room, last_other))
    return tuple(head + body)


def _shared_view(room: Room, seat: Seat, prefix: Prefix) -> tuple[list[Message], Message | None]:
    body: list[Message] = []
    last_other: Message | None = None
    for entry in room.entries:
        if _is_own(entry, seat):
            body.append(Message("assistant", entry.raw or ""))
        elif _is_said(entry):
            last_other = Message("user", prefix(entry.speaker or "") + entry.content)
            body.append(last_other)
        elif entry.kind == NOTICE:
            body.append(Message("user", entry.content))
    return body, last_other


def _is_own(entry: LogEntry, seat: Seat) -> bool:
    """A message ``seat`` gave."""
    return entry.kind == MESSAGE and entry.participant == seat.index


def _is_said(entry: LogEntry) -> bool:
    """A seed message or a participant's, with something in it."""
    return entry.kind in (SEED, MESSAGE) and bool(entry.content)


def _nothing_to_answer(room: Room, last_other: Message | None) -> list[Message]:
    """``own_last``: repeat the last message of another speaker, add ``continue_text``, or leave it."""
    policy = room.spec.own_last
    if policy == "leave":
        return []
    if policy == "repeat_other" and last_other is not None:
        return [last_other]
    return [Message("user", room.spec.continue_text)]
