"""The ``llm_judge_panel`` scorer: several judges read the same case at once, and their verdicts combine.

Each judge is asked exactly as an ``llm_judge`` would ask it (same prompt, rubric and parse rules;
its template also sees ``judge``) and every judge's reading is kept in the component's ``panel``.
The verdicts combine by ``mean``, ``median``, ``min`` or a strict ``majority`` of pass votes, or go
to a ``consensus`` model whose JSON reply gives the verdict. How far apart the judges are (the
spread, highest minus lowest verdict) is recorded for every case and flagged above ``max_spread``.
A judge whose report cannot be read is left out, never counted as 0; with fewer than
``min_judges`` verdicts the case is unscored. A judge call that fails makes the case an ERROR, as
for a single judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.errors import JudgeError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.consensus import (
    Consensus,
    parse_consensus,
    parse_consensus_options,
    reports_text,
)
from bench_plugin.scoring.judge.judge_reply import candidate_names, participant_names
from bench_plugin.scoring.judge.llm_judge import OPTION_KEYS, JudgeScorer
from bench_plugin.scoring.judge.panel_combine import (
    AGGREGATES,
    combine,
    combine_by_key,
    spread,
    strict_majority,
)
from bench_plugin.scoring.judge.prompt import JudgePrompt, check_judges, find_judge
from bench_plugin.scoring.judge.prompt_names import check_prompt_names
from bench_plugin.scoring.judge.rubric import category_names
from bench_plugin.scoring.judge.usage import completion_usage, total_usage
from bench_plugin.scoring.options import check_option_names
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

PANEL_KEYS = ("judges", "aggregate", "pass_at", "min_judges", "max_spread", "consensus")
JUDGE_KEYS = tuple(key for key in OPTION_KEYS if key != "judge")
READ_KEYS = ("parse", "participants", "rubric")  # with a consensus, judges' verdicts are read only if asked


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def judge_options(options: Mapping[str, Any], judge: str) -> dict[str, Any]:
    """What one of the panel's judges is asked with: the ``llm_judge`` options and its name."""
    return {**{key: value for key, value in options.items() if key in JUDGE_KEYS}, "judge": judge}


def place_on_scale(raw: float, low: float, high: float, clamp: bool) -> tuple[float | None, str]:
    """The verdict on the scale (clamped when asked), or None and why not."""
    if low <= raw <= high:
        return raw, ""
    if clamp:
        return min(max(raw, low), high), f"{raw:g} clamped to the scale [{low:g}, {high:g}]"
    return None, f"{raw:g} is outside the scale [{low:g}, {high:g}] (set clamp: true to clamp it)"


@dataclass(frozen=True)
class PanelConsensus:
    """The consensus step: how its model is asked, and how its JSON is read.

    It is asked with the consensus's own prompt and the panel's target, reference and rubric.
    """

    prompt: JudgePrompt
    rules: Consensus


