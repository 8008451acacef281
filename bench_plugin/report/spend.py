"""What this session's calls spent, against its budget (``--bench-budget-usd``, ``--bench-budget-tokens``).

Tallied record by record as cases finish, from the records this session wrote (not those reused from a named
run, nor those kept from an earlier results.jsonl): under xdist the controller sees every worker's cases,
where each worker's runner counts only its own. A dollar budget counts priced calls only, so the cases whose
calls had no price are named: a server of one's own, whose calls it neither counts nor stops, or the calls of
a paid endpoint without a price that were in flight when the budget stopped at its first (``limits.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.report.case_data import cost_note_of, number


class SessionSpend:
    """Dollars, tokens and unpriced cases of the records this session wrote, judges included."""

    def __init__(self) -> None:
        self.usd = 0.0
        self.tokens = 0
        self.unpriced = 0  # cases with a call (the model's or a judge's) that used tokens at no known price
        self.note: str | None = None  # why the first of them had no price

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one record's calls; a re-judged case spent only its judges' calls this session."""
        usage = record.get("usage")
        if not isinstance(usage, Mapping):
            return
        spent = [usage.get("judge")] if record.get("rejudged") else [usage, usage.get("judge")]
        parts = [part for part in spent if isinstance(part, Mapping)]
        for part in parts:
            self.usd += number(part.get("cost_usd")) or 0.0
            self.tokens += int(sum(number(part.get(key)) or 0 for key in ("input_tokens", "output_tokens")))
        unpriced = next((note for part in parts if (note := cost_note_of(part))), None)
        if unpriced is not None:
            self.unpriced += 1
            self.note = self.note or unpriced

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
