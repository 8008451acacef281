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
import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.chat import Completion
from bench_plugin.endpoints import ModelSpec
from bench_plugin.errors import CaseError, JudgeError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.consensus import (
    check_consensus,
    consensus_scores,
    parse_consensus,
    reports_text,
)
from bench_plugin.scoring.judge.judge_reply import candidate_names, participant_names
from bench_plugin.scoring.judge.llm_judge import OPTION_KEYS, JudgeScorer, _check_options, _scale
from bench_plugin.scoring.judge.panel_combine import (
    AGGREGATES,
    combine,
    combine_by_key,
    spread,
    strict_majority,
)
from bench_plugin.scoring.judge.rubric import category_names, rubric_from_options
from bench_plugin.suite.spec import ScorerSpec

PANEL_KEYS = ("judges", "aggregate", "pass_at", "min_judges", "max_spread", "consensus")
JUDGE_KEYS = tuple(key for key in OPTION_KEYS if key != "judge")
READ_KEYS = ("parse", "participants", "rubric")  # with a consensus, judges' verdicts are read only if asked
_IGNORED = frozenset({"name", "type"})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_panel(options: Mapping[str, Any]) -> None:
    """Check a panel's options (its own, then the judges' as ``llm_judge`` checks them).

    Raises:
        ValueError: naming the option that is wrong.
    """
    allowed = (*PANEL_KEYS, *JUDGE_KEYS)
    for key in options:
        if key not in allowed and key not in _IGNORED:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown option {key!r} for llm_judge_panel{hint} (options: {', '.join(allowed)})")
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
    if "pass_at" in options and (how != "majority" or not _number(options["pass_at"]) or not 0 <= options["pass_at"] <= 1):
        raise ValueError("pass_at (a number from 0 to 1: a judge's value that votes pass) goes with aggregate: majority")
    least = options.get("min_judges", 1)
    if not isinstance(least, int) or isinstance(least, bool) or not 1 <= least <= len(judges):
        raise ValueError(f"min_judges must be a whole number from 1 to {len(judges)}, got {least!r}")
    if "max_spread" in options and (not _number(options["max_spread"]) or options["max_spread"] < 0):
        raise ValueError(f"max_spread must be a number of points on the scale, 0 or more, got {options['max_spread']!r}")
    _check_options(judge_options(options, judges[0]))
    if how == "consensus":
        check_consensus(options["consensus"])


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


