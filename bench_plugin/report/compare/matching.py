"""Which cases of the baseline and the current run are the same case, asked the same way.

Cases pair on their suite, task, prompt variant, model name and run number (``CaseKey``). A pair is compared only
while both sides asked the same: the same messages, the same turns, conversation or tools (``asked``) and, when
both records keep it (a named run), the same scoring (``scored_by``). The model's id may differ: a new version of
a model under the same name is what a comparison is for. Every case left out is listed with why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bench_plugin.report.compare.facts import CaseFacts, CaseKey

PROMPT = "prompt"  # the messages it sent differ
ASKED = "asked"  # its turns, conversation or tools differ
SCORING = "scoring"  # its scorers, composite, threshold or judges differ


@dataclass(frozen=True)
class ChangedCase:
    """A case both sides ran, asked or scored otherwise: listed, not compared."""

    nodeid: str
    what: tuple[str, ...]  # PROMPT, ASKED, SCORING


@dataclass(frozen=True)
class Matching:
    """The pairs to compare, and the cases left out.

    Attributes:
        pairs: (baseline, current) facts of each case compared, in the current run's order.
        baseline_only: node ids the current run does not have.
        current_only: node ids the baseline does not have.
        changed: cases both have, asked or scored otherwise.
    """

    pairs: list[tuple[CaseFacts, CaseFacts]] = field(default_factory=list)
    baseline_only: list[str] = field(default_factory=list)
    current_only: list[str] = field(default_factory=list)
    changed: list[ChangedCase] = field(default_factory=list)


def match_cases(baseline: Iterable[CaseFacts], current: Iterable[CaseFacts]) -> Matching:
    """Pair each current case with the baseline's case of the same key; see the module docstring."""
    earlier: dict[CaseKey, CaseFacts] = {facts.key: facts for facts in baseline}
    matching = Matching()
    for now in current:
        before = earlier.pop(now.key, None)
        if before is None:
            matching.current_only.append(now.nodeid)
            continue
        what = differences(before, now)
        if what:
            matching.changed.append(ChangedCase(now.nodeid, what))
        else:
            matching.pairs.append((before, now))
    matching.baseline_only.extend(facts.nodeid for facts in earlier.values())
    return matching


def differences(before: CaseFacts, now: CaseFacts) -> tuple[str, ...]:
    """What the two readings of one case asked or scored otherwise (empty: they can be compared)."""
    found = []
    if before.prompt != now.prompt:
        found.append(PROMPT)
    if before.asked != now.asked:
        found.append(ASKED)
    if None not in (before.scored_by, now.scored_by) and before.scored_by != now.scored_by:
        found.append(SCORING)
    return tuple(found)


def count_changes(changed: Sequence[ChangedCase]) -> dict[str, int]:
    """How many changed cases differ in each way (a case may count under several)."""
    counts = dict.fromkeys((PROMPT, ASKED, SCORING), 0)
    for case in changed:
        for what in case.what:
            counts[what] += 1
    return {what: count for what, count in counts.items() if count}
