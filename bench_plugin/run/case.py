"""One case from spec to record: engine, scorers, verdict, and which of the outcomes it was.

Three kinds of bad news are kept apart: the model did badly (a low score, FAILED), the grader could
not decide (UNSCORED, left out of averages) and the infrastructure failed (ERROR, re-runnable).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from bench_plugin.calls.cache import HIT_COST
from bench_plugin.calls.call_log import CallEntry, CallLog
from bench_plugin.calls.pricing import Cost, add_costs, call_cost
from bench_plugin.core.chat import CallModel, Completion, EmbedTexts
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import CaseError, ProviderError, ReplayMissError, SandboxError, UnknownName, all_of
from bench_plugin.core.transcript import Transcript
from bench_plugin.engines.partial import partial_of
from bench_plugin.engines.registry import Engine
from bench_plugin.results import record as rec
from bench_plugin.results.record import CaseRecord, json_safe
from bench_plugin.run.catalog import Catalog
from bench_plugin.run.recorded_verdicts import check_recorded_verdicts
from bench_plugin.run.rejudge import (
    changed_since,
    check_agent_checks,
    derive_contexts,
    judged_again,
    transcript_from_record,
)
from bench_plugin.scoring.bind import CaseScoring, ScoringBinder
from bench_plugin.scoring.context import ScoreSet, ScoringContext
from bench_plugin.scoring.score import before_case, score_case
from bench_plugin.suite.asked import asked_digest
from bench_plugin.suite.spec import CaseSpec


@dataclass(frozen=True, slots=True)  # slots: every item keeps its prepared case until it runs
class PreparedCase:
    """A case ready to run: its spec, the engine it names looked up and its scoring bound once, at collection.

    ``engine`` and ``scoring`` are None when the case cannot run (``spec.problem`` says why).
    ``stored`` is set under ``--bench-rejudge``: the case's stored record, whose transcript is scored
    again instead of running the engine (the model under test is not called).
    """

    spec: CaseSpec
    engine: Engine | None = None
    scoring: CaseScoring | None = None
    stored: CaseRecord | None = None
    scored_by: str | None = None  # a named run's: how the case is scored (``suite.asked.scoring_digest``)


class CasePreparer:
    """Prepares the cases of one suite file with the catalog of its folder.

    Scorers and composites shared by many cases are parsed once (the binder caches them by spec).
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._binder = ScoringBinder(catalog.scorers)

    def prepare(self, case: CaseSpec) -> PreparedCase:
        """Look up what ``case`` names; a name the catalog does not know becomes the case's problem."""
        if case.problem is not None:
            return PreparedCase(self._with_scoring_problems(case))
        try:
            engine = self.catalog.engines.get(case.engine)
        except UnknownName as exc:
            key = f"tasks[{case.task_index}].engine" if case.task_index is not None else "engine"
            problem = CaseError(str(exc), path=case.path, line=case.line, key=key)
            return PreparedCase(replace(case, problem=problem))
        try:
            scoring = self._binder.bind(case)
        except CaseError as exc:
            return PreparedCase(replace(case, problem=exc))
        return PreparedCase(case, engine, scoring)


    def _with_scoring_problems(self, case: CaseSpec) -> CaseSpec:
        """A case that cannot run, with its scoring's problems said too: a prompt and a regex both wrong, both named.

        Only when its scorers were rendered (else their templates as written would read as mistakes) and its
        model is known (what only the case can tell is checked against it).
        """
        if not case.scoring_rendered or case.model is None or case.problem is None:
            return case
        try:
            self._binder.bind(case)
        except CaseError as exc:
            return replace(case, problem=all_of([case.problem, exc]))
        return case


async def execute_case(
    prepared: PreparedCase, nodeid: str, call_model: CallModel, calls: CallLog | None = None,
    embed: EmbedTexts | None = None,
) -> CaseRecord:
    """Run and score one case. Never raises for a problem of the case: it becomes the record's status.

    ``calls`` is where the runner logs every call ``call_model`` (and ``embed``, for ``similar``
    scorers) makes for the case (judges and failed calls included): the record then keeps them
    (``call_log``), the judges' usage apart, and the attempts of the call that failed.
    """
    notes: list[str] = []  # what a re-judgment could not do as the run did
    record = await _run_and_score(prepared, nodeid, call_model, embed, notes)
    record = record if calls is None else with_calls(record, calls)
    if prepared.scored_by is not None:
        record = replace(record, scored_by=prepared.scored_by)
    if prepared.stored is not None:
        at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return judged_again(prepared.stored, record, at=at, notes=notes)
    return record


