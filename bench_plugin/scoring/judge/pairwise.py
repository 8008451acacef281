"""The ``llm_judge_pairwise`` scorer: the case's answer against another answer, judged side by side twice.

A case compares its model's answer with the ``against`` answer to the same prompt: one a suite
model gives (``against: {model: NAME}``, answered fresh or replayed) or a template gives
(``against: {answer: "{{ baseline }}"}``, e.g. a dataset field). The judge sees both orders,
the candidate as A then as B; the candidate wins only when both orders say so, loses only when
both say the other, and every other pair of verdicts is a tie. Value: 1 win, 0.5 tie, 0 loss.
A verdict that cannot be read in either order leaves the case unscored.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from collections.abc import Mapping
from typing import Any

from bench_plugin.chat import CompletionRequest
from bench_plugin.endpoints import ModelSpec
from bench_plugin.errors import CaseError
from bench_plugin.scoring.checks.kinds import TARGETS
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.llm_judge import JudgeScorer, model_variables
from bench_plugin.scoring.judge.panel import completion_usage, total_usage
from bench_plugin.suite.spec import ScorerSpec
from bench_plugin.suite.templates import render_standalone
from bench_plugin.transcript import split_thinking

PAIRWISE_KEYS = ("judge", "prompt", "prompt_file", "system", "system_file", "reference", "target", "against", "parse")
AGAINST_KEYS = ("model", "answer", "label")
PARSE_KEYS = ("regex", "first", "second", "tie")
DEFAULT_PARSE = {"regex": r"\[\[(A|B|C)\]\]", "first": "A", "second": "B", "tie": "C"}  # MT-Bench's pairwise verdicts
OUTCOMES = {1.0: "win", 0.5: "tie", 0.0: "loss"}
_IGNORED = frozenset({"name", "type"})


def check_pairwise(options: Mapping[str, Any]) -> None:
    """Check the options before any call.

    Raises:
        ValueError: naming the option that is wrong.
    """
    for key in options:
        if key not in PAIRWISE_KEYS and key not in _IGNORED:
            close = difflib.get_close_matches(key, PAIRWISE_KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown option {key!r} for llm_judge_pairwise{hint} (options: {', '.join(PAIRWISE_KEYS)})")
    if not isinstance(options.get("judge"), str) or not options["judge"]:
        raise ValueError("llm_judge_pairwise needs judge: the name of a model under the suite's judges:")
    if ("prompt" in options) == ("prompt_file" in options):
        raise ValueError("llm_judge_pairwise needs exactly one of prompt (a template) or prompt_file (a template file)")
    if "system" in options and "system_file" in options:
        raise ValueError("give system or system_file, not both")
    if options.get("target", "response") not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {options['target']!r}")
    against = options.get("against")
    if not isinstance(against, Mapping) or ("model" in against) == ("answer" in against):
        raise ValueError("llm_judge_pairwise needs against: {model: NAME} (a suite model answers the same prompt) "
                         "or {answer: TEMPLATE} (the other answer itself)")
    unknown = sorted(set(against) - set(AGAINST_KEYS))
    if unknown:
        raise ValueError(f"against has unknown key(s) {', '.join(unknown)}; it takes {', '.join(AGAINST_KEYS)}")
    for key in AGAINST_KEYS:
        if key in against and not isinstance(against[key], str):
            raise ValueError(f"against.{key} must be text, got {against[key]!r}")
    rule = options.get("parse", {})
    unknown = sorted(set(rule) - set(PARSE_KEYS)) if isinstance(rule, Mapping) else ["(not a mapping)"]
    if unknown:
        raise ValueError(f"parse has unknown key(s) {', '.join(unknown)}; a pairwise parse takes {', '.join(PARSE_KEYS)}")
    rule = {**DEFAULT_PARSE, **rule}
    try:
        re.compile(str(rule["regex"]))
    except re.error as exc:
        raise ValueError(f"parse.regex /{rule['regex']}/ does not compile: {exc}") from exc
    labels = [str(rule[key]) for key in ("first", "second", "tie")]
    if len(set(labels)) != 3:
        raise ValueError(f"parse.first, second and tie must differ, got {labels}")


def read_choice(text: str, rule: Mapping[str, Any]) -> str | None:
    """``first``, ``second`` or ``tie`` from a judge's reply (the first match of the rule's regex)."""
    merged = {**DEFAULT_PARSE, **rule}
    match = re.search(str(merged["regex"]), text)
    if match is None:
        return None
    found = (match.group(1) if match.re.groups else match.group(0)).strip()
    return next((key for key in ("first", "second", "tie") if str(merged[key]) == found), None)


def outcome_of(candidate_first: str | None, candidate_second: str | None) -> float | None:
    """The candidate's result from its two verdicts: with the candidate shown first, then second.

    A win (1) when both orders prefer the candidate, a loss (0) when both prefer the other answer,
    a tie (0.5) otherwise (the orders disagree, or a judge called a tie); None when either verdict
    could not be read.

    Example: ``outcome_of("first", "second") == 1.0`` (candidate chosen in both positions);
    ``outcome_of("first", "first") == 0.5`` (the judge chose position A both times).
    """
    if candidate_first is None or candidate_second is None:
        return None
    wins = {candidate_first == "first", candidate_second == "second"}
    losses = {candidate_first == "second", candidate_second == "first"}
    if wins == {True}:
        return 1.0
    if losses == {True}:
        return 0.0
    return 0.5


class PairwiseScorer:
    """Compares the case's answer with the ``against`` answer, in both orders."""

    calls_judges = True

    def __init__(self) -> None:
        self.judge = JudgeScorer()

    def validate(self, spec: ScorerSpec) -> None:
        """Raises: ValueError for options that are wrong (see ``check_pairwise``)."""
        try:
            check_pairwise(spec.options)
        except TypeError as exc:
            raise ValueError(str(exc)) from exc

    def check_case(self, spec: ScorerSpec, case: Any) -> None:
        """Raises: CaseError when ``against.model`` is not one of the suite's models."""
        name = spec.options["against"].get("model")
        if name is not None and name not in case.models:
            close = difflib.get_close_matches(name, list(case.models), n=1)
            hint = (f"did you mean {close[0]!r}? " if close else "") + f"models: {', '.join(case.models) or 'none'}"
            raise CaseError(f"unknown model {name!r} for against", path=case.path, line=spec.line,
                            key=f"{spec.key}.against.model", hint=hint)

    async def _other(self, spec: ScorerSpec, context: ScoringContext) -> tuple[str, str, dict[str, Any]]:
        """The other answer, its label and the usage of the call that made it (none for a template)."""
        case, against = context.case, spec.options["against"]
        if "answer" in against:
            scope = {**case.variables, "model": model_variables(case), "question": _question(context)}
            text = case.templates.render(against["answer"], scope, key=f"{spec.key}.against.answer", line=spec.line) \
                if case.templates is not None else render_standalone(against["answer"], scope)
            return text, against.get("label", "reference"), {}
        self.check_case(spec, case)
        if case.turns is not None or case.conversation is not None or not case.messages:
            raise CaseError("against: {model: ...} answers a single prompt; for a conversation give against: {answer: ...}",
                            path=case.path, line=spec.line, key=f"{spec.key}.against")
        model: ModelSpec = case.models[against["model"]]
        request = CompletionRequest(model=model, messages=case.messages, task=case.task, run=case.run, turn=1,
                                    variables=case.variables)
        completion = await context.call_model(request)
        usage = completion_usage(completion)
        answer = split_thinking(completion.text, model.thinking).answer or ""
        return answer, against.get("label", model.label), usage

    async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
        """Judge both orders and combine them.

        Raises:
            CaseError: for bad options, an unknown judge or model. ProviderError: when a call fails.
        """
        case = context.case
        try:
            self.validate(spec)
        except ValueError as exc:
            raise CaseError(f"llm_judge_pairwise: {exc}", path=case.path, line=spec.line, key=spec.key) from exc
        judge_options = {k: v for k, v in spec.options.items() if k not in ("against", "parse")}
        one = ScorerSpec(name=spec.name, type="llm_judge", options=judge_options, key=spec.key, line=spec.line)
        judge = self.judge._judge(one, context)
        other, other_label, other_usage = await self._other(spec, context)
        mine = TARGETS[spec.options.get("target", "response")](context)
        label = case.model.label if case.model is not None else case.model_name
        orders = [(1, mine, other), (2, other, mine)]
        completions = await asyncio.gather(*(
            self.judge.call(one, context, judge, {"answer_a": a, "answer_b": b, "order": order, "other": other})
            for order, a, b in orders
        ))
        rule = spec.options.get("parse", {})
        choices = [read_choice(completion.text, rule) for completion in completions]
        # the candidate's verdicts: as A in order 1; as B in order 2 ("second" then favours it)
        result = outcome_of(choices[0], choices[1])
        record = {
            "against": other_label,
            "other_answer": other,
            "orders": [
                {"order": order, "candidate": "A" if order == 1 else "B", "verdict": choice,
                 "judge_output": completion.text}
                for (order, _, _), choice, completion in zip(orders, choices, completions)
            ],
            "outcome": None if result is None else OUTCOMES[result],
        }
        usage = total_usage([other_usage, *(completion_usage(completion) for completion in completions)])
        output = "\n\n".join(f"## Order {order} (candidate as {'A' if order == 1 else 'B'})\n\n{completion.text}"
                             for (order, _, _), completion in zip(orders, completions))
        shown = "; ".join(f"candidate as {'A' if order == 1 else 'B'}: {_chosen(order, choice, label, other_label)}"
                          for (order, _, _), choice in zip(orders, choices))
        if result is None:
            return ComponentScore(name=spec.name, value=None, detail=f"vs {other_label}: unscored ({shown})",
                                  error=f"no pairwise verdict could be read ({shown})", judge_output=output,
                                  usage=usage, extra={"pairwise": record})
        participants = {label: result, other_label: 1.0 - result}
        return ComponentScore(name=spec.name, value=result, raw=result,
                              detail=f"vs {other_label}: {OUTCOMES[result]} ({shown})", judge_output=output,
                              usage=usage, extra={"pairwise": record, "participants": participants})


def _question(context: ScoringContext) -> str:
    users = [message.content for message in (context.transcript or context.case.messages) if message.role == "user"]
    return users[-1] if users else ""


def _chosen(order: int, choice: str | None, label: str, other: str) -> str:
    """Who a verdict chose: in order 1 the candidate is A (``first``), in order 2 it is B."""
    if choice is None:
        return "no verdict"
    if choice == "tie":
        return "tie"
    return f"chose {label}" if (choice == "first") == (order == 1) else f"chose {other}"
