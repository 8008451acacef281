"""An outage: what a case costs when its call fails, next to one whose call is answered.

Runs the one-call suite twice against the mock server (in its own process): once answered, once with
every call failing (HTTP 500, no retries, the circuit breaker off, so every case makes its call and
ends as ERROR). Prints the wall time and our CPU per case of each, and the ratio of the failing run to
the answered one: an infrastructure failure should cost about what an answer does (its message, its
record), not a formatted traceback. Figures, not assertions.

    python benchmarks/error_speed.py                 # N=1000, latency 0.02 s, 64 in flight
    python benchmarks/error_speed.py --cases 200 --status 404
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness import RunFigures, case_options, mock_server, run_pytest, write_suite


def measured(folder: Path, repeat: int, args: list[str]) -> RunFigures:
    """The run of least CPU among ``repeat`` (other work on the machine only ever adds)."""
    return min((run_pytest(folder, *args, check=False) for _ in range(repeat)), key=lambda run: run.cpu_s)


def main() -> int:
    parser = case_options(__doc__, "runs per setting; the least CPU is printed")
    parser.add_argument("--status", type=int, default=500, help="the failing calls' HTTP status")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
