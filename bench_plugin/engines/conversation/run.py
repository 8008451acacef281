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

from bench_plugin.core.chat import CallModel, Completion, CompletionRequest, Message
from bench_plugin.core.errors import CaseError, ProviderError
from bench_plugin.core.transcript import ThinkingSplit, Transcript, TurnResult, answered_turn, split_thinking
from bench_plugin.engines.conversation.commands import (
    FoundCommand,
    Outcome,
    apply_command,
    find_commands,
    remove_spans,
)
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
        queue = list(self.room.order)
        while queue or self.room.pending:
            seat = self.room.seats[queue.pop(0)] if queue else self.join()
            if seat.muted:
                seat.muted = False
                self.room.event("skip", f"{seat.name} is muted and sits out this turn", seat)
            elif await self.speak(seat):
                return True
        return False

    def join(self) -> Seat:
        """The next participant invited during this round: it joins now, and speaks in every later round."""
        room = self.room
        index = room.pending.pop(0)
        room.order.append(index)
        seat = room.seats[index]
        room.event("join", f"{seat.name} ({seat.model.label}) joined the conversation", seat)
        return seat

    async def speak(self, seat: Seat) -> bool:
        """One reply of ``seat``: call, commands, log, broadcast; True when it holds a stop sequence."""
        context = messages_for(self.room, seat, self.prefix)
        completion = await self.call(seat, context)
        answer = split_thinking(completion.text, seat.model.thinking)
        visible, notices = self.apply_commands(seat, completion.text, answer)
        stop = next((s for s in self.spec.stop_sequences if s in answer.answer), None)
        if stop is not None:
            self.room.event("stop", f"{seat.name} has ended the conversation with {stop}.", seat)
            return True
        if self.spec.mode == "broadcast":
            self.broadcast(seat, completion.text, visible, notices)
        return False

    async def call(self, seat: Seat, context: tuple[Message, ...]) -> Completion:
        """Call ``seat``'s model; a call of the model under test is also one of the case's turns."""
        room, case = self.room, self.case
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
        return completion

    def apply_commands(self, seat: Seat, raw: str, answer: ThinkingSplit) -> tuple[str, list[str]]:
        """Apply the reply's commands and log the reply without those that hide themselves.

        Returns:
            The reply as the others see it, and the notices the commands gave.
        """
        found = find_commands(answer.answer, self.spec.commands)
        try:
            outcomes = [apply_command(f, seat, self.room, self.render, self.scope) for f in found]
        except CaseError:  # a command's template failed: the reply was paid for, and the kept log shows it
            self.said(seat, answer.answer, raw, answer)
            raise
        visible = remove_spans(answer.answer, _hidden_spans(found, outcomes))
        self.said(seat, visible, raw, answer)
        notices = [self.report(seat, command, outcome) for command, outcome in zip(found, outcomes, strict=True)]
        return visible, [text for text in notices if text]

    def said(self, seat: Seat, text: str, raw: str, answer: ThinkingSplit) -> None:
        """Log ``seat``'s reply as ``text``, keeping the raw reply and its thinking."""
        self.room.entries.append(LogEntry(MESSAGE, self.room.round, text, speaker=seat.name, participant=seat.index,
                                          raw=raw, thinking=answer.thinking))

    def report(self, seat: Seat, command: FoundCommand, outcome: Outcome) -> str:
        """Log a command's event and, when it worked, its notice; the notice's text ("" when none)."""
        self.room.event(command.spec.name, outcome.detail, seat, ok=outcome.ok)
        if not outcome.ok or command.spec.notice is None:
            return ""
        variables = {**self.scope, "speaker": seat.name, "value": outcome.value}
        text = self.render(command.spec.notice, variables).strip()
        if text:
            self.room.notice(text, seat)
        return text

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


def _hidden_spans(found: list[FoundCommand], outcomes: list[Outcome]) -> list[tuple[int, int]]:
    """Where the commands that worked and hide themselves are in the reply."""
    return [(f.start, f.end) for f, o in zip(found, outcomes, strict=True) if o.ok and f.spec.hide]


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