@dataclass(frozen=True)
class PanelScorer:
    """``type: llm_judge_panel``: asks every judge of ``judges:`` in parallel, then combines their verdicts.

    ``judge`` asks and reads each judge as an ``llm_judge`` would (its prompt names the first judge;
    the others are asked the same way); ``reads`` is False when only a consensus reads the reports.
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
        judges = options.get("judges")
        if not isinstance(judges, list) or len(judges) < 2 or not all(isinstance(j, str) and j for j in judges):
            raise ValueError("llm_judge_panel needs judges: a list of two or more names under the suite's judges:")
        if len(set(judges)) != len(judges):
            raise ValueError(f"judges lists a judge twice: {judges}")
        how = options.get("aggregate", "mean")
        if how not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")
        if ("consensus" in options) != (how == "consensus"):
            raise ValueError("aggregate: consensus and a consensus: mapping go together")
        pass_at = options.get("pass_at", 0.5)
        if "pass_at" in options and (how != "majority" or not _number(pass_at) or not 0 <= pass_at <= 1):
            raise ValueError(
                "pass_at (a number from 0 to 1: a judge's value that votes pass) goes with aggregate: majority"
            )
        least = options.get("min_judges", 1)
        if not isinstance(least, int) or isinstance(least, bool) or not 1 <= least <= len(judges):
            raise ValueError(f"min_judges must be a whole number from 1 to {len(judges)}, got {least!r}")
        limit: float | None = options.get("max_spread")
        if "max_spread" in options and (limit is None or not _number(limit) or limit < 0):
            raise ValueError(f"max_spread must be a number of points on the scale, 0 or more, got {limit!r}")
        judge = JudgeScorer.from_options(spec, judge_options(options, judges[0]))
        consensus = None
        if how == "consensus":
            rules = parse_consensus_options(options["consensus"])
            asking = JudgePrompt(f"{spec.key}.consensus", spec.line, rules.judge, rules.prompt, rules.system,
                                 judge.prompt.reference, judge.prompt.target, "standalone", judge.prompt.rubric)
            consensus = PanelConsensus(asking, rules)
        # a consensus needs two reports to reconcile unless min_judges says otherwise
        least = options.get("min_judges", 2 if how == "consensus" else 1)
        reads = how != "consensus" or any(key in options for key in READ_KEYS)
        return cls(spec, judge, tuple(judges), how, least, float(pass_at), limit, consensus, reads)

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
        else:  # a consensus reads the reports; nothing asks for a verdict of each
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
        outcomes = await asyncio.gather(*(self._ask(context, name) for name in self.judges), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        entries = [outcome for outcome in outcomes if isinstance(outcome, dict)]
        return await self._combine(context, entries)

    async def _combine(self, context: ScoringContext, entries: list[dict[str, Any]]) -> ComponentScore:
        how, reads, limit = self.aggregate, self.reads, self.max_spread
        low, high = self.judge.scale
        scored = [entry for entry in entries if entry["value"] is not None]
        verdicts = [float(entry["raw"]) for entry in scored]
        gap = spread(verdicts)
        flagged = gap is not None and limit is not None and gap > limit
        rubric = self.judge.reader.rubric
        # the rubric's order, as a list: a record's mappings come back from results.jsonl with sorted keys
        panel: dict[str, Any] = {"aggregate": how, "judges": entries, "verdicts": len(scored), "spread": gap,
                                 "max_spread": limit, "flagged": flagged, "consensus": None,
                                 "categories": category_names(rubric)}
        categories = combine_by_key([entry.get("categories") or {} for entry in scored], how)
        participants = combine_by_key([entry["participants"] for entry in scored if entry.get("participants")], how)
        usages = [entry.get("usage") or {} for entry in entries]
        outputs = [(entry["label"], entry.get("judge_output") or "") for entry in entries]
        common: dict[str, Any] = {"name": self.spec.name, "categories": categories}
        least = self.min_judges
        usable = scored if reads else [entry for entry in entries if (entry.get("judge_output") or "").strip()]
        shown = ", ".join(
            f"{entry['label']} {entry['raw']:g}" if entry["value"] is not None
            else f"{entry['label']} {'report' if not reads else 'no verdict'}" for entry in entries
        )
        spread_text = "" if gap is None else f"; spread {gap:g}" + (f" > {limit:g}: judges disagree" if flagged else "")
        if len(usable) < least:
            unread = "; ".join(f"{entry['label']}: {entry.get('error') or 'empty report'}"
                               for entry in entries if entry not in usable)
            error = (f"{len(usable)} of {len(entries)} judges gave a usable report, {least} needed (min_judges): "
                     f"{unread}")
            return self._component(common, panel, participants, None, None, None,
                                   f"panel ({how}): {shown}; unscored", error, reports_text(outputs), usages)
        if how == "majority":
            votes = [float(entry["value"]) >= self.pass_at for entry in scored]
            passed = strict_majority(votes)
            detail = f"panel majority: {sum(votes)} of {len(votes)} pass ({shown}){spread_text}"
            return self._component(common, panel, participants, 1.0 if passed else 0.0, sum(votes) / len(votes),
                                   passed, detail, None, reports_text(outputs), usages)
        if how != "consensus":
            raw = combine(verdicts, how)
            detail = f"panel {how} of {len(scored)}: {shown} -> {raw:g}/{high:g}{spread_text}"
            return self._component(common, panel, participants, round((raw - low) / (high - low), 6), raw, None,
                                   detail, None, reports_text(outputs), usages)
        return await self._consensus(context, common, panel, usable, outputs, usages, f"{shown}{spread_text}")

    async def _consensus(
        self,
        context: ScoringContext,
        common: dict[str, Any],
        panel: dict[str, Any],
        usable: list[dict[str, Any]],
        outputs: list[tuple[str, str]],
        usages: list[Mapping[str, Any]],
        shown: str,
    ) -> ComponentScore:
        assert self.consensus is not None, "parse sets the consensus of aggregate: consensus"
        asking, rules, case = self.consensus.prompt, self.consensus.rules, context.case
        reports = [(entry["label"], entry.get("judge_output") or "") for entry in usable]
        extra = {
            "reports": [{key: entry.get(key) for key in ("judge", "label", "raw", "categories", "participants")}
                        | {"text": entry.get("judge_output") or ""} for entry in usable],
            "reports_text": reports_text(reports),
        }
        model = asking.model(context)
        completion = await asking.call(context, model, extra)
        usages = [*usages, completion_usage(completion)]
        record: dict[str, Any] = {"judge": rules.judge, "label": model.label, "output": completion.text,
                                  "data": None, "error": None}
        panel["consensus"] = record
        combined = reports_text([*outputs, (f"consensus ({model.label})", completion.text)])
        try:
            data = parse_consensus(completion.text, rules.shape)
        except JudgeError as exc:
            record["error"] = str(exc)
            return self._component(common, panel, {}, None, None, None, f"panel consensus: {shown}; unscored",
                                   str(exc), combined, usages)
        record["data"] = data
        result = rules.read(data, candidate_names(case), participant_names(case))
        participants = dict(result.participants or {})
        if result.raw is None:
            record["error"] = result.error
            return self._component(common, panel, participants, None, None, None,
                                   f"panel consensus: {shown}; unscored", result.error, combined, usages)
        low, high = self.judge.scale
        raw, problem = place_on_scale(result.raw, low, high, self.judge.clamp)
        if raw is None:
            record["error"] = f"consensus verdict {problem}"
            return self._component(common, panel, participants, None, result.raw, None,
                                   f"panel consensus: {shown}; off the scale", record["error"], combined, usages)
        notes = "".join(f" ({note})" for note in (problem, *result.problems) if note)
        detail = f"panel consensus of {len(usable)} ({shown}) -> {raw:g}/{high:g}{notes}"
        return self._component(common, panel, participants, round((raw - low) / (high - low), 6), raw, None,
                               detail, None, combined, usages)

    @staticmethod
    def _component(
        common: dict[str, Any],
        panel: dict[str, Any],
        participants: Mapping[str, float],
        value: float | None,
        raw: float | None,
        passed: bool | None,
        detail: str,
        error: str | None,
        judge_output: str,
        usages: Sequence[Mapping[str, Any]],
    ) -> ComponentScore:
        extra: dict[str, Any] = {"panel": panel}
        if participants:
            extra["participants"] = dict(participants)
        return ComponentScore(value=value, raw=raw, passed=passed, detail=detail, error=error,
                              judge_output=judge_output, usage=total_usage(usages), extra=extra, **common)
