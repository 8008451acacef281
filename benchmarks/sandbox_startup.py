"""Per-command start-up of each sandbox backend that works here, beside bubblewrap's, in the same run.

Each backend runs ``true`` (the cost of the sandbox alone) and ``python3 -c pass`` (an interpreter, as most
agent commands start one) in a fresh workspace, ``--repeat`` times, interleaved so that the machine's load
falls on every backend alike; the median and minimum wall time are printed, with the ratio of the median to
bubblewrap's. The target of issue 28: no backend costs more to start than bubblewrap. Prints, never asserts.

    python benchmarks/sandbox_startup.py            # 30 runs of each command per backend
    python benchmarks/sandbox_startup.py --repeat 100
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from bench_plugin.engines.agent.sandbox import choose
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.unconfined import UnconfinedSandbox
from bench_plugin.engines.agent.workspace import create_workspace, remove_workspace
from bench_plugin.suite.agent.spec import SandboxSpec, WorkspaceSpec

COMMANDS = {"true": ["true"], "python3 -c pass": ["python3", "-c", "pass"]}


async def available() -> dict[str, Sandbox]:
    """Every confining backend that works here (and ``none``, the floor), in ``auto``'s order."""
    found: dict[str, Sandbox] = {}
    for name, opener in choose.BACKENDS.items():
        sandbox, reason = await opener(SandboxSpec(backend=name))
        if sandbox is None:
            print(f"{name}: not measured ({reason or 'not this system'})")
        else:
            found[name] = sandbox
    found["none"] = UnconfinedSandbox(SandboxSpec().limits)
    return found


async def measure(sandboxes: dict[str, Sandbox], repeat: int) -> dict[tuple[str, str], list[float]]:
    """Wall seconds of each command in each sandbox, one after another, ``repeat`` rounds."""
    times: dict[tuple[str, str], list[float]] = {}
    root = create_workspace(WorkspaceSpec())
    try:
        for _ in range(repeat):
            for label, argv in COMMANDS.items():
                for name, sandbox in sandboxes.items():
                    started = time.perf_counter()
                    result = await sandbox.run(argv, root, timeout_s=60)
                    elapsed = time.perf_counter() - started
                    if result.exit_code != 0:
                        raise SystemExit(f"{name}: {label} failed: {result.stderr.strip()[-300:]}")
                    times.setdefault((name, label), []).append(elapsed)
    finally:
        remove_workspace(root)
    return times


def report(times: dict[tuple[str, str], list[float]]) -> None:
    """One line per backend and command: median, minimum, and the median's ratio to bubblewrap's."""
    print(f"{'backend':<12} {'command':<18} {'median ms':>10} {'min ms':>8}  vs bubblewrap")
    for (name, label), values in times.items():
        median = statistics.median(values)
        reference = times.get(("bubblewrap", label))
        ratio = f"{median / statistics.median(reference):.2f}x" if reference else "-"
        print(f"{name:<12} {label:<18} {median * 1000:>10.1f} {min(values) * 1000:>8.1f}  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    sandboxes = asyncio.run(available())
    report(dict(sorted(asyncio.run(measure(sandboxes, args.repeat)).items(), key=lambda item: item[0][1])))


if __name__ == "__main__":
    main()
