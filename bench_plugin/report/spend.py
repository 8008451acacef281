"""What this session's calls spent against its budget, and what the response cache spared them.

Tallied record by record as cases finish, from the records this session wrote (not those reused from a named
run, nor those kept from an earlier results.jsonl): under xdist the controller sees every worker's cases,
where each worker's runner counts only its own. The budgets are ``--bench-budget-usd`` and
``--bench-budget-tokens``. A dollar budget counts priced calls only, so the cases whose calls had no price
are named: a server of one's own, whose calls it neither counts nor stops, or the calls of a paid endpoint
without a price that were in flight when the budget stopped at its first (``limits.py``). The terminal's
cache line counts these calls too: a resumed run's reused cases made no call this session, and a re-judged
case made only its judges' calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.report.case_data import cost_note_of, number
from bench_plugin.results.record import CACHE_COUNTS, CACHE_HIT


def _spent_now(entry: Any, rejudged: bool) -> bool:
    """Whether a logged call was made this session: a re-judged case made only its judges' calls."""
    return isinstance(entry, Mapping) and (not rejudged or entry.get("purpose") == "judge")


def _spent_usage(record: Mapping[str, Any], rejudged: bool) -> list[Mapping[str, Any]]:
    """The usage a case spent this session: its model's and its judges', or a re-judged case's judges' alone."""
    usage = record.get("usage")
    if not isinstance(usage, Mapping):
        return []
    spent = [usage.get("judge")] if rejudged else [usage, usage.get("judge")]
    return [part for part in spent if isinstance(part, Mapping)]


def _first_cost_note(parts: list[Mapping[str, Any]]) -> str | None:
    """Why the first of the parts with an unpriced call has no price; None when every part is priced."""
    return next((note for part in parts if (note := cost_note_of(part))), None)


class SessionSpend:
    """Dollars, tokens, unpriced cases and cache use of the records this session wrote, judges included."""

    def __init__(self) -> None:
        self.usd = 0.0
        self.tokens = 0
        self.unpriced = 0  # cases with a call (the model's or a judge's) that used tokens at no known price
        self.note: str | None = None  # why the first of them had no price
        self.cache = dict.fromkeys(CACHE_COUNTS.values(), 0)  # the calls' lookups (report.summary.count_cache_use)

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one record's calls; a re-judged case spent only its judges' calls this session."""
        rejudged = bool(record.get("rejudged"))
        for entry in record.get("call_log") or ():
            if _spent_now(entry, rejudged):
                self._add_call(entry)
        self._add_usage(_spent_usage(record, rejudged))

    def _add_call(self, entry: Mapping[str, Any]) -> None:
        """Count a call's cache lookup, and its tokens unless the cache answered it."""
        key = CACHE_COUNTS.get(str(entry.get("cache")))
        if key is not None:
            self.cache[key] += 1
        if entry.get("cache") != CACHE_HIT:  # an answer from the cache used no token of the budget
            self.tokens += int(sum(number(entry.get(name)) or 0 for name in ("input_tokens", "output_tokens")))

    def _add_usage(self, parts: list[Mapping[str, Any]]) -> None:
        """Add the cost of a case's usage parts (its model's, its judges'); note a case with an unpriced call."""
        for part in parts:
            self.usd += number(part.get("cost_usd")) or 0.0
        unpriced = _first_cost_note(parts)
        if unpriced is not None:
            self.unpriced += 1
            self.note = self.note or unpriced

    def cache_use(self) -> dict[str, int] | None:
        """``{"hits", "misses", "refreshed"}`` of this session's calls, or None when none used the cache."""
        return dict(self.cache) if any(self.cache.values()) else None

    def describe(self, usd: float | None, tokens: int | None) -> list[str]:
        """A terminal line for each budget asked for: what was spent of it, and what it could not count."""
        lines = []
        if usd is not None:
            left_out = (f"; {self.unpriced} case{'s' * (self.unpriced != 1)} had calls without a price, not counted: "
                        f"{self.note}") if self.unpriced else ""
            lines.append(f"budget: ${self.usd:.4f} of ${usd:g} spent (--bench-budget-usd){left_out}")
        if tokens is not None:
            lines.append(f"budget: {self.tokens} of {tokens} tokens used (--bench-budget-tokens)")
        return lines
