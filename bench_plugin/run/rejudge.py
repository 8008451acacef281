"""Re-judging (``--bench-rejudge``): a stored record back into the transcript its scorers read, and its history.

The scorers of a case read a ``Transcript``: the messages, the final answer, the turns (each with the
conversation the model was sent for it), a model-to-model conversation's text, an agent's tool calls,
check results and final files. A record keeps all of that, so re-judging rebuilds the transcript from
the record alone and never calls the model under test. Two things cannot come back from a record:

- an agent's workspace is removed when its case ends, so ``completion`` checks are not run again: their
  stored results are scored again (``check_agent_checks`` refuses when the suite's checks changed since);
- the conversation a participant was sent for one turn of a model-to-model conversation is its own view
  of the room, which the record keeps only when the case had a ``per_turn`` scorer when it ran.

For scripted multi-turn, agent and single-turn cases a turn's context is derived from the transcript
(``derive_contexts``); when the derivation would not give back what the model was sent, the record keeps
that turn's context (``context`` in the turn entry, see ``case.turn_entries``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bench_plugin.core.chat import Message, ToolCall
from bench_plugin.core.errors import CaseError
from bench_plugin.core.transcript import (
    AgentRun,
    CheckResult,
    StructuredOutput,
    ToolCallRecord,
    Transcript,
    TurnResult,
)
from bench_plugin.engines.agent.view import transcript_text
from bench_plugin.results.record import INVALID, CaseRecord
from bench_plugin.suite.asked import asked_digest
from bench_plugin.suite.spec import CaseSpec, ScorerSpec


def rejudge_problem(record: CaseRecord) -> str | None:
    """Why ``record`` cannot be judged again (None: it can).

    A record can be judged again when its model finished: it has a transcript that is not the partial
    one of a failed call. A case whose judge failed (an ERROR from a judge's call) or whose scoring
    broke (a judge template) can; a case whose model call failed, that was skipped or never ran cannot.
    """
    error = record.error or {}
    if not record.transcript:
        why = f"{record.status}: {record.reason}" if record.reason else record.status
        return f"its stored record has no transcript ({why})"
    if error.get("partial"):
        why = "a model call failed" if record.status != INVALID else "the case failed before its model finished"
        return f"its stored transcript is partial: {why} ({record.reason})"
    return None


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """A message as records keep it (``Message.to_dict``) back into a ``Message``."""
    calls = tuple(ToolCall(str(call.get("id", "")), str(call.get("name", "")), str(call.get("arguments", "{}")))
                  for call in data.get("tool_calls") or ())
    return Message(str(data.get("role", "")), str(data.get("content") or ""), name=data.get("name"),
                   tool_calls=calls, tool_call_id=data.get("tool_call_id"))


def transcript_from_record(record: CaseRecord, *, phased: bool, need_contexts: bool = False) -> Transcript:
    """The transcript the case's scorers read, rebuilt from its record; ``completions`` stay empty.

    Args:
        record: a record ``rejudge_problem`` accepts.
        phased: whether the case plays scripted turns (``turns:`` or ``phases:``).
        need_contexts: whether a ``per_turn`` scorer will read each turn's context.

    Raises:
        ValueError: ``need_contexts`` and a turn's context is not in the record (it names the turn).
    """
    messages = tuple(message_from_dict(m) for m in record.transcript)
    agent = agent_from_dict(record.agent) if record.agent is not None else None
    contexts = stored_contexts(record, messages, phased=phased)
    turns = tuple(_turn(entry, _context_of(entry, contexts, record, need_contexts)) for entry in record.turns)
    structured = StructuredOutput.from_dict(record.structured_output) if record.structured_output else None
    return Transcript(messages=messages, response=record.response or "", completions=(), turns=turns,
                      conversation=record.conversation, text=_judged_text(record, messages, agent), agent=agent,
                      structured_output=structured)


def _context_of(entry: Mapping[str, Any], contexts: Mapping[int, tuple[Message, ...]], record: CaseRecord,
                needed: bool) -> tuple[Message, ...]:
    """An answered turn's context; refused when a per_turn scorer needs it and the record cannot give it back."""
    context = contexts.get(int(entry.get("index", 0)))
    if needed and context is None and not entry.get("skipped") and entry.get("answer") is not None:
        where = "a model-to-model conversation keeps it only with a per_turn scorer when the case ran" \
            if record.conversation is not None else "the transcript does not show it"
        raise ValueError(f"turn {entry.get('index')}'s context (what the model was sent) is not stored: {where}")
    return context or ()


def _judged_text(record: CaseRecord, messages: tuple[Message, ...], agent: AgentRun | None) -> str | None:
    """What judges read besides the answer: a conversation's text, or an agent's steps; None for a plain case."""
    if record.conversation is not None:
        return record.response or ""  # a conversation's response is the text judges read
    return transcript_text(messages, agent.tool_calls) if agent is not None else None


def _turn(entry: Mapping[str, Any], context: tuple[Message, ...]) -> TurnResult:
    return TurnResult(
        index=int(entry.get("index", 0)), phase=int(entry.get("phase", 1)), user=entry.get("user"),
        raw=entry.get("raw"), answer=entry.get("answer"), thinking=entry.get("thinking"),
        format_valid=entry.get("format_valid"), skipped=bool(entry.get("skipped")),
        skip_reason=entry.get("skip_reason"), call=entry.get("call"), latency_s=entry.get("latency_s"),
        input_tokens=entry.get("input_tokens"), output_tokens=entry.get("output_tokens"), context=context,
    )


def stored_contexts(record: CaseRecord, messages: tuple[Message, ...], *,
                    phased: bool) -> dict[int, tuple[Message, ...]]:
    """Turn index -> the context the model was sent: kept in the turn entry, else derived from the transcript."""
    derived = {} if record.conversation is not None else derive_contexts(
        messages, record.turns, record.model_label, [message_from_dict(m) for m in record.messages], phased=phased)
    contexts: dict[int, tuple[Message, ...]] = {}
    for entry in record.turns:
        index = int(entry.get("index", 0))
        if "context" in entry:  # kept by the run: the derivation would not give it back
            kept = entry["context"]
            if isinstance(kept, list):
                contexts[index] = tuple(message_from_dict(m) for m in kept)
        elif index in derived:
            contexts[index] = derived[index]
    return contexts


def derive_contexts(
    messages: Sequence[Message],
    turns: Sequence[Mapping[str, Any]],
    label: str,
    prompt: Sequence[Message],
    *,
    phased: bool,
) -> dict[int, tuple[Message, ...]]:
    """What the model was sent for each answered turn, read off the transcript.

    Without scripted turns (one prompt: a single-turn or agent case) the context is the prompt.
    With them, each phase starts with its system messages, and each turn's context is the phase so far
    up to the turn's user message; the transcript names the model on its replies, the model's own
    history does not (``label``). Turns that cannot be placed are left out.
    """
    if not phased:
        first = next((t for t in turns if not t.get("skipped") and t.get("answer") is not None), None)
        return {int(first.get("index", 0)): tuple(prompt)} if first is not None else {}
    unnamed = [replace(m, name=None) if m.role == "assistant" and m.name == label else m for m in messages]
    return _TranscriptWalk(unnamed).contexts(turns)


def _sent(turn: Mapping[str, Any]) -> bool:
    """Whether a turn's question was sent: a gate or the budget keeps a skipped one back, unless it went unanswered."""
    return not turn.get("skipped") or str(turn.get("skip_reason") or "").startswith("not answered")


class _TranscriptWalk:
    """Reads a phased transcript turn by turn: each phase's system messages, then user message and replies."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.position = 0
        self.history: list[Message] = []

    def contexts(self, turns: Sequence[Mapping[str, Any]]) -> dict[int, tuple[Message, ...]]:
        contexts: dict[int, tuple[Message, ...]] = {}
        phase: int | None = None
        for turn in turns:
            if turn.get("phase", 1) != phase:
                phase = turn.get("phase", 1)
                self.start_phase()
            if not _sent(turn):
                continue
            if not self.at_role("user"):
                break
            context = self.take_exchange()
            if not turn.get("skipped"):
                contexts[int(turn.get("index", 0))] = context
        return contexts

    def at_role(self, *roles: str) -> bool:
        return self.position < len(self.messages) and self.messages[self.position].role in roles

    def start_phase(self) -> None:
        """A phase starts its history afresh with its system messages."""
        start = self.position
        while self.at_role("system"):
            self.position += 1
        self.history = list(self.messages[start:self.position])

    def take_exchange(self) -> tuple[Message, ...]:
        """The context of the user message here (the history and it); then its replies join the history."""
        start = self.position
        context = (*self.history, self.messages[start])
        self.position += 1
        while self.at_role("assistant", "tool"):
            self.position += 1
        self.history.extend(self.messages[start:self.position])
        return context


def agent_from_dict(data: Mapping[str, Any]) -> AgentRun:
    """An agent run as records keep it (``AgentRun.to_dict``) back into an ``AgentRun``."""
    budget = data.get("budget") or {}
    calls = tuple(
        ToolCallRecord(
            step=int(call.get("step", 0)), turn=int(call.get("turn", 0)), id=str(call.get("id", "")),
            name=str(call.get("name", "")), arguments=call.get("arguments"), ok=bool(call.get("ok")),
            output=str(call.get("output") or ""), error=call.get("error"), family=str(call.get("family", "unknown")),
            mutating=bool(call.get("mutating")), target=call.get("target"), command=call.get("command"),
            duration_s=float(call.get("duration_s") or 0.0),
        )
        for call in data.get("tool_calls") or ()
    )
    checks = {str(name): tuple(CheckResult(str(c.get("name", "")), bool(c.get("passed")), str(c.get("detail", "")))
                               for c in results)
              for name, results in (data.get("checks") or {}).items()}
    return AgentRun(
        tools=tuple(data.get("tools") or ()), tool_calls=calls, checks=checks,
        files=tuple(dict(entry) for entry in data.get("files") or ()), steps=int(budget.get("steps", 0)),
        max_steps=int(budget.get("max_steps", 0)), max_seconds=float(budget.get("max_seconds", 0.0)),
        elapsed_s=float(budget.get("elapsed_s", 0.0)), stopped=budget.get("stopped"), sandbox=data.get("sandbox"),
    )


def changed_since(case: CaseSpec, stored: CaseRecord) -> list[str]:
    """A note when the suite now asks the case something else than the stored answer answered.

    Resuming runs such a case again (``run_history.fingerprint``); re-judging scores the answer as it was
    given, which the record must say.
    """
    model_id = case.model.id if case.model else case.model_name
    setup_changed = stored.asked is not None and stored.asked != asked_digest(case)
    if stored.model_id == model_id and stored.messages == [message.to_dict() for message in case.messages] \
            and not setup_changed:
        return []
    what = "model" if stored.model_id != model_id else "prompt" if not setup_changed else \
        "turns" if case.turns is not None else "conversation" if case.conversation is not None else "tools or workspace"
    return [f"the suite's {what} changed since this answer was given: it was judged as the answer to the stored "
            "one (run the case again to judge an answer to the new one)"]


def check_agent_checks(case: CaseSpec, run: AgentRun | None) -> list[str]:
    """The notes a re-judged agent case carries; refuse when its ``completion`` checks changed since it ran.

    Returns:
        Notes for the record: the checks' results are the stored ones (they are not run again).

    Raises:
        CaseError: a ``completion`` scorer's checks differ in number or names from the record's results:
            they would need the workspace, which is gone; the case must be run again.
    """
    completion = [spec for spec in case.scorers if spec.type == "completion"]
    if not completion:
        return []
    stored = run.checks if run is not None else {}
    for spec in completion:
        _refuse_changed_checks(case, spec, stored.get(spec.name, ()))
    scorers = ", ".join(spec.name for spec in completion)
    return [f"{scorers}: the results of the checks run on the final workspace when the case ran are scored "
            "again; the checks are not run again (the workspace is gone)"]


def _refuse_changed_checks(case: CaseSpec, spec: ScorerSpec, results: Sequence[CheckResult]) -> None:
    """A completion scorer's checks must be the ones whose results the record keeps (same number, same names)."""
    wanted = [c for c in spec.options.get("checks") or () if isinstance(c, Mapping)]
    names = [_check_name(c) for c in wanted]
    same = len(results) == len(wanted) and all(
        name is None or name == result.name for name, result in zip(names, results, strict=True))
    if not same:
        raise CaseError(
            f"cannot re-judge {spec.name}: its checks ({len(wanted)}) are not the ones stored when the case ran "
            f"({len(results)}); checks run on the agent's final workspace, which is gone: run the case again "
            "(without --bench-rejudge)", path=case.path, line=spec.line, key=spec.key)


def _check_name(check: Mapping[str, Any]) -> str | None:
    """The name a check's result carries, as ``final_checks.run_check`` gives it; None when a template decides."""
    name = check.get("name")
    if name is None:
        name = f"file {check['file']}" if "file" in check else "answer" if "answer" in check else \
            f"command {check.get('command')!r}"
    text = str(name)
    return None if "{{" in text or "{%" in text else text


def judged_again(stored: CaseRecord, fresh: CaseRecord, *, at: str, notes: Sequence[str]) -> CaseRecord:
    """``stored`` with the scores of ``fresh`` (a re-judgment), its earlier scores kept in ``judgments``.

    What the model did (transcript, usage, timings, the case's own calls) stays the stored one; the
    judges' calls and usage are the new ones (``call_log`` keeps the case's calls, then the judges').
    """
    own_calls = [call for call in stored.call_log if call.get("purpose") != "judge"]
    usage = {**stored.usage}
    if "judge" in fresh.usage:
        usage["judge"] = fresh.usage["judge"]
    return replace(
        stored, status=fresh.status, reason=fresh.reason, scores=fresh.scores, composite=fresh.composite,
        threshold=fresh.threshold, error=_error_after(fresh.error, len(own_calls)),
        turns=_turns_rescored(stored, fresh), usage=usage, call_log=[*own_calls, *fresh.call_log],
        rejudged={"at": at, "notes": list(notes)},
        judgments=[*stored.judgments, _earlier_judgment(stored)], scored_by=fresh.scored_by,
    )


def _earlier_judgment(stored: CaseRecord) -> dict[str, Any]:
    """What ``judgments`` keeps of the scores a re-judgment replaces."""
    earlier: dict[str, Any] = {
        "judged_at": (stored.rejudged or {}).get("at") or stored.started_at,
        "status": stored.status, "reason": stored.reason, "composite": stored.composite,
        "threshold": stored.threshold, "scores": stored.scores, "judge_usage": stored.usage.get("judge"),
    }
    if stored.rejudged and stored.rejudged.get("notes"):
        earlier["notes"] = stored.rejudged["notes"]
    return earlier


def _turns_rescored(stored: CaseRecord, fresh: CaseRecord) -> list[dict[str, Any]]:
    """The stored turns with the fresh per-turn scores."""
    per_turn = {int(entry.get("index", 0)): entry.get("scores", {}) for entry in fresh.turns}
    return [{**entry, "scores": per_turn.get(int(entry.get("index", 0)), {})} for entry in stored.turns]


def _error_after(error: dict[str, Any] | None, own_calls: int) -> dict[str, Any] | None:
    """A judge's failed call, numbered after the case's own calls (the call log keeps those first)."""
    if error is not None and isinstance(error.get("call"), dict) and "index" in error["call"]:
        return {**error, "call": {**error["call"], "index": error["call"]["index"] + own_calls}}
    return error
