"""Peak memory of a run: the largest resident set of the pytest process, for 1000 and 10,000 cases.

Runs the one-call suite against the mock server (in its own process) with the default reports
(results.jsonl, report.md, summary.json, report.html, dashboard.html) and the response cache at its
default, and prints ``ru_maxrss`` of the pytest process with its ratio to the target (120 MB for
1000 cases, 200 MB for 10,000), next to the same for an empty run (``--collect-only`` of one case:
what the imports alone take) and the growth per case over it; with two sizes or more, also the growth per
case from the smallest to the largest (what each further case adds). ``--html-off`` adds the runs with
``--bench-html off``. Peak memory hardly depends on the machine's load: one run per figure is enough.

    python benchmarks/memory.py
    python benchmarks/memory.py --cases 1000 10000 --html-off
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness import mock_server, run_pytest, write_suite

TARGETS_MB = {1000: 120.0, 10_000: 200.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--html-off", action="store_true", help="also measure with --bench-html off")
    parser.add_argument("--judge", action="store_true", help="the call + judge suite instead of one call")
    options = parser.parse_args()
    settings = [("default reports", [])]
    if options.html_off:
        settings.append(("--bench-html off", ["--bench-html", "off"]))
    print(f"peak resident set of the pytest process; latency {options.latency:g} s, "
          f"{options.concurrency} in flight\n")
    print(f"{'run':<34} {'peak MB':>8} {'target':>7} {'ratio':>6} {'KB/case':>8}")
    peaks: dict[str, dict[int, float]] = {label: {} for label, _ in settings}
    with mock_server(options.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "one"
        write_suite(base, base_url, 1, options.judge)
        floor = run_pytest(base, "--collect-only").peak_mb
        print(f"{'imports only (--collect-only, 1)':<34} {floor:>8.1f} {'-':>7} {'-':>6} {'-':>8}")
        for n in options.cases:
            folder = Path(tmp) / str(n)
            write_suite(folder, base_url, n, options.judge)
            for label, args in settings:
                peak = run_pytest(folder, "--bench-concurrency", str(options.concurrency), *args).peak_mb
                peaks[label][n] = peak
                target = TARGETS_MB.get(n)
                shown = (f"{target:>7.0f} {peak / target:>6.2f}" if target else f"{'-':>7} {'-':>6}")
                print(f"{f'{n} cases, {label}':<34} {peak:>8.1f} {shown} {1024 * (peak - floor) / n:>8.1f}")
    print_marginal_growth(peaks)
    return 0


def print_marginal_growth(peaks: dict[str, dict[int, float]]) -> None:
    """What each further case adds to the peak, from the smallest run to the largest of each setting."""
    for label, by_size in peaks.items():
        if len(by_size) >= 2:
            small, large = min(by_size), max(by_size)
            growth = 1024 * (by_size[large] - by_size[small]) / (large - small)
            print(f"growth per case, {small} to {large} cases, {label}: {growth:.1f} KB")


if __name__ == "__main__":
    raise SystemExit(main())
