"""An outage: what a case costs when its call fails, next to one whose call is answered.

Runs the one-call suite twice against the mock server (in its own process): once answered, once with
every call failing (HTTP 500, no retries, the circuit breaker off, so every case makes its call and
ends as ERROR). Prints the wall time and our CPU per case of each, and the ratio of the failing run to
the answered one: an infrastructure failure should cost about what an answer does (its message, its
record), not a formatted traceback. Figures, not assertions.

Then the end of a large failing run (issue 33): ``--failing-cases`` offline cases (the echo provider, no
server), a third of which fail their check, run with pytest's default failure summary and with ``--tb=no``.
pytest's summary scanned every passed setup and teardown report once per failure (quadratic:
``plugin/failure_summary.py``, ``docs/upstream/``); the ratio of the two runs' wall and CPU is printed
(target: within 1.2x).

    python benchmarks/error_speed.py                 # N=1000, latency 0.02 s, 64 in flight; 10,000 failing
    python benchmarks/error_speed.py --cases 200 --status 404 --failing-cases 0
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness import RunFigures, case_options, mock_server, run_pytest, write_suite


def measured(folder: Path, repeat: int, args: list[str]) -> RunFigures:
    """The run of least CPU among ``repeat`` (other work on the machine only ever adds)."""
    return min((run_pytest(folder, *args, check=False) for _ in range(repeat)), key=lambda run: run.cpu_s)


def failing_suite(folder: Path, cases: int) -> None:
    """``cases`` offline cases (echo answers ``Say n``); every third looks for a word the answer lacks and fails."""
    suite = folder / "suites" / "bench.yaml"
    suite.parent.mkdir(parents=True, exist_ok=True)
    suite.write_text(
        "models:\n  m: {provider: echo}\n"
        f"matrix:\n  n: {list(range(cases))}\n"
        "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }}'}\n"
        "scorers:\n  - {name: C, type: contains, value: \"{{ n if n % 3 else 'absent' }}\"}\n", encoding="utf-8")


def failing_summary(cases: int, repeat: int) -> None:
    """The end of a run where a third of the cases fail: pytest's default summary against ``--tb=no``."""
    print(f"\n{cases} offline cases, a third failing: the whole run with pytest's failure summary and with "
          f"--tb=no, least CPU of {repeat}; target 1.2x\n")
    print(f"{'run':<34} {'wall s':>8} {'CPU s':>8} {'wall ratio':>11} {'CPU ratio':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        failing_suite(folder, cases)
        runs = {label: measured(folder, repeat, args) for label, args in
                (("--tb=no", ["--tb=no"]), ("default (failure summary)", []))}
    short = runs["--tb=no"]
    for label, run in runs.items():
        print(f"{label:<34} {run.wall_s:8.2f} {run.cpu_s:8.2f} {run.wall_s / short.wall_s:10.2f}x "
              f"{run.cpu_s / short.cpu_s:9.2f}x")


def main() -> int:
    parser = case_options(__doc__, "runs per setting; the least CPU is printed")
    parser.add_argument("--status", type=int, default=500, help="the failing calls' HTTP status")
    parser.add_argument("--failing-cases", type=int, default=10_000,
                        help="cases of the failing offline run (0 to skip it)")
    options = parser.parse_args()
    n = options.cases
    args = ["--bench-concurrency", str(options.concurrency), "--bench-circuit-breaker", "0"]
    print(f"{n} cases, answer latency {options.latency:g} s, {options.concurrency} in flight, "
          f"least CPU of {options.repeat}\n")
    print(f"{'run':<34} {'wall s':>8} {'CPU ms/case':>12} {'vs answered':>12}")
    failing = [{"model": "bench-model", "status": options.status, "error": "the service is down"}]
    figures: dict[str, RunFigures] = {}
    for name, rules in (("answered", None), (f"every call fails (HTTP {options.status})", failing)):
        with mock_server(options.latency, rules) as base_url, tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_suite(folder, base_url, n)
            figures[name] = run = measured(folder, options.repeat, args)
        ratio = run.cpu_s / figures["answered"].cpu_s
        print(f"{name:<34} {run.wall_s:8.2f} {run.cpu_s / n * 1000:12.2f} {ratio:11.2f}x")
    if options.failing_cases:
        failing_summary(options.failing_cases, options.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
