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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.core.hints import choices_hint
from bench_plugin.core.transcript import split_thinking
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.prompt import (
    JudgePrompt,
    check_judges,
    last_question,
    model_variables,
    parse_reference,
    parse_templates,
)
from bench_plugin.scoring.judge.prompt_names import check_prompt_names
from bench_plugin.scoring.judge.usage import completion_usage, total_usage
from bench_plugin.scoring.options import check_choice, check_known_keys, check_option_names
from bench_plugin.scoring.targets import TARGETS
from bench_plugin.suite.spec import CaseSpec, ScorerSpec
from bench_plugin.suite.templates import render_standalone

_ONE_PROMPT = "against: {model: ...} answers a single prompt; for a conversation give against: {answer: ...}"
AGAINST_NAMES = ("model", "question")
"""What an ``against.answer`` template sees besides the case's variables."""
PAIRWISE_KEYS = ("judge", "prompt", "prompt_file", "system", "system_file", "reference", "target", "against", "parse")
AGAINST_KEYS = ("model", "answer", "label")
PARSE_KEYS = ("regex", "first", "second", "tie")
DEFAULT_PARSE = {"regex": r"\[\[(A|B|C)\]\]", "first": "A", "second": "B", "tie": "C"}  # MT-Bench's pairwise verdicts
OUTCOMES = {1.0: "win", 0.5: "tie", 0.0: "loss"}


@dataclass(frozen=True)
class ChoiceRule:
    """How a pairwise verdict is read.

    The first match of ``pattern`` (group 1 when it has groups) is the ``first`` answer's label, the
    ``second``'s or ``tie``.
    """

    pattern: re.Pattern[str]
    first: str
    second: str
    tie: str

    def read(self, text: str) -> str | None:
        """``first``, ``second`` or ``tie`` from a judge's reply; None when it names none of them."""
        match = self.pattern.search(text)
        if match is None:
            return None
        found = _matched_label(match)
        labels = {"first": self.first, "second": self.second, "tie": self.tie}
        return next((key for key, label in labels.items() if label == found), None)


def _matched_label(match: re.Match[str]) -> str:
    """The label a match captured: group 1 when the pattern has groups, else the whole match."""
    return (match.group(1) if match.re.groups else match.group(0)).strip()


def parse_choice_rule(rule: Any) -> ChoiceRule:
    """Read a pairwise ``parse:`` (MT-Bench's ``[[A]]``/``[[B]]``/``[[C]]`` by default).

    Raises:
        ValueError: unknown keys, a regex that does not compile, labels that do not differ.
    """
    unknown = sorted(set(rule) - set(PARSE_KEYS)) if isinstance(rule, Mapping) else ["(not a mapping)"]
    if unknown:
        takes = ", ".join(PARSE_KEYS)
        raise ValueError(f"parse has unknown key(s) {', '.join(unknown)}; a pairwise parse takes {takes}")
    merged = {**DEFAULT_PARSE, **rule}
    pattern = _choice_pattern(merged["regex"])
    labels = [str(merged[key]) for key in ("first", "second", "tie")]
    if len(set(labels)) != 3:
        raise ValueError(f"parse.first, second and tie must differ, got {labels}")
    return ChoiceRule(pattern, *labels)


def _choice_pattern(source: Any) -> re.Pattern[str]:
    """Raises: ValueError for a ``parse.regex`` that does not compile."""
    try:
        return re.compile(str(source))
    except re.error as exc:
        raise ValueError(f"parse.regex /{source}/ does not compile: {exc}") from exc


@dataclass(frozen=True)
class Against:
    """The other answer: one a suite ``model`` gives to the same prompt, or an ``answer`` template."""

    model: str | None = None
    answer: str | None = None
    label: str | None = None


