"""``dashboard.html``: a run's charts in one self-contained page that opens from disk, with no server and no network.

Every chart is inline SVG drawn in Python (it shows with scripts off) with a table of the same
figures under it, and every figure is read from the run's summary, so the page agrees with report.md
and summary.json. All text from a suite or a model is escaped, and the page's Content-Security-Policy
lets only its own inline script run. The page embeds aggregates, never records or transcripts.

Rooms: ``page`` (the document), ``scores`` and ``versus`` (the sections), ``figures`` and ``compare``
(reading the summary), ``frame`` (style, script, tables), ``intervals``, ``grids`` and ``bars`` (the
charts) and ``svg`` (drawing primitives, scales and colours).
"""

from __future__ import annotations

from bench_plugin.report.dashboard.page import dashboard_pieces, render_dashboard

__all__ = ["dashboard_pieces", "render_dashboard"]
