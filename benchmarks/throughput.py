"""Throughput against a slow loopback endpoint, as ratios to the ideal and to a bare httpx loop of the same run.

Starts the mock server (in its own process) with a fixed answer latency, writes a suite of N
single-turn cases that call it over HTTP, and runs pytest on it in a child process. Two suites: one
call per case (a ``contains`` check), and call + judge (an ``llm_judge`` on the same server: two calls
in a row per case). For each it prints the wall time and its ratio to the ideal
``N x calls_per_case x latency / concurrency`` (1.00 is perfect; pytest's start-up and the reports are
included) and to a bare httpx loop that makes the same calls with the same concurrency in this
process, measured in the same run. With ``--xdist N`` each suite is also run as ``-n N`` at the same
total in flight (``--bench-concurrency C/N`` per worker), with its ratio to the single process.

The machine sets a bound no plugin inside pytest can beat: pytest's own N no-op tests with the HTML
report (``harness.pytest_floor``) take CPU of their own, and the calls take at least the bare loop's
CPU; in one process both share one interpreter lock, so the run takes at least their sum. The script
prints that bound against the ideal (``--floor``), next to the run: on a machine where the bound
alone is over 1.3x, that target cannot be met in one process, whatever the plugin does.

Targets (issue 8): at N=1000, 200 ms, 64 in flight, one call and call + judge within 1.3x of the
ideal; ``-n 2`` within 1.3x of one process. Every run starts without results or response cache (the
cache stays at its default, so every call is made). Figures, not assertions; wall times need a
quiet machine: run it when nothing else is.

    python benchmarks/throughput.py                              # N=1000, 0.2 s, 64 in flight, -n 2
    python benchmarks/throughput.py --cases 200 --concurrency 16 64 --xdist 0
    python benchmarks/throughput.py --repeat 3 --only judge
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from harness import (
    RunFigures,
    bare_httpx,
    bare_httpx_cpu,
    ideal_s,
    mock_server,
    pytest_floor,
    run_pytest,
    write_suite,
)

TARGET = 1.3


def median_walls(folder: Path, repeat: int, *settings: list[str]) -> list[float]:
    """The median wall time of each setting over ``repeat`` rounds.

    Other work on the machine makes single runs noisy; the settings take turns within each round, so
    they meet the same conditions.
    """
    walls: list[list[float]] = [[] for _ in settings]
    for _ in range(repeat):
        for setting, times in zip(settings, walls, strict=True):
            times.append(run_pytest(folder, *setting).wall_s)
    return [statistics.median(times) for times in walls]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64])
    parser.add_argument("--xdist", type=int, default=2,
                        help="also run with -n N at the same total concurrency (0 to skip)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting; the median is printed")
    parser.add_argument("--only", choices=["call", "judge"], help="only one of the two suites")
    parser.add_argument("--floor", action="store_true",
                        help="also print the machine's bound: pytest's N no-op tests' CPU + the bare loop's CPU")
    options = parser.parse_args()
    n, latency, workers, repeat = options.cases, options.latency, options.xdist, max(1, options.repeat)
    print(f"{n} cases, answer latency {latency:g} s, mock server in its own process, median of {repeat}; "
          f"ratio = wall / reference; target {TARGET:g}x\n")
    print(f"{'setting':<42} {'wall s':>8} {'ideal s':>8} {'vs ideal':>9} {'vs httpx':>9} {'vs 1 proc':>10}")
    suites = [("one call", False), ("call + judge", True)]
    if options.only:
        suites = [suites[options.only == "judge"]]
    floor: RunFigures | None = None
    with mock_server(latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        for label, judge in suites:
            folder = Path(tmp) / label.replace(" ", "")
            write_suite(folder, base_url, n, judge)
            calls = 2 if judge else 1
            for concurrency in options.concurrency:
                ideal = ideal_s(n, calls, latency, concurrency)
                peer = statistics.median(bare_httpx(base_url, n, concurrency, judge) for _ in range(repeat))
                per_worker = max(1, concurrency // workers) if workers else 0
                settings = [["--bench-concurrency", str(concurrency)]]
                if workers:
                    settings.append(["-n", str(workers), "--bench-concurrency", str(per_worker)])
                wall, *spread = median_walls(folder, repeat, *settings)
                name = f"{label}: bare httpx, {concurrency} in flight"
                print(f"{name:<42} {peer:>8.2f} {ideal:>8.2f} {peer / ideal:>9.2f} {1:>9.2f} {'-':>10}")
                name = f"{label}: pytest, {concurrency} in flight"
                print(f"{name:<42} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>9.2f} {wall / peer:>9.2f} {1:>10.2f}")
                if options.floor:
                    if floor is None:  # the same for every suite and concurrency: measured once
                        floor = min((pytest_floor(Path(tmp) / "floor", n) for _ in range(repeat)),
                                    key=lambda f: f.cpu_s)
                    calls_cpu = min(bare_httpx_cpu(base_url, n, concurrency, judge) for _ in range(repeat))
                    bound = max(ideal, floor.cpu_s + calls_cpu)
                    name = f"{label}: machine's bound, one process"
                    print(f"{name:<42} {bound:>8.2f} {ideal:>8.2f} {bound / ideal:>9.2f} {bound / peer:>9.2f} "
                          f"{'-':>10}")
                    print(f"{'':<4}(pytest's {n} no-op tests with pytest-html: {floor.wall_s:.2f} s, CPU "
                          f"{floor.cpu_s:.2f} s; the bare loop's CPU {calls_cpu:.2f} s; the run is "
                          f"{wall / bound:.2f}x the bound)")
                for other in spread:
                    name = f"{label}: pytest -n {workers}, {workers} x {per_worker}"
                    print(f"{name:<42} {other:>8.2f} {ideal:>8.2f} {other / ideal:>9.2f} {other / peer:>9.2f} "
                          f"{other / wall:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
