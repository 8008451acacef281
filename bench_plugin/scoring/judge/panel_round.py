"""One case's panel round: the judges' entries, and what the component records of them.

The outcomes that need no further call are here too (too few usable replies, a majority vote, a
mean, median or min); a consensus asks one more model (``panel_consensus.py``).
An entry is one judge's reading as a mapping (``judge``, ``label``, ``value``, ``raw``,
``judge_output``, ``error``, ``usage``...); ``value`` is None when the judge gave no verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_plugin.scoring.context import ComponentScore
from bench_plugin.scoring.judge.consensus import reports_text
from bench_plugin.scoring.judge.panel_combine import combine, combine_by_key, spread, strict_majority
from bench_plugin.scoring.judge.rubric import Rubric, category_names
from bench_plugin.scoring.judge.usage import total_usage

Entry = dict[str, Any]


def entry_text(entry: Mapping[str, Any]) -> str:
    """What the judge wrote (empty when it wrote nothing)."""
    return str(entry.get("judge_output") or "")


def panel_component(
    common: Mapping[str, Any],
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
    """The panel's component: its value, and the whole round under ``extra.panel``."""
    extra: dict[str, Any] = {"panel": panel}
    if participants:
        extra["participants"] = dict(participants)
    return ComponentScore(value=value, raw=raw, passed=passed, detail=detail, error=error,
                          judge_output=judge_output, usage=total_usage(usages), extra=extra, **common)


@dataclass(frozen=True)
class PanelRound:
    """The judges' entries for one case, and what every outcome of the panel records of them.

    ``scored`` are the entries with a verdict; ``usable`` those that count towards ``min_judges``
    (the scored ones, or, when only a consensus reads the replies, those with any text); ``shown``
    lists each judge's verdict, ``spread_text`` says how far apart they are.
    """

    how: str
    entries: list[Entry]
    scored: list[Entry]
    usable: list[Entry]
    panel: dict[str, Any]
    common: dict[str, Any]
    participants: dict[str, float]
    shown: str
    spread_text: str

    @property
    def usages(self) -> list[Mapping[str, Any]]:
        """Each judge call's tokens and latency."""
        return [entry.get("usage") or {} for entry in self.entries]

    @property
    def outputs(self) -> list[tuple[str, str]]:
        """Each judge's label and reply, as the consensus reads them."""
        return [(entry["label"], entry_text(entry)) for entry in self.entries]

    def component(self, value: float | None, raw: float | None, passed: bool | None, detail: str,
                  error: str | None = None) -> ComponentScore:
        """The component of an outcome decided by the judges alone."""
        return panel_component(self.common, self.panel, self.participants, value, raw, passed, detail, error,
                               reports_text(self.outputs), self.usages)

    def unscored(self, least: int) -> ComponentScore:
        """Fewer than ``least`` usable reports: the case is unscored, and the error says whose were unusable."""
        unread = "; ".join(f"{entry['label']}: {entry.get('error') or 'empty report'}"
                           for entry in self.entries if entry not in self.usable)
        error = (f"{len(self.usable)} of {len(self.entries)} judges gave a usable report, {least} needed "
                 f"(min_judges): {unread}")
        return self.component(None, None, None, f"panel ({self.how}): {self.shown}; unscored", error)

    def majority(self, pass_at: float) -> ComponentScore:
        """Pass when more than half the judges' values reach ``pass_at``; the value is 1 or 0."""
        votes = [float(entry["value"]) >= pass_at for entry in self.scored]
        passed = strict_majority(votes)
        detail = f"panel majority: {sum(votes)} of {len(votes)} pass ({self.shown}){self.spread_text}"
        return self.component(1.0 if passed else 0.0, sum(votes) / len(votes), passed, detail)

    def numeric(self, low: float, high: float) -> ComponentScore:
        """The mean, median or min of the verdicts, on the judge's scale ``[low, high]``."""
        raw = combine([float(entry["raw"]) for entry in self.scored], self.how)
        detail = f"panel {self.how} of {len(self.scored)}: {self.shown} -> {raw:g}/{high:g}{self.spread_text}"
        return self.component(round((raw - low) / (high - low), 6), raw, None, detail)


def _shown(entries: Sequence[Entry], reads: bool) -> str:
    """Each judge and its verdict: ``A 7, B no verdict`` (``report`` when nobody reads verdicts)."""
    missing = "no verdict" if reads else "report"
    return ", ".join(
        f"{entry['label']} {entry['raw']:g}" if entry["value"] is not None else f"{entry['label']} {missing}"
        for entry in entries
    )


def _spread_text(panel: Mapping[str, Any]) -> str:
    """``; spread 3``, with ``> 2: judges disagree`` when it is flagged (nothing with one verdict)."""
    if panel["spread"] is None:
        return ""
    flag = f" > {panel['max_spread']:g}: judges disagree" if panel["flagged"] else ""
    return f"; spread {panel['spread']:g}{flag}"


def _panel_record(
    how: str, entries: list[Entry], scored: list[Entry], limit: float | None, rubric: Rubric | None
) -> dict[str, Any]:
    """The component's ``panel``: the entries, the spread of the verdicts and whether it is too wide."""
    gap = spread([float(entry["raw"]) for entry in scored])
    # the rubric's order, as a list: a record's mappings come back from results.jsonl with sorted keys
    return {"aggregate": how, "judges": entries, "verdicts": len(scored), "spread": gap, "max_spread": limit,
            "flagged": gap is not None and limit is not None and gap > limit, "consensus": None,
            "categories": category_names(rubric)}


def gather_round(
    name: str, how: str, entries: list[Entry], *, reads: bool, limit: float | None, rubric: Rubric | None
) -> PanelRound:
    """The round of one case, from its judges' entries.

    Args:
        name: the component's name.
        how: the ``aggregate``.
        entries: one per judge, in ``judges:`` order.
        reads: whether the judges' verdicts are read (not only a consensus's).
        limit: ``max_spread``.
        rubric: the judges' rubric.
    """
    scored = [entry for entry in entries if entry["value"] is not None]
    panel = _panel_record(how, entries, scored, limit, rubric)
    usable = scored if reads else [entry for entry in entries if entry_text(entry).strip()]
    return PanelRound(how, entries, scored, usable, panel, {"name": name, "categories": _categories(scored, how)},
                      _participants(scored, how), _shown(entries, reads), _spread_text(panel))


def _categories(scored: Sequence[Entry], how: str) -> dict[str, float]:
    """Each rubric category's scores combined across the judges that gave a verdict."""
    return combine_by_key([entry.get("categories") or {} for entry in scored], how)


def _participants(scored: Sequence[Entry], how: str) -> dict[str, float]:
    """Each participant's scores combined across the judges that rated them."""
    return combine_by_key([entry["participants"] for entry in scored if entry.get("participants")], how)
