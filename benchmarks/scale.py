"""At the speed of a local inference server (issue 33): 10,000 cases, 200 ms answers, 256 in flight.

Starts the mock server (in its own process) and, in the same run, measures:
- the bare httpx loop making the same calls in this process: its wall time and CPU per case;
- pytest's floor: N no-op tests without the plugin, with pytest-html's self-contained report (what pytest's
  per-item protocol costs before any plugin does anything), and its CPU added to the bare loop's, the least a
  plugin inside one pytest process can spend (both hold one interpreter lock);
- the plugin in one process (``--bench-concurrency 256``) and under ``-n 2`` (2 x 128 in flight, the same
  total): wall, CPU per case (the pytest process and its workers, ``os.wait4``), peak memory.

Prints each with its ratio to the bare loop (wall), the CPU per case, and ``-n 2`` against one process.
Targets: one process within 1.15x of the bare loop's wall and at most 1.0 ms of CPU per case; ``-n 2`` at
most 0.8x of one process. Figures, not assertions; on a shared machine compare the ratios of one run and
the CPU, and take the least of ``--repeat`` runs.

    python benchmarks/scale.py                                  # 10,000 cases, 0.2 s, 256 in flight, -n 2
    python benchmarks/scale.py --cases 2000 --xdist 0 --repeat 1
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness import RunFigures, bare_httpx_cpu, mock_server, pytest_floor, run_pytest, write_suite

WALL_TARGET, CPU_TARGET_MS, XDIST_TARGET = 1.15, 1.0, 0.8


def least(runs: list[RunFigures]) -> RunFigures:
    """The run of least wall time (other work on the machine only ever adds), with its own CPU and memory."""
    return min(runs, key=lambda run: run.wall_s)


def bare_loop(base_url: str, cases: int, concurrency: int) -> RunFigures:
    """The bare httpx loop in this process: wall and CPU seconds (no peak memory of its own: 0)."""
    started = time.perf_counter()
    cpu = bare_httpx_cpu(base_url, cases, concurrency)
    return RunFigures(time.perf_counter() - started, cpu, 0.0)


def line(label: str, run: RunFigures, cases: int, bare: RunFigures, one: RunFigures | None = None) -> str:
    vs_one = f"{run.wall_s / one.wall_s:>9.2f}" if one is not None else f"{'-':>9}"
    peak = f"{run.peak_mb:>8.1f}" if run.peak_mb else f"{'-':>8}"
    return (f"{label:<44} {run.wall_s:>8.2f} {run.wall_s / bare.wall_s:>8.2f} {1000 * run.cpu_s / cases:>8.2f} "
            f"{run.cpu_s / bare.cpu_s:>8.2f} {vs_one} {peak}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--xdist", type=int, default=2, help="also run with -n N at the same total in flight (0: no)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting; the least wall time is printed")
    parser.add_argument("--no-floor", action="store_true", help="skip pytest's no-op tests")
    options = parser.parse_args()
    n, concurrency, workers, repeat = options.cases, options.concurrency, options.xdist, max(1, options.repeat)
    ideal = n * options.latency / concurrency
    print(f"{n} cases, one call each, answer latency {options.latency:g} s, {concurrency} in flight (ideal "
          f"{ideal:.2f} s); least wall of {repeat}; targets: wall {WALL_TARGET:g}x the bare loop, "
          f"{CPU_TARGET_MS:g} ms CPU per case, -n {workers} {XDIST_TARGET:g}x one process\n")
    print(f"{'setting':<44} {'wall s':>8} {'vs loop':>8} {'CPU ms':>8} {'CPU vs':>8} {'vs 1 proc':>9} {'peak MB':>8}")
    with mock_server(options.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "suite"
        write_suite(folder, base_url, n)
        args = ["--bench-concurrency", str(concurrency)]
        xdist_args = ["-n", str(workers), "--bench-concurrency", str(max(1, concurrency // max(1, workers)))]
        bare_runs, one_runs, spread_runs, floor_runs = [], [], [], []
        for _ in range(repeat):  # the settings take turns, so they meet the same conditions
            bare_runs.append(bare_loop(base_url, n, concurrency))
            one_runs.append(run_pytest(folder, *args))
            if workers:
                spread_runs.append(run_pytest(folder, *xdist_args))
            if not options.no_floor:
                floor_runs.append(pytest_floor(Path(tmp) / "floor", n))
        bare, one = least(bare_runs), least(one_runs)
        print(line(f"bare httpx loop, {concurrency} in flight", bare, n, bare))
        if floor_runs:
            floor = least(floor_runs)
            print(line(f"pytest's {n} no-op tests + pytest-html", floor, n, bare))
            bound = RunFigures(max(ideal, floor.cpu_s + bare.cpu_s), floor.cpu_s + bare.cpu_s, 0.0)
            print(line("floor in one process: no-op tests + loop", bound, n, bare))
        print(line(f"bench_plugin, 1 process, {concurrency} in flight", one, n, bare, one))
        if spread_runs:
            print(line(f"bench_plugin, -n {workers}, {xdist_args[-1]} each", least(spread_runs), n, bare, one))
    print("\nvs loop: wall / the bare loop's; CPU ms: CPU per case (pytest and its workers); CPU vs: CPU / the bare "
          "loop's; the floor's wall is the larger of the ideal and its CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
