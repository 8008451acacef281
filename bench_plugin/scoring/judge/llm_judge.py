"""The ``llm_judge`` scorer: a judge model reads the answer and gives a number on a scale.

A reply with no readable verdict makes the component unscored (never a silent 0), and a failed call
raises ``ProviderError`` so the runner can tell infrastructure failures from bad answers.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.chat import Completion, CompletionRequest, Message
from bench_plugin.endpoints import ModelSpec
from bench_plugin.engines.agent.view import judge_variables
from bench_plugin.errors import CaseError
from bench_plugin.scoring.checks.kinds import TARGETS
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.judge_reply import (
    candidate_names,
    check_reading,
    participant_names,
    read_report,
    reading_fields,
)
from bench_plugin.scoring.judge.rubric import rubric_from_options, rubric_variables
from bench_plugin.scoring.per_turn import judged_turn, pick_for_turn, turn_variables
from bench_plugin.suite.spec import CaseSpec, ScorerSpec
from bench_plugin.suite.templates import render_standalone

OPTION_KEYS = (
    "judge",
    "prompt",
    "prompt_file",
    "system",
    "system_file",
    "reference",
    "scale",
    "parse",
    "clamp",
    "target",
    "layout",
    "rubric",
    "participants",
)
DEFAULT_SCALE = (1.0, 10.0)
# standalone: the prompt is the judge's user message; conversation: the prompt is a leading system
# message, then the case's conversation with the answer as the last assistant message
LAYOUTS = ("standalone", "conversation")
_IGNORED_KEYS = frozenset({"name", "type"})


def _judge_name(options: Mapping[str, Any]) -> str | None:
    name = options.get("judge")
    return name if isinstance(name, str) and name else None


def judge_names(spec: ScorerSpec) -> list[str]:
    """The judges a scorer spec calls on, so validation can check them against ``judges:``:
    ``judge``, a panel's ``judges`` and its ``consensus.judge``."""
    options = spec.options
    names = [_judge_name(options)]
    panel = options.get("judges")
    if isinstance(panel, list):
        names += [name for name in panel if isinstance(name, str)]
    consensus = options.get("consensus")
    if isinstance(consensus, Mapping):
        names.append(_judge_name(consensus))
    return [name for name in dict.fromkeys(names) if name]


def _scale(options: Mapping[str, Any]) -> tuple[float, float]:
    rubric = rubric_from_options(options.get("rubric"))  # a rubric's scale: from its lowest to its highest total
    scale = options.get("scale", [rubric.low, rubric.high] if rubric else DEFAULT_SCALE)
    valid = (
        isinstance(scale, (list, tuple))
        and len(scale) == 2
        and all(isinstance(bound, (int, float)) and not isinstance(bound, bool) for bound in scale)
    )
    if not valid:
        raise ValueError(f"scale must be two numbers [lowest, highest], got {scale!r}")
    low, high = float(scale[0]), float(scale[1])
    if low >= high:
        raise ValueError(f"scale [{low:g}, {high:g}] must go from low to high")
    return low, high


def _check_option_values(options: Mapping[str, Any]) -> None:
    for key in options:
        if key not in OPTION_KEYS and key not in _IGNORED_KEYS:
            close = difflib.get_close_matches(key, OPTION_KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"unknown option {key!r} for llm_judge{hint} (options: {', '.join(OPTION_KEYS)})"
            )
    if not _judge_name(options):
        raise ValueError("llm_judge needs judge: the name of a model under the suite's judges:")
    if ("prompt" in options) == ("prompt_file" in options):
        raise ValueError(
            "llm_judge needs exactly one of prompt (a template) or prompt_file (a template file)"
        )
    if "system" in options and "system_file" in options:
        raise ValueError("give system or system_file, not both")
    if options.get("layout", "standalone") not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {options['layout']!r}")
    if options.get("layout") == "conversation" and ("system" in options or "system_file" in options):
        raise ValueError(
            "layout: conversation sends the prompt as the leading system message; drop system/system_file"
        )
    for key in ("prompt", "prompt_file", "system", "system_file"):
        if key in options and not isinstance(options[key], str):
            raise ValueError(f"{key} must be a string, got {type(options[key]).__name__}")
    reference = options.get("reference", "")
    if not isinstance(reference, str) and not (
        isinstance(reference, list) and all(isinstance(item, str) for item in reference)
    ):
        raise ValueError(f"reference must be a string or a list of strings (one per turn), got {reference!r}")
    if not isinstance(options.get("clamp", False), bool):
        raise TypeError(f"clamp must be true or false, got {options['clamp']!r}")
    if options.get("target", "response") not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {options['target']!r}")
    check_reading(options)
    _scale(options)


def _check_options(options: Mapping[str, Any]) -> None:
    # the checks raise TypeError for a wrong type; the Scorer protocol promises ValueError
    try:
        _check_option_values(options)
    except TypeError as exc:
        raise ValueError(str(exc)) from exc


