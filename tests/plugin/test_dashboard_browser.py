"""dashboard.html in headless Chromium: every chart draws, no script error fires, hostile text stays text.

Needs Playwright (``pip install playwright``) driving the system's Chromium (``apt-get install
chromium``; another binary through ``BENCH_CHROMIUM``); Playwright's own browser download is not used.
Without either the tests skip and say what to install; under CI (``CI=true``), where ``.ci/run``
installs both, they fail instead, so a missing install step cannot pass as a skip.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # a developer without Playwright still runs the rest of the suite
    sync_playwright = None

pytestmark = pytest.mark.slow  # a pytest run of a suite and a browser per test

# without the networking flags Chromium's background connections are refused by a closed network and it stalls
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(1)>"
CHARTS = {"leaderboard", "heatmap", "distributions", "components", "breakdown", "significance", "ratings",
          "repeats"}


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


SUITE = f"""
suite: hostile
runs: 2
models:
  strong:
    provider: scripted
    label: {_quoted(SCRIPT)}
    script: [{{reply: {_quoted("Paris " + SCRIPT + " " + IMAGE)}}}]
  weak:
    provider: scripted
    label: {_quoted(IMAGE)}
    script: [{{task: "*lyon*", reply: "Lyon"}}, {{reply: {_quoted("no idea " + IMAGE)}}}]
  plain:
    provider: echo
judges:
  grader:
    provider: scripted
    script:
      - {{contains: "Paris", reply: {_quoted("Rating: [[9]] " + SCRIPT)}}}
      - {{reply: {_quoted("Rating: [[3]] " + IMAGE)}}}
matrix:
  city: [Paris, Lyon, Nice, Lille]
tasks:
  - id: {_quoted("city-{{ city | lower }}-" + IMAGE)}
    tags: [{_quoted("kind=" + SCRIPT)}, "city={{{{ city }}}}"]
    prompt: "Name the city: {{{{ city }}}}"
scorers:
  - {{name: C, type: contains, value: "Paris"}}
  - {{name: J, type: llm_judge, judge: grader, prompt: "Rate: {{{{ answer }}}}"}}
composite: "0.5*C + 0.5*J"
pass_threshold: 0.5
"""


def chromium() -> str | None:
    """The Chromium to drive: ``BENCH_CHROMIUM``, else the system's."""
    for candidate in (os.environ.get("BENCH_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                      "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium()
    if sync_playwright is None or executable is None:
        missing = [name for name, absent in (("Playwright (pip install playwright)", sync_playwright is None),
                                             ("Chromium (apt-get install chromium, or set BENCH_CHROMIUM)",
                                              executable is None)) if absent]
        reason = "the dashboard browser tests need " + " and ".join(missing)
        if os.environ.get("CI") == "true":  # .ci/run installs both: a skip there would hide a missing install step
            pytest.fail(reason + "; .ci/run should have installed them", pytrace=False)
        pytest.skip(reason)
    with sync_playwright() as playwright:
        # launch() starts Chromium with a new empty profile (--user-data-dir in a temporary folder) every time
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page with every script error, console error and dialog it raises collected."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.on("console", lambda message: self.errors.append(f"console: {message.text}")
                if message.type == "error" else None)
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: Path) -> None:
        self.page.goto(path.as_uri(), wait_until="load")
        self.page.evaluate("() => new Promise(done => requestAnimationFrame(() => done(null)))")


@pytest.fixture
def dashboard(pytester: pytest.Pytester) -> Path:
    """The dashboard.html of a real run of a suite whose labels, task ids, tags and answers are hostile."""
    pytester.makefile(".yaml", **{"suites/hostile": SUITE})
    result = pytester.runpytest("suites", "-p", "no:randomly", "--bench-html", "off")
    assert result.ret in (0, 1), result.stdout.str()
    path = pytester.path / "bench-results" / "dashboard.html"
    assert path.is_file()
    return path


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_every_chart_draws_and_no_script_error_fires(browser: Browser, dashboard: Path, tmp_path: Path) -> None:
    watched = Watched(browser.new_page(viewport={"width": 1280, "height": 900}))
    watched.open(dashboard)
    marks = watched.page.evaluate(
        """() => Array.from(document.querySelectorAll("svg.chart")).map(svg => [svg.dataset.chart,
               svg.querySelectorAll("rect, circle, path").length, svg.getBoundingClientRect().width])""")
    assert {chart for chart, _, _ in marks} == CHARTS
    assert all(count > 0 and width > 0 for _, count, width in marks), marks
    sections = watched.page.evaluate(
        """() => Array.from(document.querySelectorAll("section.panel")).map(s => [s.dataset.section,
               s.querySelectorAll("details.fallback table tbody tr").length])""")
    assert {name for name, rows in sections if rows > 0} == {
        "leaderboard", "heatmap", "distributions", "components", "breakdowns", "significance", "ratings", "repeats"}
    assert watched.page.evaluate("() => document.documentElement.dataset.ready") == "1"
    shot = tmp_path / "dashboard.png"
    watched.page.screenshot(path=str(shot), full_page=True)
    width, height = png_size(shot)
    assert width >= 1000 and height > 2000
    assert shot.stat().st_size > 50_000  # drawn charts, not a blank page
    assert watched.errors == [] and watched.dialogs == []


