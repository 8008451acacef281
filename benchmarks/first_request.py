"""Start-up as a run sees it: the time from ``pytest`` starting until the first request of a suite leaves.

``throughput.py``'s one-call run spends its first 0.5-0.7 s before any request (imports, collection,
the runner starting); ``startup.py`` times ``--collect-only``, which stops before the runner and
adds what only a collecting run does at its end. Here a listening socket stands in for the server:
the suite of ``--cases`` single-turn cases (the suite of ``throughput.py``) points at it, and the
pytest process is stopped the moment the first connection arrives. Prints the minimum and median wall
time and CPU time (user + system, from ``/proc``, in clock ticks) over ``--repeat`` runs; with
``--instructions`` also the instructions of one run under valgrind up to that moment (the same count
however busy the machine is). Byte code is written and read as on a user's machine.

    python benchmarks/first_request.py
    python benchmarks/first_request.py --cases 1000 --repeat 15 --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import PYTEST_ARGS, write_suite

ENV = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (``/proc/PID/stat``, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_request(folder: Path, cases: int, valgrind: bool = False) -> tuple[float, float, float | None]:
    """Wall seconds, CPU seconds and billions of instructions (valgrind only) until the first connection."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        write_suite(folder, f"http://127.0.0.1:{listener.getsockname()[1]}/v1", cases)
        command = [sys.executable, "-m", "pytest", "suites", *PYTEST_ARGS]
        if valgrind:
            command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *command]
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=ENV)
        connection, _ = listener.accept()
        wall = time.perf_counter() - started
        if valgrind:  # valgrind prints its count when the process ends on a signal
            child.send_signal(signal.SIGTERM)
            _, errors = child.communicate()
            found = re.search(r"I\s+refs:\s+([\d,]+)", errors)
            connection.close()
            return wall, 0.0, int(found.group(1).replace(",", "")) / 1e9 if found else None
        child.send_signal(signal.SIGSTOP)
        cpu = _cpu_seconds(child.pid)
        child.kill()
        child.send_signal(signal.SIGCONT)
        child.communicate()
        connection.close()
        return wall, cpu, None


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9, help="runs per figure")
    parser.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        first_request(folder, options.cases)  # byte code written, as on a user's second run
        runs = [first_request(folder, options.cases) for _ in range(max(1, options.repeat))]
        walls, cpus = [run[0] for run in runs], [run[1] for run in runs]
        print(f"{options.cases} cases, pytest start to first request, {len(runs)} runs")
        print(f"  wall: min {min(walls):.3f} s, median {statistics.median(walls):.3f} s")
        print(f"  CPU:  min {min(cpus):.3f} s, median {statistics.median(cpus):.3f} s")
        if options.instructions and shutil.which("valgrind"):
            count = first_request(folder, options.cases, valgrind=True)[2]
            print(f"  instructions: {count:.3f} G" if count is not None else "  instructions: -")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
