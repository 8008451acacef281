"""The ``llm_judge_panel`` scorer: several judges read the same case at once, and their verdicts combine.

Each judge is asked exactly as an ``llm_judge`` would ask it (same prompt, rubric and parse rules;
its template also sees ``judge``) and every judge's reading is kept in the component's ``panel``.
The verdicts combine by ``mean``, ``median``, ``min`` or a strict ``majority`` of pass votes, or go
to a ``consensus`` model whose JSON reply gives the verdict. How far apart the judges are (the
spread, highest minus lowest verdict) is recorded for every case and flagged above ``max_spread``.
A judge whose reply cannot be read is left out, never counted as 0; with fewer than
``min_judges`` verdicts the case is unscored. A judge call that fails makes the case an ERROR, as
for a single judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.gather import gather_all
from bench_plugin.scoring.judge.consensus import parse_consensus_options
from bench_plugin.scoring.judge.llm_judge import OPTION_KEYS, JudgeScorer
from bench_plugin.scoring.judge.panel_combine import AGGREGATES
from bench_plugin.scoring.judge.panel_consensus import PanelConsensus
from bench_plugin.scoring.judge.panel_round import gather_round
from bench_plugin.scoring.judge.prompt import JudgePrompt, check_judges, find_judge
from bench_plugin.scoring.judge.prompt_names import check_prompt_names
from bench_plugin.scoring.judge.usage import completion_usage
from bench_plugin.scoring.options import check_option_names, is_number
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

PANEL_KEYS = ("judges", "aggregate", "pass_at", "min_judges", "max_spread", "consensus")
JUDGE_KEYS = tuple(key for key in OPTION_KEYS if key != "judge")
READ_KEYS = ("parse", "participants", "rubric")  # with a consensus, judges' verdicts are read only if asked


def judge_options(options: Mapping[str, Any], judge: str) -> dict[str, Any]:
    """What one of the panel's judges is asked with: the ``llm_judge`` options and its name."""
    return {**{key: value for key, value in options.items() if key in JUDGE_KEYS}, "judge": judge}