def transcript_text(messages: tuple[Message, ...]) -> str:
    """The conversation as ``role: content`` blocks, the way judge prompts quote it."""
    return "\n\n".join(f"{message.role}: {message.content}" for message in messages)


def conversation_layout(instruction: str, transcript: tuple[Message, ...], answer: str) -> tuple[Message, ...]:
    """``layout: conversation``: the instruction as a leading system message, the case's conversation,
    then the judged answer as the last assistant message (the rent benchmark's master scorer).

    The transcript's own final answer is replaced by ``answer`` (the scorer's ``target``), so the
    judge sees the answer once, as an unnamed assistant message.
    """
    earlier = transcript[:-1] if transcript and transcript[-1].role == "assistant" else transcript
    return (Message("system", instruction), *earlier, Message("assistant", answer))


class JudgeScorer:
    """Asks a judge model for a verdict; value is ``(raw - lo) / (hi - lo)`` on the ``scale``."""

    calls_judges = True  # validation checks the judges it names against the suite's judges:

    def validate(self, spec: ScorerSpec) -> None:
        """Check the options before any call is made.

        Raises:
            ValueError: for unknown keys, a missing prompt, a bad scale or parse rule.
        """
        _check_options(spec.options)

    def _judge(self, spec: ScorerSpec, context: ScoringContext) -> ModelSpec:
        case = context.case
        name = spec.options["judge"]
        judge = case.judges.get(name)
        if judge is not None:
            return judge
        valid = list(case.judges)
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        message = f"unknown judge {name!r}; " + (
            f"{hint}judges: {', '.join(valid)}" if valid else "the suite defines no judges:"
        )
        raise CaseError(
            message,
            path=case.path,
            line=spec.line,
            key=f"{spec.key}.judge",
            hint="judges are declared under the suite's top-level judges: map",
        )

    def _render(
        self,
        spec: ScorerSpec,
        context: ScoringContext,
        option: str,
        variables: Mapping[str, Any],
        source: str | None = None,
    ) -> str:
        templates = context.case.templates
        key, source = f"{spec.key}.{option}", spec.options[option] if source is None else source
        if option.endswith("_file"):
            if templates is None:
                raise CaseError(
                    f"{option} needs the suite's folder", path=context.case.path, line=spec.line, key=key
                )
            return templates.render_file(source, variables, key=key, line=spec.line)
        if templates is None:
            return render_standalone(source, variables)
        return templates.render(source, variables, key=key, line=spec.line)

    def build_messages(
        self, spec: ScorerSpec, context: ScoringContext, extra: Mapping[str, Any] | None = None
    ) -> tuple[Message, ...]:
        """Render the judge's system and user messages from the case and the candidate's answer.

        Template variables: the case variables (also as ``vars``), then ``question`` (the last user
        message of the case), ``answer``, ``transcript``, ``messages``, ``task`` and ``model``, which
        take precedence over case variables of the same name, and ``reference``: the rendered
        ``reference`` option (None when it renders empty), else the case variable ``reference``, else None.
        A ``per_turn`` scorer scores one turn: ``question`` and ``answer`` are that turn's, the
        conversation ends with it, and ``turn``, ``earlier`` and ``context`` describe it
        (``scoring/per_turn.py``); a list ``reference`` gives that turn's entry. A ``rubric`` adds
        ``rubric``, ``rubric_text`` and ``rubric_total`` (``scoring/rubric.py``); ``extra`` adds
        variables of its own (a panel's ``judge``). An agent task adds ``checks``, ``tool_calls`` and
        ``files`` (``agent/view.py``).
        """
        case = context.case
        conversation = context.transcript or case.messages  # a multi-turn case's prompt has no user turn
        user_messages = [message.content for message in conversation if message.role == "user"]
        variables: dict[str, Any] = {
            **case.variables,
            "vars": case.variables,
            "question": user_messages[-1] if user_messages else "",
            "answer": TARGETS[spec.options.get("target", "response")](context),
            "transcript": transcript_text(context.transcript)
            if context.transcript_text is None else context.transcript_text,
            "messages": [message.to_dict() for message in context.transcript],
            "task": case.task,
            "model": model_variables(case),
            **turn_variables(context),  # per_turn: this turn's question, turn, earlier turns, context
            **judge_variables(context.agent),  # an agent task: checks, tool_calls, files
            **rubric_variables(rubric_from_options(spec.options.get("rubric"))),
            **(extra or {}),
        }
        # without a reference option, a case variable named reference (a dataset field) is the reference;
        # a list of references gives one per turn
        if "reference" in spec.options:
            source = pick_for_turn(spec.options["reference"], context)
            reference = "" if source is None else self._render(spec, context, "reference", variables, source)
            variables["reference"] = reference if reference.strip() else None
        else:
            variables["reference"] = pick_for_turn(case.variables.get("reference"), context, lists_only_per_turn=True)
        prompt_option = "prompt" if "prompt" in spec.options else "prompt_file"
        prompt = self._render(spec, context, prompt_option, variables)
        if spec.options.get("layout") == "conversation":
            return conversation_layout(prompt, context.transcript, variables["answer"])
        messages: list[Message] = []
        for option in ("system", "system_file"):
            if option in spec.options:
                messages.append(
                    Message(role="system", content=self._render(spec, context, option, variables))
                )
        messages.append(Message(role="user", content=prompt))
        return tuple(messages)

    async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
        """Call the judge through ``context.call_model`` and read its verdict.

        Raises:
            CaseError: for bad options or an unknown judge (the case fails alone).
            ProviderError: when the judge call fails; the runner classifies it.
        """
        case = context.case
        try:
            _check_options(spec.options)
        except ValueError as exc:
            raise CaseError(f"llm_judge: {exc}", path=case.path, line=spec.line, key=spec.key) from exc
        return await self.ask(spec, context, self._judge(spec, context))

    async def ask(
        self, spec: ScorerSpec, context: ScoringContext, judge: ModelSpec, extra: Mapping[str, Any] | None = None
    ) -> ComponentScore:
        """One judge's call and its reading (a panel asks each of its judges this way).

        Raises:
            CaseError: when a template fails. ProviderError: when the call fails.
        """
        completion = await self.call(spec, context, judge, extra)
        case = context.case
        return read_judgement(spec, judge, completion, candidate_names(case), participant_names(case))

    async def call(
        self, spec: ScorerSpec, context: ScoringContext, judge: ModelSpec, extra: Mapping[str, Any] | None = None
    ) -> Completion:
        """Send ``judge`` the messages ``spec`` renders for this case; return its reply unread.

        Raises:
            CaseError: when a template fails. ProviderError: when the call fails.
        """
        case = context.case
        request = CompletionRequest(
            model=judge,
            messages=self.build_messages(spec, context, extra),
            task=case.task,
            run=case.run,
            turn=judged_turn(context),
            purpose="judge",
            # ``model`` is the candidate, so an offline judge (a replay keyed by the judged model,
            # a scripted reply) can tell whose answer it grades; ``extra`` tells a panel's judge or
            # consensus model what it is asked (``judge``, ``reports``)
            variables={**case.variables, **(extra or {}), "model": model_variables(case)},
        )
        return await context.call_model(request)


