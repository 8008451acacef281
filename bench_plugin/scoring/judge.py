"""The ``llm_judge`` scorer: a judge model reads the answer and gives a number on a scale.

A reply with no readable verdict makes the component unscored (never a silent 0), and a failed call
raises ``ProviderError`` so the runner can tell infrastructure failures from bad answers.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from bench_plugin.errors import CaseError, JudgeError
from bench_plugin.providers.base import Completion, CompletionRequest
from bench_plugin.scoring.base import ComponentScore, ScoringContext
from bench_plugin.scoring.checks import TARGETS
from bench_plugin.scoring.parse import parse_verdict, validate_rule
from bench_plugin.scoring.per_turn import judged_turn, pick_for_turn, turn_variables
from bench_plugin.suite.spec import CaseSpec, Message, ModelSpec, ScorerSpec
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
    """The judges a scorer spec calls on, so validation can check them against ``judges:``."""
    name = _judge_name(spec.options)
    return [name] if name else []


def _scale(options: Mapping[str, Any]) -> tuple[float, float]:
    scale = options.get("scale", DEFAULT_SCALE)
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


def _check_options(options: Mapping[str, Any]) -> None:
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
    _scale(options)
    validate_rule(options.get("parse"))


def _validate_options(options: Mapping[str, Any]) -> None:
    # the checks raise TypeError for a wrong type; the Scorer protocol promises ValueError
    try:
        _check_options(options)
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

    def validate(self, spec: ScorerSpec) -> None:
        """Check the options before any call is made.

        Raises:
            ValueError: for unknown keys, a missing prompt, a bad scale or parse rule.
        """
        _validate_options(spec.options)

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

    def build_messages(self, spec: ScorerSpec, context: ScoringContext) -> tuple[Message, ...]:
        """Render the judge's system and user messages from the case and the candidate's answer.

        Template variables: the case variables (also as ``vars``), then ``question`` (the last user
        message of the case), ``answer``, ``transcript``, ``messages``, ``task`` and ``model``, which
        take precedence over case variables of the same name, and ``reference``: the rendered
        ``reference`` option (None when it renders empty), else the case variable ``reference``, else None.
        A ``per_turn`` scorer scores one turn: ``question`` and ``answer`` are that turn's, the
        conversation ends with it, and ``turn``, ``earlier`` and ``context`` describe it
        (``scoring/per_turn.py``); a list ``reference`` gives that turn's entry.
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
            _validate_options(spec.options)
        except ValueError as exc:
            raise CaseError(f"llm_judge: {exc}", path=case.path, line=spec.line, key=spec.key) from exc
        judge = self._judge(spec, context)
        request = CompletionRequest(
            model=judge,
            messages=self.build_messages(spec, context),
            task=case.task,
            run=case.run,
            turn=judged_turn(context),
            purpose="judge",
            # ``model`` is the candidate, so an offline judge (a replay keyed by the judged model,
            # a scripted reply) can tell whose answer it grades
            variables={**case.variables, "model": model_variables(case)},
        )
        completion = await context.call_model(request)
        return read_judgement(spec, judge, completion)


def read_judgement(spec: ScorerSpec, judge: ModelSpec, completion: Completion) -> ComponentScore:
    """Turn a judge's reply into a component: normalised value, raw verdict, full reply and usage.

    ``value`` is 0..1 for composites; ``raw`` keeps the verdict on the scale, e.g. -0.5 on [-1, 1].
    """
    usage = {
        "input_tokens": completion.usage.input_tokens,
        "output_tokens": completion.usage.output_tokens,
        "latency_s": completion.latency_s,
    }
    low, high = _scale(spec.options)
    reply = completion.text
    common: dict[str, Any] = {"name": spec.name, "judge_output": reply, "usage": usage}
    try:
        raw = parse_verdict(reply, spec.options.get("parse"))
    except JudgeError as exc:
        error = f"could not read a score from the judge reply: {exc}"
        return ComponentScore(value=None, detail=f"judge {judge.label}: no verdict", error=error, **common)
    # a signed scale (-1..+1) reads badly as "-0.5/1"
    shown = f"judge {judge.label}: " + (f"{raw:g} on [{low:g}, {high:g}]" if low < 0 else f"{raw:g}/{high:g}")
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
    return {"name": case.model.name, "id": case.model.id, "label": case.model.label}
