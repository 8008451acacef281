"""``mt_bench`` and ``mt_bench_pairwise``: FastChat's MT-Bench judge prompts by name.

The prompts are FastChat's ``judge_prompts.jsonl`` (lm-sys/FastChat, ``fastchat/llm_judge/data``,
Apache License 2.0, text in ``LICENSE-mt_bench_prompts-APACHE-2.0.txt`` beside this module),
unchanged in ``mt_bench_prompts.jsonl``; only their ``{placeholders}`` become Jinja variables when
they are loaded. ``suites/mt_bench/`` reproduces the paper's table with the same text.

``mt_bench`` grades one answer 1-10 (``Rating: [[N]]``, falling back to ``[N]`` as FastChat does):
``single-v1``, or ``single-math-v1`` when the judged turn has a reference; a turn after the first
(``per_turn: true``) is graded with the ``-multi-turn`` prompt, which shows the turn before it.
``mt_bench_pairwise`` compares the answer with ``against`` in both orders (``llm_judge_pairwise``)
with ``pair-v2``, or ``pair-math-v1`` when the case has a reference.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from typing_extensions import Self

from bench_plugin.core.transcript import TurnResult
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.llm_judge import OPTION_KEYS, JudgeScorer
from bench_plugin.scoring.judge.pairwise import PairwiseScorer
from bench_plugin.scoring.judge.prompt import JudgePrompt, JudgeTemplate
from bench_plugin.scoring.options import check_option_names
from bench_plugin.scoring.per_turn import earlier_turns, turn_entry
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

PROMPTS_FILE = "mt_bench_prompts.jsonl"
MT_BENCH_KEYS = ("judge", "reference", "target")
MT_BENCH_PAIRWISE_KEYS = ("judge", "reference", "target", "against")
# FastChat reads the first [[N]], else the first [N]
MT_BENCH_PARSE = {"fallback": {"regex": r"\[(\d+\.?\d*)\]"}}
# FastChat's names for what every judge prompt sees as question, answer and reference (the judged
# turn's); a multi-turn prompt's first turn and both references are given as extra variables
_RENAMED = {"ref_answer_1": "reference"}
_RENAMED_MULTI_TURN = {"question_2": "question", "answer_2": "answer"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class FastChatPrompt:
    """One of FastChat's judge prompts: its system message and its template, in Jinja form."""

    name: str
    system: str
    template: str


def to_jinja(text: str, renamed: Mapping[str, str]) -> str:
    """FastChat's ``str.format`` template as a Jinja template: ``{question}`` -> ``{{ question }}``."""
    return _PLACEHOLDER.sub(lambda match: "{{ " + renamed.get(match.group(1), match.group(1)) + " }}", text)


@lru_cache(maxsize=1)
def fastchat_prompts() -> dict[str, FastChatPrompt]:
    """FastChat's eight judge prompts by name (``single-v1``, ``pair-math-v1-multi-turn``...), read once."""
    text = resources.files("bench_plugin.scoring.graders").joinpath(PROMPTS_FILE).read_text(encoding="utf-8")
    prompts = {}
    for line in text.splitlines():
        entry = json.loads(line)
        renamed = _RENAMED_MULTI_TURN if entry["name"].endswith("-multi-turn") else _RENAMED
        prompts[entry["name"]] = FastChatPrompt(entry["name"], entry["system_prompt"],
                                                to_jinja(entry["prompt_template"], renamed))
    return prompts


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def turn_reference(prompt: JudgePrompt, context: ScoringContext, turn: int) -> str | None:
    """The reference of ``turn``: the ``reference`` option (rendered), else the case variable; None when blank."""
    source: Any = prompt.reference if prompt.reference is not None else context.case.variables.get("reference")
    if isinstance(source, (list, tuple)):
        source = turn_entry(source, turn)
    if source is None:
        return None
    if prompt.reference is not None:  # an option is a template (seeing that turn as turn); a case variable is data
        scope = {**prompt.variables(context), "turn": turn}
        source = JudgeTemplate("reference", str(source)).render(prompt.key, prompt.line, context, scope)
    return None if _blank(source) else str(source)


