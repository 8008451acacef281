"""A run page's question: its filters, its sort and its page, read once from the URL's query.

Filters: suite, model, task, tag and status (exact), a component's value at least or below a threshold, and free
text over the prompt and output. Sort: any column, missing values last. Every value from the URL is only compared
with the run's own values: it is never a path, and an unknown sort falls back to the file's order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any
from urllib.parse import urlencode

from bench_plugin.view.index import CaseRow

PAGE_SIZE = 100
"""Cases per page: the page stays small whatever the run's size."""
MAX_QUERY_CHARS = 500
"""The longest filter value read (a longer one is cut)."""
COLUMNS: dict[str, Callable[[CaseRow], Any]] = {
    "number": lambda row: row.number, "suite": lambda row: row.suite, "task": lambda row: row.task,
    "model": lambda row: row.model, "run": lambda row: row.run, "status": lambda row: row.status,
    "score": lambda row: row.composite, "cost": lambda row: row.cost_usd, "tokens": lambda row: row.tokens,
    "latency": lambda row: row.latency_s,
}
"""The sortable columns by their name in the URL (and ``component:NAME`` for a component)."""
_TEXT_FILTERS = ("suite", "model", "task", "tag", "status")
_FIELD_FILTERS = ("suite", "model", "task", "status")  # equal to a row's field (a tag: one of its tags)


@dataclass(frozen=True)
class CaseQuery:
    """What a run page shows: which cases, in which order, which page of them."""

    suite: str = ""
    model: str = ""
    task: str = ""
    tag: str = ""
    status: str = ""
    component: str = ""
    at_least: float | None = None
    below: float | None = None
    text: str = ""
    sort: str = "number"
    descending: bool = False
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, Sequence[str]]) -> CaseQuery:
        """The query of a URL's parameters (``urllib.parse.parse_qs``); values that do not read are ignored."""
        def first(name: str) -> str:
            values = params.get(name) or [""]
            return values[0][:MAX_QUERY_CHARS]

        return cls(**{name: first(name) for name in (*_TEXT_FILTERS, "component", "text")},
                   sort=first("sort") or str(_DEFAULTS["sort"]), at_least=_threshold(first("at_least")),
                   below=_threshold(first("below")),
                   descending=first("order") == "desc", page=max(1, _whole(first("page")) or 1))

    def select(self, rows: Sequence[CaseRow]) -> list[CaseRow]:
        """The rows that pass every filter, sorted."""
        tests = self._tests()
        kept = [row for row in rows if all(test(row) for test in tests)]
        key = self._sort_key()
        present = [row for row in kept if key(row) is not None]
        absent = [row for row in kept if key(row) is None]
        present.sort(key=key, reverse=self.descending)
        return present + absent

    def _tests(self) -> list[Callable[[CaseRow], bool]]:
        """One test per filter given (a run of 10,000 cases is filtered on every request: no test of an empty one)."""
        given = [(name, getattr(self, name)) for name in _FIELD_FILTERS]
        tests = [_equals(name, wanted) for name, wanted in given if wanted]
        if self.tag:
            tests.append(lambda row: self.tag in row.tags)
        if self.component:
            tests.append(lambda row: self._component_matches(row.components.get(self.component)))
        if self.text:
            wanted = self.text.casefold()
            tests.append(lambda row: wanted in row.text)
        return tests

    def _component_matches(self, value: float | None) -> bool:
        if value is None:
            return self.at_least is None and self.below is None
        return (self.at_least is None or value >= self.at_least) and (self.below is None or value < self.below)

    def _sort_key(self) -> Callable[[CaseRow], Any]:
        if self.sort.startswith("component:"):
            name = self.sort.removeprefix("component:")
            return lambda row: row.components.get(name)
        return COLUMNS.get(self.sort, COLUMNS["number"])

    def params(self, **changes: Any) -> str:
        """This query as URL parameters (the defaults left out), with ``changes``; starts with ``?`` unless empty."""
        query = replace(self, **changes)
        pairs = [(name, _shown(value)) for name, value in _values(query) if value != _DEFAULTS[name]]
        text = urlencode([("order" if name == "descending" else name, value) for name, value in pairs])
        return f"?{text}" if text else ""

    def sorted_by(self, column: str) -> str:
        """The parameters that sort by ``column``: ascending first, then the other way."""
        descending = self.sort == column and not self.descending
        return self.params(sort=column, descending=descending, page=1)


def _equals(name: str, wanted: str) -> Callable[[CaseRow], bool]:
    """Whether a row's field ``name`` is ``wanted``."""
    read = attrgetter(name)
    return lambda row: str(read(row)) == wanted


_DEFAULTS = {field.name: field.default for field in fields(CaseQuery)}


def _values(query: CaseQuery) -> list[tuple[str, Any]]:
    return [(field.name, getattr(query, field.name)) for field in fields(query)]


def _shown(value: Any) -> str:
    if value is True:
        return "desc"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _threshold(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _whole(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) < 9 else None


def page_of(rows: Sequence[CaseRow], page: int) -> tuple[list[CaseRow], int, int]:
    """The rows of ``page`` (1-based, past the end: the last), that page's number, and how many pages there are."""
    pages = max(1, math.ceil(len(rows) / PAGE_SIZE))
    page = min(page, pages)
    return list(rows[(page - 1) * PAGE_SIZE:page * PAGE_SIZE]), page, pages
