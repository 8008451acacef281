"""Throughput of a suite run against a slow loopback endpoint, as ratios to the ideal and to raw httpx.

Starts the mock server with a fixed answer latency, writes a suite of N single-turn cases that call
it over HTTP, and runs pytest on it in a subprocess with several settings. For each it prints the wall
time, the ratio to the ideal ``ceil(N / concurrency) * latency`` (1.00 is perfect; start-up is included, so
small runs look worse) and the ratio to a raw-httpx peer that makes the same N calls with the same
concurrency and no pytest. With ``--xdist N`` each concurrency is also run as ``-n N`` at the same
total in flight (``--bench-concurrency C/N`` per worker), printed with its ratio to the single
process. Figures, not assertions: run it before and after a change to the runner.

    python benchmarks/throughput.py                 # N=200, latency 0.2 s
    python benchmarks/throughput.py --cases 1000 --latency 0.1 --concurrency 16 64
    python benchmarks/throughput.py --cases 1000 --concurrency 64 --xdist 2 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench_plugin.mock.server import MockServer


def write_suite(folder: Path, base_url: str, cases: int) -> Path:
    suite = folder / "suites" / "throughput.yaml"
    suite.parent.mkdir(parents=True)
    suite.write_text(
        "providers:\n"
        f"  local: {{type: openai_compatible, base_url: '{base_url}', timeout: 30, max_retries: 0}}\n"
        "models:\n  m: {provider: local, id: bench-model}\n"
        f"matrix:\n  n: {list(range(cases))}\n"
        "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }}'}\n"
        "scorers:\n  - {type: contains, value: '{{ n }}'}\n",
        encoding="utf-8",
    )
    return suite


def run_pytest(folder: Path, *args: str) -> float:
    command = [
        sys.executable, "-m", "pytest", "suites", "-q", "-p", "no:cacheprovider", "--bench-html", "off", *args
    ]
    started = time.perf_counter()
    done = subprocess.run(
        command, check=False, cwd=folder, capture_output=True, text=True, env={**os.environ, "NO_PROXY": "*"}
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({' '.join(args)}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


async def raw_httpx(base_url: str, cases: int, concurrency: int) -> float:
    """The peer: the same calls through httpx alone, one client per worker, no pytest."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(cases):
        queue.put_nowait(n)

    async def worker() -> None:
        async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
            while not queue.empty():
                n = queue.get_nowait()
                body = {"model": "bench-model", "messages": [{"role": "user", "content": f"Say {n}"}]}
                response = await client.post(f"{base_url}/chat/completions", json=body)
                response.raise_for_status()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def median_walls(folder: Path, repeat: int, *settings: list[str]) -> list[float]:
    """The median wall time of each setting over ``repeat`` rounds.

    Other work on the machine makes single runs noisy; the settings take turns within each round, so
    they meet the same conditions.
    """
    walls: list[list[float]] = [[] for _ in settings]
    for _ in range(repeat):
        for setting, times in zip(settings, walls, strict=True):
            times.append(run_pytest(folder, *setting))
    return [statistics.median(times) for times in walls]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--xdist", type=int, default=2,
                        help="also run with -n N at the same total concurrency (0 to skip)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting; the median is printed")
    options = parser.parse_args()
    n, latency, workers, repeat = options.cases, options.latency, options.xdist, max(1, options.repeat)
    print(f"{n} cases, answer latency {latency:g} s, loopback mock server, median of {repeat}; "
          "ratio = wall / reference\n")
    print(f"{'setting':<34} {'wall s':>8} {'ideal s':>8} {'vs ideal':>9} {'vs httpx':>9} {'vs 1 proc':>10}")
    with MockServer(latency=latency) as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_suite(folder, server.openai_base_url, n)
        for concurrency in options.concurrency:
            ideal = math.ceil(n / concurrency) * latency
            peer = asyncio.run(raw_httpx(server.openai_base_url, n, concurrency))
            per_worker = max(1, concurrency // workers) if workers else 0
            settings = [["--bench-concurrency", str(concurrency)]]
            if workers:
                settings.append(["-n", str(workers), "--bench-concurrency", str(per_worker)])
            wall, *spread = median_walls(folder, repeat, *settings)
            label = f"raw httpx, {concurrency} in flight"
            print(f"{label:<34} {peer:>8.2f} {ideal:>8.2f} {peer / ideal:>9.2f} {1:>9.2f} {'-':>10}")
            label = f"pytest, {concurrency} in flight"
            print(f"{label:<34} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>9.2f} {wall / peer:>9.2f} {1:>10.2f}")
            for other in spread:
                label = f"pytest -n {workers}, {workers} x {per_worker} in flight"
                print(f"{label:<34} {other:>8.2f} {ideal:>8.2f} {other / ideal:>9.2f} {other / peer:>9.2f} "
                      f"{other / wall:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
