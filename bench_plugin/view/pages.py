"""The pages' templates: Jinja in its sandbox with autoescape on, so every value from a record renders as text.

Only our own constants (the style, the script) and the dashboard's blocks, which ``report.dashboard`` escapes
itself, are marked safe. Each page carries the same Content-Security-Policy: the one style and the one script
whose digests it names, images from the server itself, nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import math
from typing import Any

from jinja2 import PackageLoader, StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from bench_plugin.report.dashboard.frame import PAGE_SCRIPT, PAGE_STYLE

VIEW_STYLE = PAGE_STYLE + """
header nav a{color:#a5b4fc;margin-right:14px}header .where{color:#d4d4d8;margin:2px 0 0;font-size:13px}
form.filters{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:end;font-size:12.5px}
form.filters label{display:flex;flex-direction:column;gap:2px}form.filters input,form.filters select{font:inherit}
form.filters input[type=number]{width:6em}.pager{margin:6px 0;font-size:13px}.pager a{margin-right:10px}
table.cases td,table.cases th{text-align:left}table.cases td.n,table.cases th.n{text-align:right}
th a{color:inherit;text-decoration:none}.st-passed{color:#15803d}.st-failed{color:#b91c1c}
.st-error,.st-invalid{color:#9a3412}.st-unscored,.st-skipped{color:#71717a}
pre{white-space:pre-wrap;word-break:break-word;background:#fafafa;border:1px solid #e4e4e7;border-radius:6px;
padding:8px;margin:4px 0;font-size:12.5px;max-height:520px;overflow:auto}
.msg{margin:8px 0}.msg .role{font-weight:600;font-size:12.5px;color:#3f3f46}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0;font-size:13px}
dl.facts dt{color:#52525b}dl.facts dd{margin:0}.sides{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.diff .add{background:#dcfce7}.diff .remove{background:#fee2e2}.diff .hunk{color:#6d28d9}
.diff span{display:block;white-space:pre-wrap;word-break:break-word}img.part{max-width:100%;max-height:480px}
.problem{background:#fef2f2;border:1px solid #fecaca;padding:8px 12px;border-radius:6px}
"""
VIEW_SCRIPT = PAGE_SCRIPT


def _digest(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


CSP = (f"default-src 'none'; style-src 'sha256-{_digest(VIEW_STYLE)}'; script-src 'sha256-{_digest(VIEW_SCRIPT)}'; "
       "img-src 'self'; form-action 'self'; base-uri 'none'")
"""Every page's policy: its own style and script only, images from the server, forms to it, nothing else."""
HEADER_CSP = CSP + "; frame-ancestors 'none'"
"""The policy the server sends (``frame-ancestors`` only works as a header)."""
MISSING = "—"


def number(value: Any, digits: int = 3) -> str:
    """A figure with ``digits`` decimals, ``—`` when there is none."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return MISSING
    return f"{value:.{digits}f}"


def percent(value: Any) -> str:
    """A fraction as a percentage, ``—`` when there is none."""
    return MISSING if number(value) == MISSING else f"{value * 100:.1f}%"


def dollars(value: Any) -> str:
    """A cost in dollars, ``—`` when unknown."""
    return MISSING if number(value) == MISSING else f"${value:.4f}"


def whole(value: Any) -> str:
    """A count with thousands separated, ``—`` when unknown."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else MISSING


def interval(estimate: Any) -> str:
    """``[low, high]`` of a summary's estimate, empty when it has none."""
    if not isinstance(estimate, dict):
        return ""
    low, high = estimate.get("ci_low"), estimate.get("ci_high")
    return "" if MISSING in (number(low), number(high)) else f"[{number(low)}, {number(high)}]"


def _environment() -> SandboxedEnvironment:
    environment = SandboxedEnvironment(loader=PackageLoader("bench_plugin.view", "templates"), autoescape=True,
                                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(number=number, percent=percent, dollars=dollars, whole=whole, interval=interval)
    environment.globals.update(style=VIEW_STYLE, script=VIEW_SCRIPT, csp=CSP)
    return environment


_ENVIRONMENT = _environment()


def render(template: str, **values: Any) -> str:
    """The page ``template`` with ``values``.

    ``root`` is the way back to the site's top from the page, ``static`` says whether the pages are files.
    """
    return _ENVIRONMENT.get_template(template).render(**values)