@dataclass(frozen=True)
class PanelScorer:
    """``type: llm_judge_panel``: asks every judge of ``judges:`` in parallel, then combines their verdicts.

    ``judge`` asks and reads each judge as an ``llm_judge`` would (its prompt names the first judge;
    the others are asked the same way); ``reads`` is False when only a consensus reads the replies.
    """

    spec: ScorerSpec
    judge: JudgeScorer
    judges: tuple[str, ...]
    aggregate: str
    min_judges: int
    pass_at: float
    max_spread: float | None
    consensus: PanelConsensus | None
    reads: bool

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Check a panel's options (its own, then the judges' as ``llm_judge`` checks them).

        Raises:
            ValueError: naming the option that is wrong.
        """
        try:
            return cls._parse(spec, spec.options)
        except TypeError as exc:  # a wrong type is a bad option like any other
            raise ValueError(str(exc)) from exc

    @classmethod
    def _parse(cls, spec: ScorerSpec, options: Mapping[str, Any]) -> Self:
        check_option_names(options, (*PANEL_KEYS, *JUDGE_KEYS), "llm_judge_panel")
        judges = _judge_names(options.get("judges"))
        how = _aggregate(options)
        pass_at = _pass_at(options, how)
        _check_min_judges(options.get("min_judges", 1), len(judges))
        limit = _max_spread(options)
        judge = JudgeScorer.from_options(spec, judge_options(options, judges[0]))
        consensus = _panel_consensus(spec, options["consensus"], judge) if how == "consensus" else None
        # a consensus needs two replies to reconcile unless min_judges says otherwise
        least = options.get("min_judges", 2 if how == "consensus" else 1)
        reads = how != "consensus" or any(key in options for key in READ_KEYS)
        return cls(spec, judge, tuple(judges), how, least, pass_at, limit, consensus, reads)

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """Each judge it calls and the option that names it (``CallsJudges``)."""
        named = tuple((name, f"judges[{index}]") for index, name in enumerate(self.judges))
        return named if self.consensus is None else (*named, (self.consensus.rules.judge, "consensus.judge"))

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError for a judge not under ``judges:``, or a prompt name nothing defines."""
        check_judges(self, case, self.spec.key, self.spec.line)
        check_prompt_names(self.judge.prompt, case, extra=("judge",))
        if self.consensus is not None:
            check_prompt_names(self.consensus.prompt, case, extra=("reports", "reports_text"))

    async def _ask(self, context: ScoringContext, name: str) -> dict[str, Any]:
        model = find_judge(context.case, name, f"{self.spec.key}.judge", self.spec.line)
        extra = {"judge": {"name": name, "id": model.id, "label": model.label}}
        if self.reads:
            found = (await self.judge.ask(context, model, extra)).to_dict()
        else:  # a consensus reads the replies; nothing asks for a verdict of each
            completion = await self.judge.prompt.call(context, model, extra)
            found = {"value": None, "raw": None, "detail": "report only", "judge_output": completion.text,
                     "error": None, "usage": completion_usage(completion)}
        found.pop("name", None)
        return {"judge": name, "label": model.label, **found}

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Ask the judges, combine their verdicts, record the spread.

        Raises:
            CaseError: for an unknown judge or a template that fails. ProviderError: when a call fails.
        """
        entries = await gather_all(self._ask(context, name) for name in self.judges)
        return await self._combine(context, entries)

    async def _combine(self, context: ScoringContext, entries: list[dict[str, Any]]) -> ComponentScore:
        panel_round = gather_round(self.spec.name, self.aggregate, entries, reads=self.reads, limit=self.max_spread,
                                   rubric=self.judge.reader.rubric)
        if len(panel_round.usable) < self.min_judges:
            return panel_round.unscored(self.min_judges)
        if self.aggregate == "majority":
            return panel_round.majority(self.pass_at)
        if self.consensus is None:
            return panel_round.numeric(*self.judge.scale)
        return await self.consensus.decide(context, panel_round, self.judge.scale, self.judge.clamp)


def _judge_names(judges: Any) -> list[str]:
    """``judges:``, two or more different names."""
    if not isinstance(judges, list) or len(judges) < 2 or not all(map(_is_name, judges)):
        raise ValueError("llm_judge_panel needs judges: a list of two or more names under the suite's judges:")
    if len(set(judges)) != len(judges):
        raise ValueError(f"judges lists a judge twice: {judges}")
    return judges


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _aggregate(options: Mapping[str, Any]) -> str:
    """``aggregate:`` (``mean`` by default); ``consensus`` comes with a ``consensus:`` mapping, and only then."""
    how = options.get("aggregate", "mean")
    if how not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")
    if ("consensus" in options) != (how == "consensus"):
        raise ValueError("aggregate: consensus and a consensus: mapping go together")
    return str(how)


def _pass_at(options: Mapping[str, Any], how: str) -> float:
    """``pass_at:``, a number from 0 to 1 that only a majority takes (0.5 by default)."""
    pass_at = options.get("pass_at", 0.5)
    if "pass_at" in options and (how != "majority" or not is_number(pass_at) or not 0 <= pass_at <= 1):
        raise ValueError(
            "pass_at (a number from 0 to 1: a judge's value that votes pass) goes with aggregate: majority"
        )
    return float(pass_at)


def _check_min_judges(least: Any, judges: int) -> None:
    if not isinstance(least, int) or isinstance(least, bool) or not 1 <= least <= judges:
        raise ValueError(f"min_judges must be a whole number from 1 to {judges}, got {least!r}")


def _max_spread(options: Mapping[str, Any]) -> float | None:
    limit: float | None = options.get("max_spread")
    if "max_spread" in options and (limit is None or not is_number(limit) or limit < 0):
        raise ValueError(f"max_spread must be a number of points on the scale, 0 or more, got {limit!r}")
    return limit


def _panel_consensus(spec: ScorerSpec, options: Any, judge: JudgeScorer) -> PanelConsensus:
    """The ``consensus:`` step, asked with the panel's reference, target and rubric."""
    rules = parse_consensus_options(options)
    asking = JudgePrompt(f"{spec.key}.consensus", spec.line, rules.judge, rules.prompt, rules.system,
                         judge.prompt.reference, judge.prompt.target, "standalone", judge.prompt.rubric)
    return PanelConsensus(asking, rules)