def total_usage(usages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Tokens and latency summed over several calls (None where no call reported them)."""

    def total(key: str) -> Any:
        known = [usage[key] for usage in usages if usage.get(key) is not None]
        return sum(known) if known else None

    return {"input_tokens": total("input_tokens"), "output_tokens": total("output_tokens"),
            "latency_s": total("latency_s"), "calls": sum(1 for usage in usages if usage)}


def completion_usage(completion: Completion) -> dict[str, Any]:
    return {"input_tokens": completion.usage.input_tokens, "output_tokens": completion.usage.output_tokens,
            "latency_s": completion.latency_s}


class PanelScorer:
    """Asks every judge of ``judges:`` in parallel, then combines their verdicts."""

    calls_judges = True

    def __init__(self) -> None:
        self.judge = JudgeScorer()

    def validate(self, spec: ScorerSpec) -> None:
        """Raises: ValueError for options that are wrong (see ``check_panel``)."""
        try:
            check_panel(spec.options)
        except TypeError as exc:
            raise ValueError(str(exc)) from exc

    def _model(self, spec: ScorerSpec, context: ScoringContext, name: str) -> ModelSpec:
        one = ScorerSpec(name=spec.name, type="llm_judge", options={"judge": name}, key=spec.key, line=spec.line)
        return self.judge._judge(one, context)

    async def _ask(self, spec: ScorerSpec, context: ScoringContext, name: str, reads: bool) -> dict[str, Any]:
        model = self._model(spec, context, name)
        one = ScorerSpec(name=spec.name, type="llm_judge", options=judge_options(spec.options, name),
                         key=spec.key, line=spec.line)
        extra = {"judge": {"name": name, "id": model.id, "label": model.label}}
        if reads:
            found = (await self.judge.ask(one, context, model, extra)).to_dict()
        else:  # a consensus reads the reports; nothing asks for a verdict of each
            completion = await self.judge.call(one, context, model, extra)
            found = {"value": None, "raw": None, "detail": "report only", "judge_output": completion.text,
                     "error": None, "usage": completion_usage(completion)}
        found.pop("name", None)
        return {"judge": name, "label": model.label, **found}

    async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
        """Ask the judges, combine their verdicts, record the spread.

        Raises:
            CaseError: for bad options or an unknown judge. ProviderError: when a call fails.
        """
        case = context.case
        try:
            self.validate(spec)
        except ValueError as exc:
            raise CaseError(f"llm_judge_panel: {exc}", path=case.path, line=spec.line, key=spec.key) from exc
        options = spec.options
        how = options.get("aggregate", "mean")
        reads = how != "consensus" or any(key in options for key in READ_KEYS)
        outcomes = await asyncio.gather(*(self._ask(spec, context, name, reads) for name in options["judges"]),
                                        return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        entries = [outcome for outcome in outcomes if isinstance(outcome, dict)]
        return await self._combine(spec, context, entries, reads)

    async def _combine(
        self, spec: ScorerSpec, context: ScoringContext, entries: list[dict[str, Any]], reads: bool
    ) -> ComponentScore:
        options = spec.options
        how = options.get("aggregate", "mean")
        low, high = _scale(judge_options(options, options["judges"][0]))
        scored = [entry for entry in entries if entry["value"] is not None]
        verdicts = [float(entry["raw"]) for entry in scored]
        gap = spread(verdicts)
        limit = options.get("max_spread")
        flagged = gap is not None and limit is not None and gap > limit
        rubric = rubric_from_options(options.get("rubric"))
        # the rubric's order, as a list: a record's mappings come back from results.jsonl with sorted keys
        panel: dict[str, Any] = {"aggregate": how, "judges": entries, "verdicts": len(scored), "spread": gap,
                                 "max_spread": limit, "flagged": flagged, "consensus": None,
                                 "categories": category_names(rubric)}
        categories = combine_by_key([entry.get("categories") or {} for entry in scored], how)
        participants = combine_by_key([entry["participants"] for entry in scored if entry.get("participants")], how)
        usages = [entry.get("usage") or {} for entry in entries]
        outputs = [(entry["label"], entry.get("judge_output") or "") for entry in entries]
        common: dict[str, Any] = {"name": spec.name, "categories": categories}
        least = options.get("min_judges", 2 if how == "consensus" else 1)
        usable = scored if reads else [entry for entry in entries if (entry.get("judge_output") or "").strip()]
        shown = ", ".join(
            f"{entry['label']} {entry['raw']:g}" if entry["value"] is not None
            else f"{entry['label']} {'report' if not reads else 'no verdict'}" for entry in entries
        )
        spread_text = "" if gap is None else f"; spread {gap:g}" + (f" > {limit:g}: judges disagree" if flagged else "")
        if len(usable) < least:
            unread = "; ".join(f"{entry['label']}: {entry.get('error') or 'empty report'}"
                               for entry in entries if entry not in usable)
            error = f"{len(usable)} of {len(entries)} judges gave a usable report, {least} needed (min_judges): {unread}"
            return self._component(common, panel, participants, None, None, None,
                                   f"panel ({how}): {shown}; unscored", error, reports_text(outputs), usages)
        if how == "majority":
            pass_at = float(options.get("pass_at", 0.5))
            votes = [float(entry["value"]) >= pass_at for entry in scored]
            passed = strict_majority(votes)
            detail = f"panel majority: {sum(votes)} of {len(votes)} pass ({shown}){spread_text}"
            return self._component(common, panel, participants, 1.0 if passed else 0.0, sum(votes) / len(votes),
                                   passed, detail, None, reports_text(outputs), usages)
        if how != "consensus":
            raw = combine(verdicts, how)
            detail = f"panel {how} of {len(scored)}: {shown} -> {raw:g}/{high:g}{spread_text}"
            return self._component(common, panel, participants, round((raw - low) / (high - low), 6), raw, None,
                                   detail, None, reports_text(outputs), usages)
        return await self._consensus(spec, context, common, panel, usable, outputs, usages, (low, high),
                                     f"{shown}{spread_text}")

    async def _consensus(
        self,
        spec: ScorerSpec,
        context: ScoringContext,
        common: dict[str, Any],
        panel: dict[str, Any],
        usable: list[dict[str, Any]],
        outputs: list[tuple[str, str]],
        usages: list[Mapping[str, Any]],
        scale: tuple[float, float],
        shown: str,
    ) -> ComponentScore:
        options, case = spec.options, context.case
        settings = options["consensus"]
        reports = [(entry["label"], entry.get("judge_output") or "") for entry in usable]
        extra = {
            "reports": [{key: entry.get(key) for key in ("judge", "label", "raw", "categories", "participants")}
                        | {"text": entry.get("judge_output") or ""} for entry in usable],
            "reports_text": reports_text(reports),
        }
        step_options = {key: settings[key] for key in ("prompt", "prompt_file", "system", "system_file")
                        if key in settings}
        step_options.update({key: options[key] for key in ("target", "reference", "rubric") if key in options})
        step = ScorerSpec(name=spec.name, type="llm_judge", options={**step_options, "judge": settings["judge"]},
                          key=f"{spec.key}.consensus", line=spec.line)
        model = self.judge._judge(step, context)
        completion = await self.judge.call(step, context, model, extra)
        usages = [*usages, completion_usage(completion)]
        record: dict[str, Any] = {"judge": settings["judge"], "label": model.label, "output": completion.text,
                                  "data": None, "error": None}
        panel["consensus"] = record
        combined = reports_text([*outputs, (f"consensus ({model.label})", completion.text)])
        try:
            data = parse_consensus(completion.text, settings)
        except JudgeError as exc:
            record["error"] = str(exc)
            return self._component(common, panel, {}, None, None, None, f"panel consensus: {shown}; unscored",
                                   str(exc), combined, usages)
        record["data"] = data
        result = consensus_scores(data, settings, candidate_names(case), participant_names(case))
        participants = dict(result.participants or {})
        if result.raw is None:
            record["error"] = result.error
            return self._component(common, panel, participants, None, None, None,
                                   f"panel consensus: {shown}; unscored", result.error, combined, usages)
        low, high = scale
        raw, problem = place_on_scale(result.raw, low, high, bool(options.get("clamp", False)))
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