def _earlier(context: ScoringContext, judged: TurnResult | None) -> TurnResult | None:
    """The answered turn just before the judged one in the same phase (what a multi-turn prompt shows)."""
    earlier = [] if judged is None else earlier_turns(context, judged)
    return earlier[-1] if earlier else None


@dataclass(frozen=True)
class MtBench:
    """``type: mt_bench``: FastChat's single-answer grading, 1-10, by the judged turn and its reference."""

    spec: ScorerSpec
    judges: Mapping[str, JudgeScorer]  # by FastChat prompt name

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for an unknown option or a bad value, naming it."""
        check_option_names(spec.options, MT_BENCH_KEYS, "mt_bench")
        options = {key: value for key, value in spec.options.items() if key in MT_BENCH_KEYS}
        judges = {}
        for name in ("single-v1", "single-math-v1", "single-v1-multi-turn", "single-math-v1-multi-turn"):
            prompt = fastchat_prompts()[name]
            settings = {"system": prompt.system, "prompt": prompt.template, "parse": MT_BENCH_PARSE}
            judges[name] = JudgeScorer.from_options(spec, {**options, **settings}, owner="mt_bench",
                                                    allowed=OPTION_KEYS, judge_optional=True)
        return cls(spec, judges)

    @property
    def _any(self) -> JudgeScorer:
        return self.judges["single-v1"]

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """The judge it names (``CallsJudges``); none when the model under test grades."""
        return self._any.named_judges()

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError when the named judge is not under the suite's ``judges:``."""
        self._any.check_case(case)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Grade the judged turn with the prompt FastChat would use for it.

        Raises:
            CaseError: an unknown judge or a reference template that fails. ProviderError: the call fails.
        """
        judged = context.last_turn
        index = judged.index if judged is not None else 1
        before = _earlier(context, judged)
        prompt = self._any.prompt
        reference = turn_reference(prompt, context, index)
        name = "single-math-v1" if reference is not None else "single-v1"
        extra: dict[str, Any] = {}
        if before is not None:
            name += "-multi-turn"
            extra = {"question_1": before.user, "answer_1": before.answer,
                     "ref_answer_1": turn_reference(prompt, context, before.index), "ref_answer_2": reference}
        judge = self.judges[name]
        component = await judge.ask(context, judge.prompt.model(context), extra)
        return dataclasses.replace(component, extra={**component.extra, "prompt": name})


@dataclass(frozen=True)
class MtBenchPairwise:
    """``type: mt_bench_pairwise``: FastChat's pairwise prompts, both orders, against ``against``."""

    spec: ScorerSpec
    general: PairwiseScorer
    math: PairwiseScorer

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for an unknown option, or ``against`` missing or malformed."""
        check_option_names(spec.options, MT_BENCH_PAIRWISE_KEYS, "mt_bench_pairwise")
        options = {key: value for key, value in spec.options.items() if key in MT_BENCH_PAIRWISE_KEYS}
        found = []
        for name in ("pair-v2", "pair-math-v1"):
            prompt = fastchat_prompts()[name]
            settings = {"system": prompt.system, "prompt": prompt.template}
            found.append(PairwiseScorer.parse(dataclasses.replace(spec, options={**options, **settings}),
                                              owner="mt_bench_pairwise", judge_optional=True))
        return cls(spec, *found)

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """The judge it names (``CallsJudges``); none when the model under test grades."""
        return self.general.named_judges()

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError for an unknown ``against`` model or judge."""
        self.general.check_case(case)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Compare in both orders with ``pair-math-v1`` when the case has a reference, else ``pair-v2``.

        Raises:
            CaseError: an unknown judge or model, a template that fails. ProviderError: a call fails.
        """
        reference = self.general.prompt.variables(context).get("reference")
        scorer = self.general if _blank(reference) else self.math
        component = await scorer.score(context)
        prompt = "pair-v2" if scorer is self.general else "pair-math-v1"
        return dataclasses.replace(component, extra={**component.extra, "prompt": prompt})
