"""``bench view``: a local web app over stored runs (runs, a run, a case, compare), and the same pages as files.

Rooms: ``runs`` (which results files the given paths name, each given an id), ``index`` (one run's cases indexed
once: rows to filter and sort, records read on demand), ``query`` (a run page's filters, sort and page), ``case``
(what a case page shows), ``images`` (image parts, served only from inside the given folders), ``comparison`` (two
runs or two models, through ``report.compare``), ``pages`` (the Jinja templates, sandboxed, autoescaped),
``site`` (URL paths to pages: ids only, never file paths), ``server`` (the loopback HTTP server), ``static``
(``--static DIR``).
"""

from __future__ import annotations

from bench_plugin.view.runs import RunSource, find_runs
from bench_plugin.view.server import serve_view
from bench_plugin.view.site import Site
from bench_plugin.view.static import write_static

__all__ = ["RunSource", "Site", "find_runs", "serve_view", "write_static"]
