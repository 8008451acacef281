"""The site: each URL path to its page, the same for the server and for ``--static``.

Paths name runs, cases and models by number only (``run/2/case/17.html``); a path that matches no route, or a
number that names nothing served, is a 404. Nothing in a URL is ever joined to a file path. Links are relative, so
the pages written as files link to each other as the served ones do.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from bench_plugin.report.compare.text import p_value, rate_change, rate_pair, score_change, score_pair
from bench_plugin.report.compare.verdicts import CompareSettings
from bench_plugin.report.quality_gates.stored import judge_stored_results
from bench_plugin.report.quality_gates.verdicts import BROKEN, HELD
from bench_plugin.view.case import case_view, pretty
from bench_plugin.view.comparison import Comparison, compare_models, compare_runs, text_diff
from bench_plugin.view.images import ImagePart, image_file, image_parts, image_roots
from bench_plugin.view.index import RunIndex, RunIndexes
from bench_plugin.view.pages import render
from bench_plugin.view.query import CaseQuery, page_of
from bench_plugin.view.runs import RunSource

HTML = "text/html; charset=utf-8"
COLUMNS = [("number", "#"), ("suite", "Suite"), ("task", "Task"), ("model", "Model"), ("run", "Run"),
           ("status", "Status"), ("score", "Score")]
_TAIL = [("cost", "Cost"), ("tokens", "Tokens"), ("latency", "Latency (s)")]
KEPT_COMPARISONS = 16
"""Comparisons kept for the next request of their page (and for ``--static``, which links their cases)."""
_NUMERIC = {"number", "run", "score", "cost", "tokens", "latency"}


@dataclass(frozen=True)
class Response:
    """A page (or an image) and how to send it."""

    status: int
    body: bytes
    content_type: str = HTML
    location: str | None = None


class NotFound(LookupError):
    """The path names nothing served: the message says what was not found."""


_NUMBER = r"(\d{1,9})"


class Site:
    """Every page of the runs served.

    Args:
        sources: the runs.
        base: the folder ``bench view`` runs in: suites are named relative to it (their gates, their images).
        static: pages for files (no filter form, pages numbered in file names).
        settings: the comparisons' margin and confidence.
    """

    def __init__(self, sources: Sequence[RunSource], base: Path, *, static: bool = False,
                 settings: CompareSettings | None = None) -> None:
        self.indexes = RunIndexes(sources)
        self.base = base
        self.static = static
        self.settings = settings or CompareSettings()
        self._gate_texts: weakref.WeakKeyDictionary[RunIndex, str] = weakref.WeakKeyDictionary()
        self._comparisons: dict[tuple[Any, ...], Comparison] = {}
        self._lock = threading.Lock()
        self._routes: list[tuple[re.Pattern[str], Callable[..., Response]]] = [
            (re.compile(r"(?:index\.html)?"), self.runs_page),
            (re.compile(r"compare\.html"), self.compare_form),
            (re.compile(r"favicon\.ico"), self.no_icon),
            (re.compile(rf"run/{_NUMBER}"), self.to_run_page),
            (re.compile(rf"run/{_NUMBER}/(?:index\.html)?"), self.run_page),
            (re.compile(rf"run/{_NUMBER}/page-{_NUMBER}\.html"), self.run_page),
            (re.compile(rf"run/{_NUMBER}/charts\.html"), self.charts_page),
            (re.compile(rf"run/{_NUMBER}/case/{_NUMBER}\.html"), self.case_page),
            (re.compile(rf"run/{_NUMBER}/image/{_NUMBER}/{_NUMBER}"), self.image),
            (re.compile(rf"run/{_NUMBER}/models/{_NUMBER}/{_NUMBER}\.html"), self.models_page),
            (re.compile(rf"compare/{_NUMBER}/{_NUMBER}\.html"), self.compare_page),
            (re.compile(rf"diff/{_NUMBER}/{_NUMBER}/{_NUMBER}/{_NUMBER}\.html"), self.diff_page),
        ]

    def warm(self) -> None:
        """Index every run and compute its statistics now (the server does it in the background at start)."""
        for run_id in self.indexes.sources:
            index = self.indexes.get(run_id)
            if index is not None:
                _ = index.summary

    def respond(self, path: str, query: str = "") -> Response:
        """The response to a GET of ``path`` (the URL's path, as sent: never decoded) with ``query``."""
        path = path.lstrip("/")
        route = next(((page, found) for pattern, page in self._routes if (found := pattern.fullmatch(path))), None)
        if route is None:
            return self.missing("No such page.", path.count("/"))
        page, found = route
        try:
            params = parse_qs(query, max_num_fields=40)
        except ValueError:  # more query parameters than any page reads
            return self.missing("Too many query parameters.", path.count("/"))
        try:
            return page(*found.groups(default=""), params=params, depth=path.count("/"))
        except NotFound as exc:
            return self.missing(str(exc), path.count("/"))
        except OSError as exc:  # a results file removed or unreadable since it was found
            return self.missing(f"A run's results cannot be read now: {exc.strerror or exc}.", path.count("/"))

    def missing(self, message: str, depth: int) -> Response:
        """The 404 page."""
        return Response(404, self._page("missing.html", depth, title="Not found", message=message))

    def _page(self, template: str, depth: int, **values: Any) -> bytes:
        return render(template, root="../" * depth, static=self.static, page_name=template.removesuffix(".html"),
                      **values).encode("utf-8")

    def _index(self, run_id: str) -> RunIndex:
        index = self.indexes.get(run_id)
        if index is None:
            raise NotFound(f"No run {run_id} is served.")
        return index

    def runs_page(self, *, params: Any, depth: int) -> Response:
        """Every run: when, what, how it did, what it cost, its gates."""
        runs = []
        for source in self.indexes.sources.values():
            index = self._index(source.id)
            runs.append({"id": source.id, "name": source.name, **index.overview, "gates": self._gates(index),
                         "skipped": len(index.skipped)})
        sources = list(self.indexes.sources.values())
        return Response(200, self._page("runs.html", depth, title="Runs", runs=runs,
                                        neighbours=list(pairwise(sources))))

    def _gates(self, index: RunIndex) -> str:
        """The suites' quality gates over the run's records (suites inside the folder ``bench view`` runs in)."""
        if index not in self._gate_texts:
            self._gate_texts[index] = self._judge_gates(index)
        return self._gate_texts[index]

    def _judge_gates(self, index: RunIndex) -> str:
        base = self.base.resolve()
        suites = {path for path in {r.path for r in index.records} if (base / path).resolve().is_relative_to(base)}
        inside = [r for r in index.records if r.path in suites]
        verdicts = judge_stored_results(inside, base).values()
        if not verdicts:
            return "—"
        held = sum(verdict.outcome == HELD for verdict in verdicts)
        broken = sum(verdict.outcome == BROKEN for verdict in verdicts)
        return f"{held} hold, {broken} broken, {len(verdicts) - held - broken} skipped"

    def no_icon(self, *, params: Any, depth: int) -> Response:
        """The icon browsers ask for: none (a 404 would show as an error in the browser's console)."""
        return Response(204, b"", "image/x-icon")

    def compare_form(self, *, params: Any, depth: int) -> Response:
        """The runs page's form: to the comparison of the two runs chosen."""
        baseline, current = (str((params.get(name) or [""])[0]) for name in ("baseline", "current"))
        if not (baseline.isdigit() and current.isdigit()):
            raise NotFound("Choose two runs to compare.")
        return Response(303, b"", location=f"compare/{int(baseline)}/{int(current)}.html")

    def to_run_page(self, run_id: str, *, params: Any, depth: int) -> Response:
        """``run/2`` is ``run/2/``: the run page's relative links need the folder's slash."""
        return Response(303, b"", location=f"{int(run_id)}/")

    def run_page(self, run_id: str, page: str = "", *, params: Any, depth: int) -> Response:
        """A run: its leaderboard, model comparisons and cases, filtered, sorted and paged."""
        index = self._index(run_id)
        query = CaseQuery.parse(params)
        if page:
            query = CaseQuery(page=int(page))
        selected = query.select(index.rows)
        rows, shown_page, pages = page_of(selected, query.page)
        summary = index.summary if self.static else index.summary_if_ready()
        return Response(200, self._page(
            "run.html", depth, title=index.source.name, source=str(index.source.results), total=len(index.rows),
            computing=summary is None, suites=(summary or {}).get("suites") or [],
            model_pairs=list(combinations(enumerate(index.models), 2)),
            selects=[("suite", "Suite", index.choices("suite")), ("model", "Model", index.models),
                     ("status", "Status", index.choices("status")), ("tag", "Tag", index.tags)],
            tasks=index.choices("task")[:2000], components=index.components, query=query, rows=rows,
            matched=len(selected), page=shown_page, pages=pages, page_link=self._page_link(query),
            columns=[*COLUMNS, *((f"component:{name}", name) for name in index.components), *_TAIL],
            numeric=_NUMERIC | {f"component:{name}" for name in index.components}))

    def _page_link(self, query: CaseQuery) -> Callable[[int], str]:
        if self.static:
            return lambda page: "index.html" if page == 1 else f"page-{page}.html"
        return lambda page: f"index.html{query.params(page=page)}"

    def charts_page(self, run_id: str, *, params: Any, depth: int) -> Response:
        """The run's dashboard blocks: leaderboard with intervals, heat map, distributions, comparisons."""
        index = self._index(run_id)
        return Response(200, self._page("charts.html", depth, title=f"{index.source.name}: charts",
                                        blocks=index.charts))

    def case_page(self, run_id: str, number: str, *, params: Any, depth: int) -> Response:
        """One case: everything its record holds."""
        index, record = self._case(run_id, number)

        def image_link(part: ImagePart) -> str | None:
            return None if self._image_file(index, int(number), part) is None else f"../image/{number}/{part.index}"

        return Response(200, self._page("case.html", depth, title=f"{record.task} · {record.model_label}",
                                        view=case_view(record), r=record, pretty=pretty, image_link=image_link,
                                        elsewhere=self._elsewhere(run_id, int(number), record.nodeid)))

    def _elsewhere(self, run_id: str, number: int, nodeid: str) -> list[tuple[str, str]]:
        """(run name, path from the top to the two outputs side by side) for each other run served that has the case.

        Only from the server: ``--static`` writes the side-by-side pages its comparisons list, not every pair.
        """
        if self.static:
            return []
        found = []
        for other in self.indexes.sources.values():
            index = self.indexes.get(other.id) if other.id != run_id else None
            theirs = None if index is None else index.by_nodeid.get(nodeid)
            if theirs is not None:
                found.append((other.name, f"diff/{other.id}/{theirs}/{run_id}/{number}.html"))
        return found

    def _case(self, run_id: str, number: str) -> tuple[RunIndex, Any]:
        index = self._index(run_id)
        if int(number) >= len(index.rows):
            raise NotFound(f"Run {run_id} has no case {int(number)}.")
        try:
            return index, index.record(int(number))
        except LookupError as exc:
            raise NotFound(str(exc)) from exc

    def _image_file(self, index: RunIndex, number: int, part: ImagePart) -> tuple[Path, str] | None:
        record = index.records[number]
        return image_file(part, image_roots(record, index.source.folder, self.base))

    def image(self, run_id: str, number: str, which: str, *, params: Any, depth: int) -> Response:
        """An image file of a case, when it may show (``images.py``)."""
        index, record = self._case(run_id, number)
        parts = image_parts(record)
        found = self._image_file(index, int(number), parts[int(which)]) if int(which) < len(parts) else None
        if found is None:
            raise NotFound("No such image is served.")
        path, media_type = found
        return Response(200, path.read_bytes(), media_type)

    def models_page(self, run_id: str, first: str, second: str, *, params: Any, depth: int) -> Response:
        """Two models of one run, compared case by case."""
        index = self._index(run_id)
        models = index.models
        if max(int(first), int(second)) >= len(models):
            raise NotFound(f"Run {run_id} has no such model.")
        return self._comparison(self.models_compared(index, models[int(first)], models[int(second)]), depth)

    def compare_page(self, baseline: str, current: str, *, params: Any, depth: int) -> Response:
        """Two runs compared case by case."""
        return self._comparison(self.runs_compared(self._index(baseline), self._index(current)), depth)

    def runs_compared(self, baseline: RunIndex, current: RunIndex) -> Comparison:
        """Run ``current`` against run ``baseline`` (the last few comparisons are kept)."""
        key = (baseline.source.id, baseline.stamp, current.source.id, current.stamp)
        return self._remembered(key, lambda: compare_runs(baseline, current, self.settings))

    def models_compared(self, index: RunIndex, first: str, second: str) -> Comparison:
        """Model ``second`` against ``first`` in one run (the last few comparisons are kept)."""
        key = (index.source.id, index.stamp, first, second)
        return self._remembered(key, lambda: compare_models(index, first, second, self.settings))

    def _remembered(self, key: tuple[Any, ...], compare: Callable[[], Comparison]) -> Comparison:
        """A comparison made once for its indexes (a run's new index, after its file changed, makes it again)."""
        with self._lock:
            found = self._comparisons.pop(key, None) or compare()
            self._comparisons[key] = found
            while len(self._comparisons) > KEPT_COMPARISONS:
                self._comparisons.pop(next(iter(self._comparisons)))
        return found

    def _comparison(self, comparison: Comparison, depth: int) -> Response:
        return Response(200, self._page(
            "compare.html", depth, title=comparison.title, c=comparison, score_pair=score_pair,
            score_change=score_change, rate_pair=rate_pair, rate_change=rate_change, p_value=p_value))

    def diff_page(self, run_a: str, number_a: str, run_b: str, number_b: str, *, params: Any,
                  depth: int) -> Response:
        """Two cases side by side, and the diff of their outputs."""
        (_, before), (_, now) = self._case(run_a, number_a), self._case(run_b, number_b)
        sides = [("baseline", run_a, int(number_a), before), ("current", run_b, int(number_b), now)]
        return Response(200, self._page("diff.html", depth, title=f"{now.task}: two outputs", sides=sides,
                                        lines=text_diff(before, now)))
