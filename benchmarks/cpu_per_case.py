"""Our CPU per case: user + system time of the pytest process, per case, for one call and for call + judge.

Runs N cases and a single case of the same suite against the mock server (in its own process, so its
CPU is not counted) with the default reports and the response cache at its default (emptied before each
run, so every call is made and written). Prints, for each suite, the CPU of the whole run divided by N
(start-up and reports included) and the marginal CPU of a case, ``(CPU(N) - CPU(1)) / (N - 1)``, each
with its ratio to the 3 ms target. Next to them, the CPU per case of the bare httpx loop (the same
calls, no pytest) measured in the same run: most of a case's CPU is httpx's own, and the difference is
what the plugin adds. CPU time is what the process itself used, so it holds up better than wall time
while other work shares the machine (though a busy machine still inflates it); the minimum over
``--repeat`` runs is printed.

    python benchmarks/cpu_per_case.py                    # N=1000, latency 0.02 s, 64 in flight
    python benchmarks/cpu_per_case.py --cases 2000 --repeat 5 -- --bench-html off
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness import bare_httpx_cpu, case_options, mock_server, run_pytest, write_suite

TARGET_MS = 3.0


def min_cpu(folder: Path, repeat: int, args: list[str]) -> float:
    return min(run_pytest(folder, *args).cpu_s for _ in range(repeat))


def bare_cpu(base_url: str, cases: int, concurrency: int, judge: bool, repeat: int) -> float:
    """CPU seconds of this process making the same calls through the bare httpx loop (the minimum)."""
    return min(bare_httpx_cpu(base_url, cases, concurrency, judge) for _ in range(repeat))


def main() -> int:
    parser = case_options(__doc__, "runs per figure; the minimum is printed")
    parser.add_argument("pytest_args", nargs="*", help="more pytest options, after --")
    options = parser.parse_args()
    n, repeat = options.cases, max(1, options.repeat)
    args = ["--bench-concurrency", str(options.concurrency), *options.pytest_args]
    print(f"{n} cases, answer latency {options.latency:g} s, {options.concurrency} in flight, "
          f"min of {repeat}; pytest {' '.join(args)}; target {TARGET_MS:g} ms per case\n")
    print(f"{'suite':<14} {'CPU(N) s':>9} {'CPU(1) s':>9} {'all/N ms':>9} {'ratio':>6} "
          f"{'marginal ms':>12} {'ratio':>6} {'httpx ms':>9} {'plugin ms':>10}")
    with mock_server(options.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        for label, judge in (("one call", False), ("call + judge", True)):
            many, one = Path(tmp) / f"{judge}-many", Path(tmp) / f"{judge}-one"
            write_suite(many, base_url, n, judge)
            write_suite(one, base_url, 1, judge)
            total, single = min_cpu(many, repeat, args), min_cpu(one, repeat, args)
            bare = 1000 * bare_cpu(base_url, n, options.concurrency, judge, repeat) / n
            per_case = 1000 * total / n
            marginal = 1000 * (total - single) / max(1, n - 1)
            print(f"{label:<14} {total:>9.2f} {single:>9.2f} {per_case:>9.2f} {per_case / TARGET_MS:>6.2f} "
                  f"{marginal:>12.2f} {marginal / TARGET_MS:>6.2f} {bare:>9.2f} {marginal - bare:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