def test_hostile_labels_ids_and_answers_stay_text(browser: Browser, dashboard: Path) -> None:
    watched = Watched(browser.new_page())
    watched.open(dashboard)
    page = watched.page
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    page.wait_for_timeout(100)
    assert page.evaluate("() => document.scripts.length") == 1
    assert page.evaluate("() => document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.evaluate("() => Array.from(document.querySelectorAll('*')).some(e => e.hasAttribute('onerror'))") \
        is False
    text = page.evaluate("() => document.body.innerText")
    assert SCRIPT in text and IMAGE in text  # shown as the text it is
    assert watched.errors == [] and watched.dialogs == []


def test_charts_show_with_scripts_off_and_tables_sort_with_them_on(browser: Browser, dashboard: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        static = context.new_page()
        static.goto(dashboard.as_uri(), wait_until="load")
        assert static.evaluate("() => 1") == 1  # evaluate runs through the debugger, not the page's scripts
        assert static.locator("svg.chart rect").count() > 50
        assert static.evaluate("() => document.documentElement.dataset.ready") is None
    finally:
        context.close()
    watched = Watched(browser.new_page())
    watched.open(dashboard)
    leaderboard = watched.page.locator('section[data-section="leaderboard"]')
    leaderboard.locator("details.fallback > summary").click()
    header = leaderboard.locator("th", has_text="Mean score")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    scores = leaderboard.locator("tbody tr td:nth-child(4)").all_inner_texts()
    assert scores == sorted(scores, key=float)
    assert watched.errors == [] and watched.dialogs == []


LONG_NAMES = """
suite: long
models:
  parrot: {provider: echo, label: a-model-with-a-rather-long-label}
  other: {provider: echo}
tasks:
  - {id: t1-bugfix-discount-rounding, prompt: "Say Ada"}
  - {id: t2-refactor-invoice-totals, prompt: "Say Bob"}
  - {id: t3-feature-export-to-csv-file, prompt: "Say Ada again"}
scorers:
  - {type: contains, value: Ada}
"""


def test_the_heat_maps_task_names_and_legend_fit_in_the_chart(browser: Browser, pytester: pytest.Pytester) -> None:
    """Task names were clipped ("t1-bugfix-disco...") and the legend cut off at the chart's edge ("no sco...")."""
    pytester.makefile(".yaml", **{"suites/long": LONG_NAMES})
    pytester.runpytest("suites", "-p", "no:randomly", "--bench-html", "off")
    watched = Watched(browser.new_page(viewport={"width": 1280, "height": 900}))
    watched.open(pytester.path / "bench-results" / "dashboard.html")
    texts = watched.page.evaluate(
        """() => { const svg = document.querySelector('svg.chart[data-chart="heatmap"]');
                   const box = svg.getBoundingClientRect();
                   return Array.from(svg.querySelectorAll("text")).map(t => { const r = t.getBoundingClientRect();
                       return [t.textContent, r.left >= box.left - 0.5 && r.right <= box.right + 0.5
                               && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5]; }); }""")
    shown = {content for content, _ in texts}
    assert {"t1-bugfix-discount-rounding", "t2-refactor-invoice-totals", "t3-feature-export-to-csv-file",
            "a-model-with-a-rather-long-label", "no scored case"} <= shown, shown  # whole, not clipped
    assert [content for content, inside in texts if not inside] == []  # nothing drawn past the chart's edge
    assert watched.errors == []
