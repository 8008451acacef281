"""The dashboard page's frame: its style, its one small script, and the section and table markup.

The script only sorts tables when a header is clicked; everything else is static HTML and SVG, so
the page reads the same with scripts off. ``table`` escapes every cell it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench_plugin.report.dashboard.svg import esc

MISSING = "—"

PAGE_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#27272a;margin:0;
background:#f4f4f5}
header{background:#18181b;color:#fafafa;padding:14px 24px}header h1{margin:0 0 4px;font-size:22px}
header p{margin:0;color:#d4d4d8}nav{margin-top:6px}nav a{color:#a5b4fc;margin-right:14px}
main{max-width:1180px;margin:0 auto;padding:8px 24px 24px}.suite{margin:20px 0}
.suite>h2{margin:8px 0 2px;font-size:20px}.suite>p{margin:0 0 8px;color:#52525b}
.panel{background:#fff;border:1px solid #e4e4e7;border-radius:8px;padding:12px 16px;margin:12px 0}
.panel h3{margin:0 0 2px;font-size:16px}.panel h4{margin:10px 0 2px;font-size:13px;color:#3f3f46}
.note{color:#52525b;margin:0 0 8px;font-size:12.5px}figure{margin:0}
svg.chart{max-width:100%;height:auto;display:block}.scroll{overflow-x:auto}.scroll svg.chart{max-width:none}
details.fallback{margin-top:6px}details.fallback>summary,.audit summary{cursor:pointer;font-size:13px}
details.fallback>summary{color:#4338ca}.table{max-height:460px;overflow:auto}
table{border-collapse:collapse;font-size:12.5px;margin:4px 0}
th,td{padding:3px 8px;border-bottom:1px solid #e4e4e7;text-align:right;white-space:nowrap}
th{background:#fafafa;position:sticky;top:0;cursor:pointer}.l{text-align:left}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
.charts{display:flex;flex-wrap:wrap;gap:4px 28px}
.tiers{margin:6px 0 0;padding-left:22px;font-size:13px}.audit{margin:0;padding-left:18px}.audit li{margin:3px 0}
.muted{color:#71717a}code{font-size:12px;word-break:break-all}footer{color:#71717a;font-size:12px;padding:0 24px 24px;
max-width:1180px;margin:0 auto}
"""

PAGE_SCRIPT = """
(function () {
  function key(row, index) {
    var text = row.cells[index] ? row.cells[index].textContent.trim() : "";
    var number = parseFloat(text.replace(/^\\[/, "").replace(/[,%$]/g, "").replace("\\u2212", "-"));
    return isNaN(number) ? text.toLowerCase() : number;
  }
  function compare(a, b) {
    if (typeof a !== typeof b) { return typeof a === "number" ? -1 : 1; }
    return a < b ? -1 : a > b ? 1 : 0;
  }
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.addEventListener("click", function () {
      var table = th.closest("table"), body = table.tBodies[0], index = th.cellIndex;
      var up = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) { var order = compare(key(a, index), key(b, index)); return up ? order : -order; });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
"""


def section(key: str, title: str, note: str, chart: str, fallback_html: str) -> str:
    """One dashboard section: heading, what the figures count, the chart (already built) and its table.

    Args:
        key: the section's kind, in ``data-section``.
        title: its heading (escaped here).
        note: the denominators and methods, one short paragraph (escaped here).
        chart: the chart's markup, or "" when there is nothing to draw.
        fallback_html: the table fallback's markup (``fallback(table(...))``), or "".
    """
    figure = f"<figure>{chart}</figure>" if chart else ""
    return (f'<section class="panel" data-section="{esc(key)}"><h3>{esc(title)}</h3><p class="note">{esc(note)}</p>'
            f"{figure}{fallback_html}</section>")


def fallback(tables_html: str) -> str:
    """Tables folded under the chart they back: the same figures, exact and sortable."""
    return f'<details class="fallback"><summary>Table</summary><div class="table">{tables_html}</div></details>'


def table(head: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 2) -> str:
    """A sortable table; every cell is plain text and is escaped here.

    Args:
        head: the column headings.
        rows: the cells, row by row.
        left: how many leading columns hold names (left-aligned); the rest are figures.
    """
    def cells(tag: str, values: Sequence[str]) -> str:
        return "".join(f'<{tag}{" class=l" if i < left else ""}>{esc(v)}</{tag}>' for i, v in enumerate(values))

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f'<table class="sortable"><thead><tr>{cells("th", head)}</tr></thead><tbody>{body}</tbody></table>'


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def fmt(value: Any, *, percent: bool = False, signed: bool = False, whole: bool = False) -> str:
    """A figure for a table or tooltip: 3 decimals, a percentage, a signed or a whole number; ``—`` if missing."""
    number = _finite(value)
    if number is None:
        return MISSING
    if percent:
        return f"{number * 100:.1f}%"
    if whole:
        return f"{number:,.0f}"
    return f"{number:+.3f}" if signed else f"{number:.3f}"


def fmt_interval(estimate: Any, *, percent: bool = False) -> str:
    """``[low, high]`` of an estimate (anything with ``low`` and ``high``), or ``—`` without an interval."""
    low, high = _finite(getattr(estimate, "low", None)), _finite(getattr(estimate, "high", None))
    if low is None or high is None:
        return MISSING
    return f"[{fmt(low, percent=percent)}, {fmt(high, percent=percent)}]"
