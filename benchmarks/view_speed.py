"""Time ``bench view`` on a 10,000-case run: the index, the server's answers, and Chromium's first paint.

Writes report_speed.py's synthetic run (5 models x 1000 tasks x 2 runs, each case given a prompt and an answer
of some 600 characters) as a results.jsonl, then prints: the seconds to index it (once per run, at its first
page), the server's response time to the run page, to each kind of filter and sort, to a case page and to the
comparison of two models (median of ``--repeat`` requests over loopback), and, when Playwright and Chromium are
installed, the time to first paint of the run page and of a filtered page (``first-contentful-paint``). Each
time is shown with its ratio to a 0.5 s target (below 1.00 is within it). Figures, not assertions.

    python benchmarks/view_speed.py
    python benchmarks/view_speed.py --tasks 2000 --repeat 5
    python benchmarks/view_speed.py --static       # and the seconds of writing every page as a file
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from report_speed import CHROMIUM_ARGS, MODELS, chromium, make_records

from bench_plugin.report.write import in_case_order
from bench_plugin.results.store import encode_record
from bench_plugin.view.index import RunIndex
from bench_plugin.view.runs import find_runs
from bench_plugin.view.server import ViewServer
from bench_plugin.view.site import Site
from bench_plugin.view.static import write_static

TARGET_S = 0.5
WORDS = ["the", "a", "capital", "river", "city", "answer", "because", "therefore", "model", "judge", "score",
         "north", "south", "east", "west"]
REQUESTS = {
    "run page": "run/1/index.html",
    "filter: model": "run/1/index.html?model=bravo",
    "filter: status": "run/1/index.html?status=failed",
    "filter: tag + model": "run/1/index.html?tag=category%3Db&model=delta",
    "filter: component below": "run/1/index.html?component=J&below=0.3",
    "filter: free text": "run/1/index.html?text=river+city+north",
    "sort: score, descending": "run/1/index.html?sort=score&order=desc",
    "page 40 of a filter": "run/1/index.html?status=passed&page=40",
    "case page": "run/1/case/5000.html",
    "compare two models": "run/1/models/0/1.html",
}


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_run(folder: Path, tasks: int, runs: int) -> Path:
    rng = random.Random(11)
    results = folder / "results.jsonl"
    with results.open("w", encoding="utf-8") as file:
        for record in in_case_order(make_records(tasks, runs)):
            prompt = [{"role": "user", "content": text(rng, 60)}]
            answer = text(rng, 90)
            full = dataclasses.replace(record, messages=prompt, response=answer,
                                       transcript=[*prompt, {"role": "assistant", "content": answer}])
            file.write(encode_record(full.to_dict()) + "\n")
    return results


def timed(repeat: int, step: Any) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each of ``repeat`` calls; the CPU is this process's (server and client alike)."""
    times = []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        step()
        times.append((time.perf_counter() - started, time.process_time() - cpu))
    return times


def line(name: str, times: list[tuple[float, float]] | list[float]) -> str:
    walls = [entry[0] if isinstance(entry, tuple) else entry for entry in times]
    cpus = [entry[1] for entry in times if isinstance(entry, tuple)]
    middle = statistics.median(walls)
    cpu = f"  CPU {statistics.median(cpus):6.3f} s" if cpus else ""
    return (f"{name:<28} best {min(walls):6.3f} s  median {middle:6.3f} s{cpu}  "
            f"ratio to {TARGET_S:g} s: {middle / TARGET_S:.2f}")


# the first-contentful-paint of the page, in ms from the start of its navigation (null: none within 10 s)
PAINT = """() => new Promise(done => {
  new PerformanceObserver(list => {
    const paint = list.getEntriesByName("first-contentful-paint")[0];
    if (paint) done(paint.startTime);
  }).observe({type: "paint", buffered: true});
  setTimeout(() => done(null), 10000);
})"""


def first_paints(url: str, paths: list[str], repeat: int) -> dict[str, list[float]] | str:
    """Per path, Chromium's first-contentful-paint after navigating to it (seconds), or why not measured."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    executable = chromium()
    if executable is None:
        return "no Chromium found (apt-get install chromium, or set BENCH_CHROMIUM)"
    paints: dict[str, list[float]] = {path: [] for path in paths}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto("about:blank")
            for _ in range(repeat):
                for path in paths:
                    page.goto(url + path, wait_until="load")
                    paint = page.evaluate(PAINT)
                    if paint is not None:
                        paints[path].append(paint / 1000)
        finally:
            browser.close()
    return paints


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--static", action="store_true", help="also time bench view --static (every page as a file)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        results = write_run(Path(scratch), options.tasks, options.runs)
        sources = find_runs([str(results)], Path(scratch))
        index_times = timed(3, lambda: RunIndex(sources[0]))
        cases = len(RunIndex(sources[0]).rows)
        print(f"{cases} cases: {len(MODELS)} models x {options.tasks} tasks x {options.runs} runs, "
              f"{results.stat().st_size / 1e6:.1f} MB of results.jsonl")
        print(line("index the run (once)", index_times))
        server = ViewServer(Site(sources, Path(scratch)))  # not warmed: the first run page pays for its statistics
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with httpx.Client(base_url=server.url, timeout=300) as client:
                first = timed(1, lambda: client.get("run/1/index.html"))
                print(line("first run page (its index)", first))
                for name, path in REQUESTS.items():
                    print(line(name, timed(options.repeat, lambda path=path: client.get(path).raise_for_status())))
            paints = first_paints(server.url, ["run/1/index.html", REQUESTS["filter: free text"]], options.repeat)
            if isinstance(paints, str):
                print(f"first paint: not measured: {paints}")
            else:
                for path, times in paints.items():
                    name = f"first paint {path.removeprefix('run/1/')[:16]}"
                    print(line(name, times) if times else f"{name:<28} no paint reported")
        finally:
            server.shutdown()
            server.server_close()
        if options.static:
            site = Site(sources, Path(scratch), static=True)
            written: list[int] = []
            times = timed(1, lambda: written.append(write_static(site, Path(scratch) / "site")))
            print(line(f"--static ({written[0]} pages)", times))


if __name__ == "__main__":
    main()
