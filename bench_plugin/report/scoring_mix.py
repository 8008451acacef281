"""Re-judging part of a run (``--bench-rejudge -k``): the records left as they were may be scored otherwise.

The reports' means take every record of the run. When only some were scored again, under a changed rubric,
judge or formula, the others keep their earlier scores and the two scorings meet in one mean. Each record says
how it was scored (``scored_by``, a digest of its scorers, composite, threshold and judges): those kept whose
digest none of the re-judged records has, or that do not say, are counted, and the reports say so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from bench_plugin.results.record import CaseRecord


def scored_apart(records: Iterable[CaseRecord], rejudged: Collection[str]) -> dict[str, int] | None:
    """``{"rejudged": M, "other": N}`` when N records not re-judged now may be scored otherwise; else None."""
    kept: list[str | None] = []
    new: set[str | None] = set()
    for record in records:
        if record.nodeid in rejudged:
            new.add(record.scored_by)
        else:
            kept.append(record.scored_by)
    other = sum(digest is None or digest not in new for digest in kept)
    return {"rejudged": len(rejudged), "other": other} if new and other else None


def describe_scored_apart(mix: Mapping[str, Any]) -> str:
    """The line report.md and the terminal show: two scorings in one mean, and how to have one."""
    other, rejudged = mix["other"], mix["rejudged"]
    many = other != 1
    return (f"{other} record{'s' * many} kept from before {'were' if many else 'was'} not re-judged this time "
            f"(-k, -m or --lf left {'them' if many else 'it'} out) and {'were' if many else 'was'} scored "
            f"otherwise than the {rejudged} re-judged, or {'do' if many else 'does'} not say how: the means mix "
            "two scorings (re-judge every case, without -k, to compare like with like)")