def read_judgement(
    spec: ScorerSpec,
    judge: ModelSpec,
    completion: Completion,
    candidate: Sequence[str] = (),
    known: Sequence[Sequence[str]] = (),
) -> ComponentScore:
    """Turn a judge's reply into a component: normalised value, raw verdict, full reply and usage.

    ``value`` is 0..1 for composites; ``raw`` keeps the verdict on the scale, e.g. -0.5 on [-1, 1].
    ``candidate`` holds the names the candidate may be written as (a table row, a participant's
    entry); ``known`` those of every participant of a conversation (``scoring/reading.py``).
    Rubric categories go to ``categories`` and participants' scores to ``extra["participants"]``.
    """
    usage = {
        "input_tokens": completion.usage.input_tokens,
        "output_tokens": completion.usage.output_tokens,
        "latency_s": completion.latency_s,
    }
    low, high = _scale(spec.options)
    reply = completion.text
    clamp = bool(spec.options.get("clamp", False))
    reading = read_report(reply, spec.options, candidate, clamp=clamp, known=known)
    common: dict[str, Any] = {"name": spec.name, "judge_output": reply, "usage": usage, **reading_fields(reading)}
    raw = reading.raw
    if raw is None:
        error = f"could not read a score from the judge reply: {reading.error}"
        return ComponentScore(value=None, detail=f"judge {judge.label}: no verdict", error=error, **common)
    # a signed scale (-1..+1) reads badly as "-0.5/1"
    shown = f"judge {judge.label}: " + (f"{raw:g} on [{low:g}, {high:g}]" if low < 0 else f"{raw:g}/{high:g}")
    shown += "".join(f" ({note})" for note in (reading.note, *reading.problems) if note)
    if not low <= raw <= high:
        if not spec.options.get("clamp", False):
            outside = f"judge verdict {raw:g} is outside the scale [{low:g}, {high:g}]"
            error = f"{outside} (set clamp: true to clamp it)"
            return ComponentScore(
                value=None, raw=raw, detail=f"{shown}, off the scale", error=error, **common
            )
        clamped = min(max(raw, low), high)
        shown = f"{shown}, clamped to {clamped:g}"
        raw_in_scale = clamped
    else:
        raw_in_scale = raw
    value = round((raw_in_scale - low) / (high - low), 6)
    # raw is the verdict on the judge's own scale (clamped when asked): what stance means and bins read
    return ComponentScore(value=value, raw=raw_in_scale, detail=shown, **common)


def model_variables(case: CaseSpec) -> dict[str, str]:
    """``model`` as every template sees it: the candidate's name, API id and label."""
    if case.model is None:
        return {"name": case.model_name, "id": case.model_name, "label": case.model_name}
    return case.model.template_vars()
