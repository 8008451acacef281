"""Retake the guide's dashboard pictures (docs/img/dashboard*.png) from a run of the bundled suites.

Runs ``pytest suites/`` into a temporary folder (and, for the Components and Repeats pictures, since no
bundled suite has several models, scores of several components and repeated cases at once, a small
synthetic run from ``benchmarks/report_speed.py``: five models, three runs per task),
opens each dashboard.html in headless Chromium through Playwright, and saves one picture per section.

    python docs/img/make_screenshots.py          # needs playwright and chromium, as the browser tests do
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from report_speed import CHROMIUM_ARGS, chromium, make_records  # noqa: E402 - the benchmark's generator

from bench_plugin.report.write import write_reports  # noqa: E402

OUT = REPO / "docs" / "img"
# picture name -> (suite heading on the page, section); None: the page's top
SHOTS = {
    "dashboard": None,
    "dashboard-leaderboard": ("mt_bench", "leaderboard"),
    "dashboard-heatmap": ("mt_bench", "heatmap"),
    "dashboard-distributions": ("mt_bench", "distributions"),
    "dashboard-breakdowns": ("sycophancy_rent", "breakdowns"),
    "dashboard-significance": ("mt_bench", "significance"),
    "dashboard-ratings": ("backroomsbench", "ratings"),
    "dashboard-audit": ("sycophancy_rent", "audit"),
}


def shoot(page: Page, picture: str, target: tuple[str, str] | None) -> None:
    """Save one picture: a section of one suite (the first audit finding opened), or the page's top."""
    path = OUT / f"{picture}.png"
    if target is None:
        page.evaluate("() => document.querySelector('section.suite[data-suite=\"mt_bench\"]').scrollIntoView()")
        page.screenshot(path=str(path))
    else:
        suite, name = target
        panel = page.locator(f'section.suite[data-suite="{suite}"] section[data-section="{name}"]')
        if name == "audit":
            panel.locator("details").first.evaluate("d => d.open = true")
        panel.screenshot(path=str(path))
    print(f"{path.relative_to(REPO)}: {path.stat().st_size // 1024} KiB")


def main() -> None:
    """Run the suites, then take every picture."""
    with tempfile.TemporaryDirectory() as scratch:
        bundled, repeats = Path(scratch) / "bundled", Path(scratch) / "repeats"
        subprocess.run([sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider", "-p",
                        "no:randomly", "--bench-output", str(bundled), "--bench-html", "off"],
                       cwd=REPO, check=False, capture_output=True)
        write_reports(make_records(24, 3), repeats)
        executable = chromium()
        if executable is None:
            raise SystemExit("no Chromium found (apt-get install chromium, or set BENCH_CHROMIUM)")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            page.goto((bundled / "dashboard.html").as_uri(), wait_until="load")
            for picture, target in SHOTS.items():
                shoot(page, picture, target)
            page.goto((repeats / "dashboard.html").as_uri(), wait_until="load")
            for name in ("components", "repeats"):
                shoot(page, f"dashboard-{name}", ("speed", name))
            browser.close()


if __name__ == "__main__":
    main()
