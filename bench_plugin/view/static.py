"""``bench view --static DIR``: the pages written as files that link to each other, for a CI artifact.

The same pages as the server's (``site.py``), written under the same paths: the runs, each run's pages of cases
and charts, every case, each pair of models of a run compared, each run against the one before it, and the two
outputs of every case those comparisons list, and the image files a case may show. Filters and sorting need the
server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import combinations, pairwise
from pathlib import Path

from bench_plugin.view.comparison import Comparison
from bench_plugin.view.query import PAGE_SIZE
from bench_plugin.view.site import Site


def write_static(site: Site, folder: Path) -> int:
    """Write every page of ``site`` (made with ``static=True``) under ``folder``; the number of pages written.

    Raises:
        OSError: a page cannot be written.
    """
    written = 0
    for path in _paths(site):
        response = site.respond(path)
        if response.status == 200:
            _write(folder / path, response.body)
            written += 1
    return written


def _write(path: Path, body: bytes) -> None:
    """One page, written beside its place and renamed into it: a link planted at its name is replaced, not followed.

    Not synced to disk page by page (``write_atomically`` does, for results): 10,000 case pages took minutes so.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    temporary.write_bytes(body)
    os.replace(temporary, path)


def _paths(site: Site) -> Iterator[str]:
    yield "index.html"
    sources = list(site.indexes.sources.values())
    for source in sources:
        yield from _run_paths(site, source.id)
    for before, after in pairwise(sources):
        yield f"compare/{before.id}/{after.id}.html"
        yield from _diff_paths(site, before.id, after.id)


def _run_paths(site: Site, run_id: str) -> Iterator[str]:
    index = site.indexes.get(run_id)
    assert index is not None
    yield f"run/{run_id}/index.html"
    yield f"run/{run_id}/charts.html"
    yield from (f"run/{run_id}/page-{page}.html" for page in range(2, -(-len(index.rows) // PAGE_SIZE) + 1))
    for row in index.rows:
        yield f"run/{run_id}/case/{row.number}.html"
        yield from (f"run/{run_id}/image/{row.number}/{part}" for part in range(row.images))
    for (first, one), (second, other) in combinations(enumerate(index.models), 2):
        yield f"run/{run_id}/models/{first}/{second}.html"
        comparison = site.models_compared(index, one, other)
        yield from (f"diff/{run_id}/{a}/{run_id}/{b}.html" for a, b in _listed(comparison))


def _diff_paths(site: Site, before: str, after: str) -> Iterator[str]:
    baseline, current = site.indexes.get(before), site.indexes.get(after)
    assert baseline is not None and current is not None
    comparison = site.runs_compared(baseline, current)
    yield from (f"diff/{before}/{a}/{after}/{b}.html" for a, b in _listed(comparison))


def _listed(comparison: Comparison) -> set[tuple[int, int]]:
    """The case pairs a compare page links to: its changed cases and its lists'."""
    numbers = comparison.numbers
    listed = {(change.baseline_number, change.current_number) for change in comparison.changes}
    for row in (comparison.data or {}).get("comparisons", []):
        listed |= {numbers[item["nodeid"]] for items in row["lists"].values() for item in items
                   if item["nodeid"] in numbers}
    return listed