async def _run_and_score(
    prepared: PreparedCase, nodeid: str, call_model: CallModel, embed: EmbedTexts | None = None,
    notes: list[str] | None = None,
) -> CaseRecord:
    case = prepared.spec
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    transcript: Transcript | None = None
    try:
        transcript = await _transcript(prepared, call_model, notes if notes is not None else [])
        assert prepared.scoring is not None, "CasePreparer sets the scoring of every case without a problem"
        context = ScoringContext(case, transcript.response, transcript.messages, call_model, turns=transcript.turns,
                                 transcript_text=transcript.text, agent=transcript.agent, embed=embed,
                                 structured_output=transcript.structured_output)
        scores = _model_failure(await score_case(context, prepared.scoring), transcript)
        status, reason = _verdict(scores)
        return build_record(case, nodeid, status, reason, transcript=transcript, scores=scores,
                            started_at=started_at, duration_s=time.perf_counter() - started)
    except (Exception, SystemExit) as exc:  # every failure ends this case alone, as a record
        status, reason, error = _failure(exc)
        if transcript is None and isinstance(exc, (CaseError, ProviderError)) \
                and (transcript := partial_of(exc)) is not None:
            error["partial"] = True  # what was said (and paid for) before the failure, kept to read, resume, re-judge
        return build_record(case, nodeid, status, reason, transcript=transcript, error=error,
                            started_at=started_at, duration_s=time.perf_counter() - started)


async def _transcript(prepared: PreparedCase, call_model: CallModel, notes: list[str]) -> Transcript:
    """The engine's transcript, or under --bench-rejudge the stored one (no call to the model under test)."""
    case = prepared.spec
    if case.problem is not None:
        raise case.problem
    assert prepared.engine is not None and prepared.scoring is not None, \
        "CasePreparer sets the engine and scoring of every case without a problem"
    check_recorded_verdicts(case, prepared.scoring)  # skip before the model is called when no verdict could be served
    await before_case(case, prepared.scoring)  # and when no sandbox could run a scorer's programs
    if prepared.stored is None:
        return await prepared.engine(case, call_model)
    transcript = _stored_transcript(case, prepared.stored)
    notes.extend(check_agent_checks(case, transcript.agent))
    notes.extend(changed_since(case, prepared.stored))
    return transcript


