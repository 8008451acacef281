"""Scripted multi-turn conversations (MT-Bench style): user turns from the suite, answers from the model.

Each turn is rendered when the conversation reaches it, so it can read the earlier answers; the
model is sent the whole conversation so far, with its own earlier replies as it gave them (raw,
thinking included). A phase starts a fresh conversation; variables and answers carry over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.chat import CallModel, Completion, CompletionRequest, Message
from bench_plugin.core.errors import CaseError, ProviderError
from bench_plugin.core.transcript import Transcript, TurnResult, answered_turn, skipped_turn
from bench_plugin.engines.partial import keep_partial
from bench_plugin.suite.gates import evaluate_gate
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.spec import CaseSpec, PhaseSpec, TurnSpec
from bench_plugin.suite.templates import TemplateRenderer


@dataclass
class _Progress:
    """What the conversation has produced so far, across phases."""

    messages: list[Message] = field(default_factory=list)
    turns: list[TurnResult] = field(default_factory=list)
    completions: list[Completion] = field(default_factory=list)

    @property
    def answered(self) -> list[TurnResult]:
        return [turn for turn in self.turns if turn.answered]

    def transcript(self) -> Transcript:
        """The conversation so far; the response is the last answer given."""
        answered = self.answered
        return Transcript(
            messages=tuple(self.messages),
            response=(answered[-1].answer or "") if answered else "",
            completions=tuple(self.completions),
            turns=tuple(self.turns),
        )


async def run_turns(case: CaseSpec, call_model: CallModel) -> Transcript:
    """Play the case's scripted turns against its model, phase by phase.

    A turn whose ``when:`` gate does not hold on the last answer is skipped (recorded, not sent).

    Raises:
        CaseError: when a turn's template fails to render (it names the turn's line and key).
        ProviderError: when a call fails; the runner classifies it.
        Either carries the turns answered before (``engines/partial.py``): they were paid for.
    """
    assert case.model is not None and case.turns is not None, "expansion sets both for cases with turns"
    progress = _Progress()
    try:
        await _play(case, call_model, progress)
    except (ProviderError, CaseError) as exc:  # the record keeps the turns answered before this one
        keep_partial(exc, progress.transcript())
        raise
    return progress.transcript()


async def _play(case: CaseSpec, call_model: CallModel, progress: _Progress) -> None:
    """Each phase's turns in order, into ``progress``."""
    assert case.turns is not None and case.model is not None
    index = 0
    for phase_number, phase in enumerate(case.turns.phases, 1):
        history = list(phase_system(case, phase, progress.answered, phase_number, index + 1))
        progress.messages.extend(history)
        for turn in phase.turns:
            index += 1
            user = open_turn(case, turn, progress.answered, index, phase_number)
            if isinstance(user, TurnResult):
                progress.turns.append(user)
                continue
            history.append(user)
            progress.messages.append(user)
            call = len(progress.completions) + 1
            request = CompletionRequest(
                model=case.model, messages=tuple(history), task=case.task, run=case.run, turn=call,
                variables=case.variables,
            )
            completion = await call_model(request)
            progress.completions.append(completion)
            progress.turns.append(
                answered_turn(index, call, tuple(history), completion, case.model.thinking, phase=phase_number)
            )
            # the model's own history keeps its reply as given; the transcript also names the speaker
            history.append(Message("assistant", completion.text))
            progress.messages.append(Message("assistant", completion.text, name=case.model.label))


def phase_system(
    case: CaseSpec, phase: PhaseSpec, answered: list[TurnResult], phase_number: int, next_turn: int
) -> tuple[Message, ...]:
    """The system message(s) a phase starts with: its own ``system``, else the task's."""
    if phase.system is None:
        return tuple(message for message in case.messages if message.role == "system")
    text = render_template(case, phase.system, turn_scope(case, answered, next_turn, phase_number))
    return (Message("system", text),) if text else ()


def open_turn(
    case: CaseSpec, turn: TurnSpec, answered: list[TurnResult], index: int, phase: int
) -> Message | TurnResult:
    """The user message of ``turn``, or the skipped turn when its gate does not hold on the last answer."""
    held, reason = evaluate_gate(turn.when, (answered[-1].answer or "") if answered else "")
    if not held:
        return skipped_turn(index, reason, phase=phase)
    text = render_template(case, turn.content, turn_scope(case, answered, index, phase))
    return Message("user", text, parts=turn.media)


def turn_scope(case: CaseSpec, answered: list[TurnResult], turn: int, phase: int) -> dict[str, Any]:
    """What turn templates see: the case variables, ``model``, ``task_id`` and the turn's context.

    The context is the earlier answers (``answers``, ``raw_answers``), ``turn`` (this turn's position in the
    task) and ``phase``. Collection checks turn templates against these names: ``suite.turns.TURN_NAMES``.
    """
    assert case.model is not None
    return {
        **case.variables,
        "model": case.model.template_vars(),
        "task_id": case.task,
        "answers": [t.answer for t in answered],
        "raw_answers": [t.raw for t in answered],
        "turn": turn,
        "phase": phase,
    }


def render_template(case: CaseSpec, template: TemplateSpec, scope: Mapping[str, Any]) -> str:
    """Render a turn or phase template; text taken from data (``literal``) is sent as it is."""
    if template.literal:
        return template.source
    renderer = case.templates or TemplateRenderer(case.suite_dir, case.path)
    if template.from_file:
        return renderer.render_file(template.source, scope, key=template.key, line=template.line)
    return renderer.render(template.source, scope, key=template.key, line=template.line)