def _parse_against(against: Any) -> Against:
    if not isinstance(against, Mapping) or ("model" in against) == ("answer" in against):
        raise ValueError("llm_judge_pairwise needs against: {model: NAME} (a suite model answers the same prompt) "
                         "or {answer: TEMPLATE} (the other answer itself)")
    check_known_keys(against, AGAINST_KEYS, "against")
    wrong = next((key for key in AGAINST_KEYS if not isinstance(against.get(key, ""), str)), None)
    if wrong is not None:
        raise ValueError(f"against.{wrong} must be text, got {against[wrong]!r}")
    return Against(against.get("model"), against.get("answer"), against.get("label"))


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


@dataclass(frozen=True)
class PairwiseScorer:
    """``type: llm_judge_pairwise``: compares the case's answer with the ``against`` answer, in both orders."""

    spec: ScorerSpec
    prompt: JudgePrompt
    against: Against
    rule: ChoiceRule

    @classmethod
    def parse(cls, spec: ScorerSpec, *, owner: str = "llm_judge_pairwise", judge_optional: bool = False) -> Self:
        """Check the options before any call.

        ``owner`` names the scorer in messages; ``judge_optional`` lets a built-in grader
        (``mt_bench_pairwise``) leave ``judge`` out, so that the model under test judges.

        Raises:
            ValueError: naming the option that is wrong.
        """
        options = spec.options
        check_option_names(options, PAIRWISE_KEYS, owner)
        judge = options.get("judge")
        if not (judge is None and judge_optional) and (not isinstance(judge, str) or not judge):
            raise ValueError(f"{owner} needs judge: the name of a model under the suite's judges:")
        prompt, system = parse_templates(options, owner)
        target = check_choice("target", options.get("target", "response"), tuple(TARGETS))
        against = _parse_against(options.get("against"))
        rule = parse_choice_rule(options.get("parse", {}))
        reference = parse_reference(options)
        asking = JudgePrompt(spec.key, spec.line, judge, prompt, system, reference, target)
        return cls(spec, asking, against, rule)

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """Each judge it calls and the option that names it (``CallsJudges``); none when the model under test grades."""
        return () if self.prompt.judge is None else ((self.prompt.judge, "judge"),)

    def _check_against(self, case: CaseSpec) -> None:
        name = self.against.model
        if name is None:
            return  # the other answer is a template
        if name not in case.models:
            raise CaseError(f"unknown model {name!r} for against", path=case.path, line=self.spec.line,
                            key=f"{self.spec.key}.against.model", hint=choices_hint(name, case.models, label="models"))
        if case.turns is not None or case.conversation is not None:
            raise CaseError(_ONE_PROMPT, path=case.path, line=self.spec.line, key=f"{self.spec.key}.against")

    def check_case(self, case: CaseSpec) -> None:
        """Find before any call what would fail this scorer's cases.

        Raises: CaseError for an unknown ``against.model`` or one asked of a conversation, an unknown judge, or a
        name nothing defines in a prompt or the ``against.answer`` template.
        """
        self._check_against(case)
        if self.against.answer is not None and case.templates is not None:
            known = {*case.variables, *AGAINST_NAMES}
            case.templates.check(self.against.answer, key=f"{self.spec.key}.against.answer", line=self.spec.line,
                                 known=known)
        check_judges(self, case, self.spec.key, self.spec.line)
        check_prompt_names(self.prompt, case, extra=("answer_a", "answer_b", "order", "other"))

    async def _other(self, context: ScoringContext) -> tuple[str, str, dict[str, Any]]:
        """The other answer, its label and the usage of the call that made it (none for a template)."""
        if self.against.answer is not None:
            label = "reference" if self.against.label is None else self.against.label
            return self._rendered_answer(context, self.against.answer), label, {}
        return await self._model_answer(context)

    def _rendered_answer(self, context: ScoringContext, template: str) -> str:
        """``against.answer`` rendered for the case; it may read the names of AGAINST_NAMES (``check_case``)."""
        case, spec = context.case, self.spec
        scope = {**case.variables, "model": model_variables(case), "question": last_question(context)}
        if case.templates is None:
            return render_standalone(template, scope)
        return case.templates.render(template, scope, key=f"{spec.key}.against.answer", line=spec.line)

    async def _model_answer(self, context: ScoringContext) -> tuple[str, str, dict[str, Any]]:
        """The answer ``against.model`` gives to the case's prompt, its label and the call's usage."""
        case, against, spec = context.case, self.against, self.spec
        self._check_against(case)
        if not case.messages:
            raise CaseError(_ONE_PROMPT, path=case.path, line=spec.line, key=f"{spec.key}.against")
        assert against.model is not None
        model: ModelSpec = case.models[against.model]
        request = CompletionRequest(model=model, messages=case.messages, task=case.task, run=case.run, turn=1,
                                    variables=case.variables)
        completion = await context.call_model(request)
        answer = split_thinking(completion.text, model.thinking).answer or ""
        return answer, model.label if against.label is None else against.label, completion_usage(completion)

    async def _both_orders(self, context: ScoringContext, judge: ModelSpec, mine: str, other: str) -> list[Completion]:
        """The judge's replies with the candidate's answer shown first (order 1), then second (order 2)."""
        orders = [(1, mine, other), (2, other, mine)]
        return list(await asyncio.gather(*(
            self.prompt.call(context, judge, {"answer_a": a, "answer_b": b, "order": order, "other": other})
            for order, a, b in orders
        )))

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Judge both orders and combine them.

        Raises:
            CaseError: for an unknown judge or model, a template that fails. ProviderError: when a call fails.
        """
        case, spec = context.case, self.spec
        judge = self.prompt.model(context)
        other, other_label, other_usage = await self._other(context)
        mine = TARGETS[self.prompt.target](context)
        label = case.model.label if case.model is not None else case.model_name
        completions = await self._both_orders(context, judge, mine, other)
        choices = [self.rule.read(completion.text) for completion in completions]
        # the candidate's verdicts: as A in order 1; as B in order 2 ("second" then favours it)
        result = outcome_of(choices[0], choices[1])
        record = {"against": other_label, "other_answer": other, "orders": _orders(choices, completions),
                  "outcome": None if result is None else OUTCOMES[result]}
        common: dict[str, Any] = {
            "name": spec.name, "judge_output": _judge_output(completions),
            "usage": total_usage([other_usage, *(completion_usage(completion) for completion in completions)]),
        }
        shown = _shown(choices, label, other_label)
        if result is None:
            return ComponentScore(value=None, detail=f"vs {other_label}: unscored ({shown})",
                                  error=f"no pairwise verdict could be read ({shown})", extra={"pairwise": record},
                                  **common)
        participants = {label: result, other_label: 1.0 - result}
        return ComponentScore(value=result, raw=result, detail=f"vs {other_label}: {OUTCOMES[result]} ({shown})",
                              extra={"pairwise": record, "participants": participants}, **common)


def _shown(choices: Sequence[str | None], label: str, other_label: str) -> str:
    """What the judge chose in each order: ``candidate as A: chose X; candidate as B: tie``."""
    return "; ".join(f"candidate as {_position(order)}: {_chosen(order, choice, label, other_label)}"
                     for order, choice in enumerate(choices, 1))


def _position(order: int) -> str:
    """Where the candidate's answer is shown in an order: A in the first, B in the second."""
    return "A" if order == 1 else "B"


def _orders(choices: Sequence[str | None], completions: Sequence[Completion]) -> list[dict[str, Any]]:
    """The record of each order: where the candidate was, the judge's choice and its reply."""
    return [{"order": order, "candidate": _position(order), "verdict": choice, "judge_output": completion.text}
            for order, (choice, completion) in enumerate(zip(choices, completions, strict=True), 1)]


def _judge_output(completions: Sequence[Completion]) -> str:
    """Both replies, each under the order it answers."""
    return "\n\n".join(f"## Order {order} (candidate as {_position(order)})\n\n{completion.text}"
                       for order, completion in enumerate(completions, 1))


def _chosen(order: int, choice: str | None, label: str, other: str) -> str:
    """Who a verdict chose: in order 1 the candidate is A (``first``), in order 2 it is B."""
    if choice is None:
        return "no verdict"
    if choice == "tie":
        return "tie"
    return f"chose {label}" if (choice == "first") == (order == 1) else f"chose {other}"