def _failure(exc: BaseException) -> tuple[str, str, dict[str, Any]]:
    """A failed case's status, reason and ``error``, by what failed: the suite, a call, the sandbox, or us."""
    if isinstance(exc, CaseError):
        return rec.INVALID, str(exc), {"kind": "suite", "type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ProviderError):
        status = rec.SKIPPED if isinstance(exc, ReplayMissError) else rec.ERROR
        error: dict[str, Any] = {"kind": exc.kind, "type": type(exc).__name__, "message": exc.message,
                                 "status": exc.status}
        if exc.expected:  # still an infrastructure failure; pytest shows it as XFAIL (nodes.py)
            error["expected"] = True
        return status, f"{exc.kind}: {exc.message}", error
    if isinstance(exc, SandboxError):  # the machine cannot isolate the case's programs: nothing was run, and
        # re-running cannot help; skipped with the fix, like a replay miss, and the rest of the run goes on
        return rec.SKIPPED, f"sandbox: {exc}", {"kind": "sandbox", "type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, SystemExit):  # code of the project's (an engine from conftest.py) called sys.exit()
        message = f"the case's code called sys.exit({exc.code!r}), which ends this case, not the run"
        return rec.INVALID, message, {"kind": "suite", "type": "SystemExit", "message": message,
                                      "traceback": traceback.format_exc()}
    message = f"internal error in bench_plugin: {type(exc).__name__}: {exc}"
    return rec.ERROR, message, {"kind": "internal", "type": type(exc).__name__, "message": message,
                                "traceback": traceback.format_exc()}


def _stored_transcript(case: CaseSpec, stored: CaseRecord) -> Transcript:
    """The transcript of a stored record, for re-judging.

    Raises:
        CaseError: a ``per_turn`` scorer needs a turn's context that the record cannot give back.
    """
    try:
        return transcript_from_record(stored, phased=case.turns is not None,
                                      need_contexts=any(spec.per_turn for spec in case.scorers))
    except ValueError as exc:
        raise CaseError(f"cannot re-judge: {exc}", path=case.path, line=case.line) from None


def _model_failure(scores: ScoreSet, transcript: Transcript) -> ScoreSet:
    """The scores, failed whatever they are when an ``output_schema:`` answer does not parse or match, or refused.

    The model did badly (FAILED, with the reason), which is neither an error of the case nor a grader's doubt;
    the components keep their values, which say what else was right.
    """
    structured = transcript.structured_output
    failure = structured.failure if structured is not None else None
    if failure is None:
        return scores
    return replace(scores, passed=False, pass_detail=failure)


def _verdict(scores: ScoreSet) -> tuple[str, str]:
    if scores.passed is None:
        return rec.UNSCORED, scores.unscored_reason or "the grader could not decide"
    if scores.composite is None and scores.passed:
        return rec.PASSED, "no scorers: the call succeeded"
    status = rec.PASSED if scores.passed else rec.FAILED
    if scores.pass_detail or scores.threshold is None:  # the scorers' pass rules decided (scoring/pass_rule.py)
        return status, scores.pass_detail
    return status, _against_threshold(scores)


def _against_threshold(scores: ScoreSet) -> str:
    """The composite against the pass threshold, and when it fails, what lowered it."""
    comparison = ">=" if scores.passed else "<"
    head = f"score {scores.composite:.4f} {comparison} threshold {scores.threshold:g}"
    shown = "" if scores.passed else _what_lowered(scores)
    return f"{head} ({shown})" if shown else head


def _what_lowered(scores: ScoreSet) -> str:
    """The first three components below full marks, and the components the composite left out."""
    failing = [c for c in scores.components if c.name not in scores.dropped
               and (c.passed is False or (c.value is not None and c.value < 1))]
    return "; ".join([*(f"{c.name}={c.value:.4g}: {c.detail}" for c in failing[:3] if c.value is not None),
                      # a component the composite left out did not lower the score: say so, not its value
                      *(f"{name} not counted: {why}" for name, why in scores.dropped.items())])


def build_record(
    case: CaseSpec,
    nodeid: str,
    status: str,
    reason: str,
    *,
    transcript: Transcript | None = None,
    scores: ScoreSet | None = None,
    error: dict[str, Any] | None = None,
    started_at: str | None = None,
    duration_s: float | None = None,
) -> CaseRecord:
    """The record of a case in any state; also used for cases that never ran (invalid)."""
    return CaseRecord(
        nodeid=nodeid, suite=case.suite, path=case.path, task=case.task, model=case.model_name, run=case.run,
        status=status, reason=reason, tags=list(case.tags), variables=json_safe(dict(case.variables)),
        messages=[m.to_dict() for m in case.messages], scores=scores.to_dict() if scores else None,
        composite=scores.composite if scores else None, threshold=case.pass_threshold, duration_s=duration_s,
        started_at=started_at, error=error, case_index=case.index, asked=asked_digest(case),
        cluster=case.cluster or case.task,
        turns=turn_entries(transcript, scores, case),
        **_model_fields(case), **_transcript_fields(transcript), **_call_fields(case.model, transcript),
    )


def _model_fields(case: CaseSpec) -> dict[str, Any]:
    """Who answered: a case that never got a model (invalid) names the one the suite asked for."""
    model = case.model
    if model is None:
        return {"model_id": case.model_name, "model_label": case.model_name, "model_params": {}, "provider": ""}
    return {"model_id": model.id, "model_label": model.label, "model_params": json_safe(dict(model.params)),
            "provider": model.provider.name}


def _transcript_fields(transcript: Transcript | None) -> dict[str, Any]:
    """What was said: the messages, the answer, and a conversation's or an agent's own log."""
    if transcript is None:
        return {"transcript": [], "response": None, "conversation": None, "agent": None, "structured_output": None}
    return {
        "transcript": [m.to_dict() for m in transcript.messages], "response": transcript.response,
        "conversation": json_safe(transcript.conversation) if transcript.conversation else None,
        "agent": json_safe(transcript.agent.to_dict()) if transcript.agent else None,
        "structured_output": json_safe(transcript.structured_output.to_dict()) if transcript.structured_output
        else None,
    }


def _call_fields(model: ModelSpec | None, transcript: Transcript | None) -> dict[str, Any]:
    """The calls' tokens, cost and timing; the last call's finish reason and id."""
    completions = transcript.completions if transcript else ()
    input_tokens = _sum(c.usage.input_tokens for c in completions)
    output_tokens = _sum(c.usage.output_tokens for c in completions)
    cost = _cost(model, completions, input_tokens, output_tokens)
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost.usd,
             "calls": len(completions), "attempts": sum(c.attempts for c in completions),
             **({"cost_source": cost.source} if cost.source else {}),
             **({"cost_note": cost.note} if cost.note else {})}
    if not completions:
        return {"usage": usage, "finish_reason": None, "response_id": None, "latency_s": None}
    return {"usage": usage, "finish_reason": completions[-1].finish_reason, "response_id": completions[-1].request_id,
            "latency_s": sum(c.latency_s for c in completions)}


def turn_entries(transcript: Transcript | None, scores: ScoreSet | None,
                 case: CaseSpec | None = None) -> list[dict[str, Any]]:
    """The record's ``turns``: each turn as data, with its per-turn scores (scorer name -> value).

    A turn's context (what the model was sent for it) is not kept when re-judging can read it off the
    transcript (``rejudge.derive_contexts``). When it cannot, the entry keeps it as ``context`` if the
    case has a ``per_turn`` scorer (which reads it), else ``context: null`` says it is not stored.
    """
    if transcript is None:
        return []
    per_turn = [c for c in (scores.components if scores else ()) if c.turn is not None]
    entries = []
    for turn in transcript.turns:
        entry = turn.to_dict()
        entry["scores"] = {c.scorer: c.value for c in per_turn if c.turn == turn.index}
        entries.append(entry)
    if case is not None:
        _keep_contexts(transcript, entries, case)
    return entries


def _keep_contexts(transcript: Transcript, entries: list[dict[str, Any]], case: CaseSpec) -> None:
    needed = any(spec.per_turn for spec in case.scorers)
    if transcript.conversation is not None:  # a participant's own view of the room: never in the transcript
        if needed:
            for turn, entry in zip(transcript.turns, entries, strict=True):
                if turn.answered:
                    entry["context"] = [message.to_dict() for message in turn.context]
        return
    label = case.model.label if case.model is not None else case.model_name
    derived = derive_contexts(transcript.messages, entries, label, case.messages, phased=case.turns is not None)
    for turn, entry in zip(transcript.turns, entries, strict=True):
        if turn.answered and derived.get(turn.index) != turn.context:
            entry["context"] = [message.to_dict() for message in turn.context] if needed else None


def _cost(model: ModelSpec | None, completions: Sequence[Completion], input_tokens: int | None,
          output_tokens: int | None) -> Cost:
    """The case model's cost: the suite's price on the summed tokens, else each call priced by genai-prices.

    Answers from the response cache cost nothing this run (their tokens still count in the record).
    """
    if model is None:
        return Cost(None)
    paid = [completion for completion in completions if not completion.cached]
    free = [HIT_COST] if len(paid) < len(completions) else []
    if model.pricing is not None:
        if free:
            input_tokens = _sum(c.usage.input_tokens for c in paid)
            output_tokens = _sum(c.usage.output_tokens for c in paid)
        cost = model.pricing.cost(input_tokens, output_tokens)
        return add_costs([Cost(cost, "suite" if cost is not None else None), *free])
    return add_costs([*(call_cost(model, completion.usage) for completion in paid), *free])


def with_calls(record: CaseRecord, calls: CallLog) -> CaseRecord:
    """``record`` with the calls the runner logged: ``call_log``, ``usage.judge``, and the failed call's attempts.

    The call that ended an errored case counts in ``usage`` (``calls``, ``attempts``) when it was the
    case's own, and ``error`` says which call it was and how many attempts it took.
    """
    usage = {**record.usage, "judge": calls.judge_usage()}
    error, reason = record.error, record.reason
    failed = calls.failed_call()
    if failed is not None and record.status == rec.ERROR and error is not None:
        index = calls.entries.index(failed) + 1
        error = {**error, "attempts": failed.attempts,
                 "call": {"purpose": failed.purpose, "model": failed.model, "turn": failed.turn, "index": index}}
        if failed.purpose == "candidate" and failed.model == record.model:  # not a conversation partner's
            usage["calls"] = usage.get("calls", 0) + 1
            usage["attempts"] = usage.get("attempts", 0) + failed.attempts
        words = failed_call_words(failed, index, record, bool(error.get("partial")))
        reason = f"{reason} ({words})" if words else reason
    return replace(record, usage=usage, error=error, reason=reason, call_log=calls.to_list())


def failed_call_words(failed: CallEntry, index: int, record: CaseRecord, partial: bool) -> str:
    """Which call ended the case, in words (``call 4, partner's turn 2; what was said before it is kept``).

    Empty for the model's own answer to a one-prompt case: the reason says all there is.
    """
    if failed.purpose == "judge":
        who = f"judge {failed.model}"
    elif failed.model != record.model:
        who = f"{failed.model}'s turn {failed.turn}" if failed.turn else failed.model
    elif partial or failed.turn > 1:
        who = f"turn {failed.turn}"
    else:
        return ""
    return f"call {index}, {who}" + ("; what was said before it is kept" if partial else "")


def _sum(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
