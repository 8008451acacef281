"""Model-to-model conversations (n-way): participants speak in turn, round after round.

In each round every participant in the speaking order replies once (a muted one sits out), then
participants invited during the round take their first turn. A reply containing a stop sequence
ends the conversation at once, mid-round. Commands in a reply are applied in order; the log keeps
every message, notice and event. The case's transcript is that log: scorers see it as text
(speakers, notices, events), and the record keeps it as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.core.chat import CallModel, CompletionRequest, Message
from bench_plugin.core.errors import CaseError, ProviderError
from bench_plugin.core.transcript import Transcript, TurnResult, answered_turn, split_thinking
from bench_plugin.engines.conversation.commands import apply_command, find_commands, remove_spans
from bench_plugin.engines.conversation.log import MESSAGE, NOTICE, SEED, LogEntry, ending, render_text
from bench_plugin.engines.conversation.state import Room, Seat
from bench_plugin.engines.conversation.views import messages_for
from bench_plugin.engines.partial import keep_partial
from bench_plugin.engines.turns import render_template
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.spec import CaseSpec


class _Conversation:
    """One case's conversation: the room, the calls, and the model under test's turns."""

    def __init__(self, case: CaseSpec, call_model: CallModel) -> None:
        assert case.model is not None and case.conversation is not None, "expansion sets both for conversation cases"
        self.case = case
        self.spec = case.conversation
        self.call_model = call_model
        self.room = Room.start(case.conversation)
        self.turns: list[TurnResult] = []
        self.calls = 0
        self.scope: dict[str, Any] = {
            **case.variables, "task_id": case.task,
            "model": case.model.template_vars(),
        }

    def render(self, template: TemplateSpec, scope: Mapping[str, Any]) -> str:
        return render_template(self.case, template, scope)

    def prefix(self, speaker: str) -> str:
        template = self.spec.speaker_prefix
        return self.render(template, {**self.scope, "speaker": speaker}) if template else ""

    async def run(self) -> None:
        room = self.room
        room.entries.extend(LogEntry(SEED, 0, m.content, speaker=m.name) for m in self.spec.seed)
        for number in range(1, self.spec.max_turns + 1):
            room.round = number
            if await self.play_round():
                return
        room.event("end", f"Reached the limit of {self.spec.max_turns} round{'s' * (self.spec.max_turns != 1)}; "
                          "the conversation ended.")

    async def play_round(self) -> bool:
        """One round; True when a stop sequence ended the conversation."""
        room = self.room
        queue = list(room.order)
        while queue or room.pending:
            if queue:
                seat = room.seats[queue.pop(0)]
            else:  # invited during this round: they join now, and speak in every later round
                index = room.pending.pop(0)
                room.order.append(index)
                seat = room.seats[index]
                room.event("join", f"{seat.name} ({seat.model.label}) joined the conversation", seat)
            if seat.muted:
                seat.muted = False
                room.event("skip", f"{seat.name} is muted and sits out this turn", seat)
                continue
            if await self.speak(seat):
                return True
        return False

    async def speak(self, seat: Seat) -> bool:
        """One reply of ``seat``: call, commands, log, broadcast; True when it holds a stop sequence."""
        room, case = self.room, self.case
        context = messages_for(room, seat, self.prefix)
        self.calls += 1
        me = {**seat.spec.variables, "name": seat.name}
        request = CompletionRequest(
            model=seat.model, messages=context, params=seat.params(), task=case.task, run=case.run,
            turn=len(seat.completions) + 1, variables={**case.variables, "me": me, "round": room.round},
        )
        try:
            completion = await self.call_model(request)
        except ProviderError as exc:  # the log says whose call failed and why; the record keeps the log
            room.event("error", f"{seat.name}'s call to {seat.model.label} failed: {exc.kind}: {exc.message}",
                       seat, ok=False)
            raise
        seat.completions.append(completion)
        if seat.spec.candidate:
            number = len(self.turns) + 1
            self.turns.append(answered_turn(number, self.calls, context, completion, seat.model.thinking))
        answer = split_thinking(completion.text, seat.model.thinking)
        found = find_commands(answer.answer, self.spec.commands)
        def said(text: str) -> None:
            room.entries.append(LogEntry(MESSAGE, room.round, text, speaker=seat.name, participant=seat.index,
                                         raw=completion.text, thinking=answer.thinking))

        try:
            outcomes = [apply_command(f, seat, room, self.render, self.scope) for f in found]
        except CaseError:  # a command's template failed: the reply was paid for, and the kept log shows it
            said(answer.answer)
            raise
        hidden = [(f.start, f.end) for f, o in zip(found, outcomes, strict=True) if o.ok and f.spec.hide]
        visible = remove_spans(answer.answer, hidden)
        said(visible)
        notices = []
        for command, outcome in zip(found, outcomes, strict=True):
            room.event(command.spec.name, outcome.detail, seat, ok=outcome.ok)
            if outcome.ok and command.spec.notice is not None:
                variables = {**self.scope, "speaker": seat.name, "value": outcome.value}
                text = self.render(command.spec.notice, variables).strip()
                if text:
                    room.notice(text, seat)
                    notices.append(text)
        stop = next((s for s in self.spec.stop_sequences if s in answer.answer), None)
        if stop is not None:
            room.event("stop", f"{seat.name} has ended the conversation with {stop}.", seat)
            return True
        if self.spec.mode == "broadcast":
            self.broadcast(seat, completion.text, visible, notices)
        return False

    def broadcast(self, speaker: Seat, raw: str, visible: str, notices: list[str]) -> None:
        """Private histories: the reply as assistant for its speaker and as user for every other participant.

        The invited ones get it too, so they start from the message that invited them.
        """
        speaker.history.append(Message("assistant", raw))
        heard = Message("user", self.prefix(speaker.name) + visible) if visible else None
        for seat in self.room.seats:
            if seat is not speaker and heard is not None:
                seat.history.append(heard)
                seat.last_other = heard
            seat.history.extend(Message("user", text) for text in notices)

    def transcript(self) -> Transcript:
        room = self.room
        participants = [seat.to_dict() for seat in room.seats]
        conversation = {
            "mode": self.spec.mode,
            "participants": participants,
            "entries": [entry.to_dict() for entry in room.entries],
            "rounds": room.round,
            "max_turns": self.spec.max_turns,
            "ended": ending(room.entries),
        }
        text = render_text(participants, room.entries)
        candidate_calls = tuple(c for seat in room.seats if seat.spec.candidate for c in seat.completions)
        return Transcript(
            messages=tuple(_as_messages(room.entries)),
            response=text,
            completions=candidate_calls,
            turns=tuple(self.turns),
            conversation=conversation,
            text=text,
        )


def _as_messages(entries: list[LogEntry]) -> list[Message]:
    """The log as chat messages for the record: speakers' messages as assistant (named), seed and notices as user.

    Events are left out: they are in the record's ``conversation``.
    """
    out = []
    for entry in entries:
        if entry.kind == MESSAGE:
            out.append(Message("assistant", entry.content, name=entry.speaker))
        elif entry.kind == SEED:
            out.append(Message("user", entry.content, name=entry.speaker))
        elif entry.kind == NOTICE:
            out.append(Message("user", entry.content))
    return out


async def run_conversation(case: CaseSpec, call_model: CallModel) -> Transcript:
    """Play the case's model-to-model conversation.

    Raises:
        CaseError: when a template of the conversation fails to render (a notice, an invited
            participant's name or prompt, the speaker prefix), naming its line and key. It carries the
            conversation so far, as a failed call does.
        ProviderError: when a participant's call fails; the runner classifies it (the case is an
            infrastructure ERROR, whichever participant it was). It carries the conversation so far,
            its log ending with an ``error`` event (``engines/partial.py``).
    """
    conversation = _Conversation(case, call_model)
    try:
        await conversation.run()
    except (ProviderError, CaseError) as exc:  # what was said before is kept, and its calls counted
        keep_partial(exc, conversation.transcript())
        raise
    return conversation.transcript()
