"""Start-up + collection: the wall time of ``pytest --collect-only -q`` on a suite of 1000 cases.

Prints the minimum wall and CPU over ``--repeat`` runs (the minimum is the figure least disturbed by
other work on the machine) with the ratio to the 0.8 s target, next to the same command on an empty
folder with and without the plugin (``-p no:bench_plugin``), which shows what pytest and the other
installed plugins cost alone. Byte code is written and read as on a user's machine; one row repeats
the suite with ``PYTHONDONTWRITEBYTECODE=1`` (containers often set it), where nothing compiled is kept
beyond what was there before. ``--instructions`` also counts the instructions of one run of each
under valgrind (slow, about 20x, but the same count however busy the machine is: the measure to
compare before and after a change when wall times are noisy).

    python benchmarks/startup.py
    python benchmarks/startup.py --cases 1000 --repeat 10 --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import suite_text

TARGET_S = 0.8
# as on a user's machine: byte code is written on the first run and read after (the minimum is that case)
ENV = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}


def measure(folder: Path, args: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float]:
    """Minimum wall and CPU seconds of ``pytest --collect-only -q ARGS`` in ``folder``."""
    walls, cpus = [], []
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args]
    for _ in range(repeat):
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.perf_counter() - started)
        if os.waitstatus_to_exitcode(status) not in (0, 5):  # 5: an empty folder collects nothing
            raise SystemExit(f"pytest --collect-only {' '.join(args)} failed in {folder}")
        cpus.append(usage.ru_utime + usage.ru_stime)
    return min(walls), min(cpus)


def instructions(folder: Path, args: list[str], env: dict[str, str]) -> float | None:
    """Billions of instructions of one run under valgrind, or None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    return int(found.group(1).replace(",", "")) / 1e9 if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7, help="runs per figure; the minimum is printed")
    parser.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suite_folder, empty = Path(tmp) / "suite", Path(tmp) / "empty"
        (suite_folder / "suites").mkdir(parents=True)
        empty.mkdir()
        # the URL is never called: collection makes no request
        (suite_folder / "suites" / "bench.yaml").write_text(suite_text("http://127.0.0.1:9/v1", options.cases))
        no_bytecode = {**ENV, "PYTHONDONTWRITEBYTECODE": "1"}
        rows = [
            (f"{options.cases} cases (suites/)", suite_folder, ["suites"], ENV),
            ("  the same, PYTHONDONTWRITEBYTECODE=1", suite_folder, ["suites"], no_bytecode),
            ("empty folder, with the plugin", empty, [], ENV),
            ("empty folder, -p no:bench_plugin", empty, ["-p", "no:bench_plugin"], ENV),
        ]
        print(f"pytest --collect-only -q, min of {options.repeat}; target {TARGET_S:g} s for {options.cases} cases\n")
        header = f"{'what':<36} {'wall s':>7} {'CPU s':>7} {'vs target':>10}"
        print(header + (f" {'G instr':>8}" if options.instructions else ""))
        for label, folder, args, env in rows:
            wall, cpu = measure(folder, args, max(1, options.repeat), env)
            line = f"{label:<36} {wall:>7.3f} {cpu:>7.3f} {wall / TARGET_S:>10.2f}"
            if options.instructions:
                count = instructions(folder, args, env)
                line += f" {count:>8.3f}" if count is not None else f" {'-':>8}"
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
