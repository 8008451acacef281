"""A panel's consensus step: one more model reads the judges' replies and its JSON gives the verdict.

It is asked with the consensus's own prompt and the panel's target, reference and rubric; its
template also sees ``reports`` (each judge's reading and text) and ``reports_text``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.errors import JudgeError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.consensus import Consensus, ConsensusResult, parse_consensus, reports_text
from bench_plugin.scoring.judge.judge_reply import candidate_names, participant_names
from bench_plugin.scoring.judge.panel_round import Entry, PanelRound, entry_text, panel_component
from bench_plugin.scoring.judge.prompt import JudgePrompt
from bench_plugin.scoring.judge.usage import completion_usage
from bench_plugin.suite.spec import CaseSpec

ENTRY_KEYS = ("judge", "label", "raw", "categories", "participants")  # what ``reports`` shows of each judge


def place_on_scale(raw: float, low: float, high: float, clamp: bool) -> tuple[float | None, str]:
    """The verdict on the scale (clamped when asked), or None and why not."""
    if low <= raw <= high:
        return raw, ""
    if clamp:
        return min(max(raw, low), high), f"{raw:g} clamped to the scale [{low:g}, {high:g}]"
    return None, f"{raw:g} is outside the scale [{low:g}, {high:g}] (set clamp: true to clamp it)"


def _consensus_variables(usable: list[Entry]) -> dict[str, Any]:
    """What the consensus's template sees of the usable replies: ``reports`` and ``reports_text``."""
    return {
        "reports": [{key: entry.get(key) for key in ENTRY_KEYS} | {"text": entry_text(entry)} for entry in usable],
        "reports_text": reports_text([(entry["label"], entry_text(entry)) for entry in usable]),
    }


@dataclass(frozen=True)
class _Outcome:
    """What the consensus's reply gave: the component's value and raw verdict, or why there is none."""

    detail: str
    value: float | None = None
    raw: float | None = None
    error: str | None = None
    participants: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PanelConsensus:
    """The consensus step: how its model is asked, and how its JSON is read.

    It is asked with the consensus's own prompt and the panel's target, reference and rubric.
    """

    prompt: JudgePrompt
    rules: Consensus

    async def decide(
        self, context: ScoringContext, panel_round: PanelRound, scale: tuple[float, float], clamp: bool
    ) -> ComponentScore:
        """Ask the consensus model about the usable replies and read its verdict onto ``scale``.

        The consensus's call and reading are kept in the panel's ``consensus``.
        """
        model = self.prompt.model(context)
        completion = await self.prompt.call(context, model, _consensus_variables(panel_round.usable))
        record: dict[str, Any] = {"judge": self.rules.judge, "label": model.label, "output": completion.text,
                                  "data": None, "error": None}
        panel_round.panel["consensus"] = record
        shown = f"{panel_round.shown}{panel_round.spread_text}"
        result = self._read(completion.text, context.case, record)
        if result.raw is None:
            record["error"] = result.error
            outcome = _Outcome(f"panel consensus: {shown}; unscored", error=result.error,
                               participants=dict(result.participants or {}))
        else:
            outcome = _on_scale(result, result.raw, scale, clamp, shown, len(panel_round.usable), record)
        combined = reports_text([*panel_round.outputs, (f"consensus ({model.label})", completion.text)])
        usages = [*panel_round.usages, completion_usage(completion)]
        return panel_component(panel_round.common, panel_round.panel, outcome.participants, outcome.value,
                               outcome.raw, None, outcome.detail, outcome.error, combined, usages)

    def _read(self, text: str, case: CaseSpec, record: dict[str, Any]) -> ConsensusResult:
        """The verdict in the reply, not yet on the scale; ``record`` gets the reply's JSON."""
        try:
            data = parse_consensus(text, self.rules.shape)
        except JudgeError as exc:
            return ConsensusResult(None, None, error=str(exc))
        record["data"] = data
        return self.rules.read(data, candidate_names(case), participant_names(case))


def _on_scale(
    result: ConsensusResult, raw: float, scale: tuple[float, float], clamp: bool, shown: str, count: int,
    record: dict[str, Any],
) -> _Outcome:
    """The verdict ``raw`` placed on the scale; off the scale (and not clamped), the case is unscored."""
    low, high = scale
    participants = dict(result.participants or {})
    placed, problem = place_on_scale(raw, low, high, clamp)
    if placed is None:
        record["error"] = f"consensus verdict {problem}"
        return _Outcome(f"panel consensus: {shown}; off the scale", raw=raw, error=record["error"],
                        participants=participants)
    notes = "".join(f" ({note})" for note in (problem, *result.problems) if note)
    detail = f"panel consensus of {count} ({shown}) -> {placed:g}/{high:g}{notes}"
    return _Outcome(detail, round((placed - low) / (high - low), 6), placed, participants=participants)
