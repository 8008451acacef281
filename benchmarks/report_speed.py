"""Time the reports of a large run: 10,000 synthetic records for 5 models through write_reports and dashboard.html.

Generates records (two components, a check and a judge; about 1% infrastructure errors and 1%
unscored cases; models of known, different skill; each task run twice so intervals resample tasks),
then prints the seconds of ``write_reports`` (summary.json, report.md, dashboard.html and the rest) and
of the dashboard alone, the dashboard's size, and, when Playwright and Chromium are installed, the
seconds Chromium takes to open it (``page.goto`` until ``load``, then one animation frame: the page
has laid out and painted). Each time is shown with its ratio to the 2 s target (below 1.00 is within
it). Figures, not assertions: run it before and after a change to the reports.

    python benchmarks/report_speed.py
    python benchmarks/report_speed.py --tasks 2000 --runs 1 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_plugin.report.dashboard import render_dashboard
from bench_plugin.report.summary import summarize
from bench_plugin.report.write import in_case_order, write_reports
from bench_plugin.results.record import ERROR, FAILED, PASSED, UNSCORED, CaseRecord

TARGET_S = 2.0
MODELS = {"alpha": 0.80, "bravo": 0.70, "charlie": 0.62, "delta": 0.60, "echo": 0.45}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def make_records(tasks: int, runs: int, seed: int = 7) -> list[CaseRecord]:
    rng = random.Random(seed)
    difficulty = [rng.uniform(-0.3, 0.3) for _ in range(tasks)]
    records = []
    index = 0
    for task in range(tasks):
        for run in range(1, runs + 1):
            for model, skill in MODELS.items():
                index += 1
                nodeid = f"suites/speed.yaml::task-{task}[{model}-run{run}]"
                base = dict(nodeid=nodeid, suite="speed", path="suites/speed.yaml", task=f"task-{task}", model=model,
                            model_id=model, model_label=model.title(), provider="synthetic", run=run,
                            tags=[f"category={'abc'[task % 3]}"], case_index=index,
                            usage={"input_tokens": 120, "output_tokens": 80, "cost_usd": 0.0004, "calls": 1})
                draw = rng.random()
                if draw < 0.01:
                    records.append(CaseRecord(**base, status=ERROR, reason="timeout after 30 s",
                                              error={"kind": "timeout", "type": "ReadTimeout", "message": "timed out"}))
                    continue
                check = 1.0 if rng.random() < skill - difficulty[task] else 0.0
                judge = min(1.0, max(0.0, rng.gauss(skill - difficulty[task], 0.15)))
                components = [
                    {"name": "C", "value": check, "raw": None, "passed": check == 1.0, "detail": "contains",
                     "judge_output": None, "error": None, "usage": {}},
                    {"name": "J", "value": round(judge, 3), "raw": round(judge * 10), "passed": None,
                     "detail": f"judge: {round(judge * 10)}/10", "judge_output": f"Rating: [[{round(judge * 10)}]]",
                     "error": None, "usage": {"input_tokens": 300, "output_tokens": 20}},
                ]
                if draw < 0.02:
                    records.append(CaseRecord(**base, status=UNSCORED, reason="judge gave no rating",
                                              scores={"components": components[:1], "composite": None}))
                    continue
                composite = round(0.5 * check + 0.5 * judge, 4)
                status = PASSED if composite >= 0.6 else FAILED
                records.append(CaseRecord(**base, status=status, response=f"answer {task}",
                                          scores={"components": components, "composite": composite,
                                                  "threshold": 0.6},
                                          composite=composite, threshold=0.6, latency_s=0.5))
    return records


def chromium() -> str | None:
    for candidate in (os.environ.get("BENCH_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                      "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def open_seconds(page_path: Path, repeat: int) -> list[float] | str:
    """Seconds Chromium takes to load and paint the page, or why it could not be measured."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    executable = chromium()
    if executable is None:
        return "no Chromium found (apt-get install chromium, or set BENCH_CHROMIUM)"
    times = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            page = context.new_page()
            page.goto("about:blank")  # the browser's own start-up is not the page's cost
            for _ in range(repeat):
                started = time.perf_counter()
                page.goto(page_path.as_uri(), wait_until="load")
                page.evaluate("() => new Promise(done => requestAnimationFrame(() => done(null)))")
                times.append(time.perf_counter() - started)
                page.goto("about:blank")
        finally:
            context.close()
    return times


def timed(repeat: int, step: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return times


def line(name: str, times: list[float]) -> str:
    best, middle = min(times), statistics.median(times)
    return f"{name:<30} best {best:6.3f} s  median {middle:6.3f} s  ratio to {TARGET_S:g} s: {middle / TARGET_S:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the reports into this folder and keep them")
    options = parser.parse_args()
    records = in_case_order(make_records(options.tasks, options.runs))
    print(f"{len(records)} records: {len(MODELS)} models x {options.tasks} tasks x {options.runs} runs")
    with tempfile.TemporaryDirectory() as scratch:
        folder = options.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        write_reports(records, folder)  # warm: imports and first-call caches are not the reports' cost
        print(line("write_reports (all files)", timed(options.repeat, lambda: write_reports(records, folder))))
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        summary_only = timed(options.repeat, lambda: summarize(records))
        print(line("summarize", summary_only))
        print(line("dashboard (render only)", timed(options.repeat, lambda: render_dashboard(summary, records))))
        page = folder / "dashboard.html"
        print(f"{'dashboard.html size':<30} {page.stat().st_size / 1e6:.2f} MB")
        opened = open_seconds(page, options.repeat)
        if isinstance(opened, str):
            print(f"{'open in Chromium':<30} not measured: {opened}")
        else:
            print(line("open in Chromium (load+paint)", opened))


if __name__ == "__main__":
    main()
