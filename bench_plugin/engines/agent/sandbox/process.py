"""Running one sandboxed program: its output read in bounded chunks, the timeout, and stopping all of it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from bench_plugin.core.errors import ToolFailure
from bench_plugin.engines.agent.sandbox.launch import CommandResult, Launch, shown_output
from bench_plugin.suite.agent.spec import SandboxLimits

CHUNK_BYTES = 65_536
DRAIN_S = 2.0
"""How long the output may stay open once the program has ended (a background process it left)."""
STOP_S = 10.0


async def run_launch(launch: Launch, argv: Sequence[str], workspace: Path, *, timeout_s: float,
                     limits: SandboxLimits, isolated: bool) -> CommandResult:
    """Start ``launch``, read its output up to the limit, and stop it at ``timeout_s`` or when it floods.

    Args:
        launch: what to start on the host.
        argv: the program as the caller asked for it (for messages and the result).
        workspace: the workspace, shown as ``.`` in the output.
        timeout_s: seconds before everything it started is killed.
        limits: ``output_kb`` bounds what is kept of stdout and stderr together; the others name the
            kernel limit behind a signal that ended it.
        isolated: whether the sandbox kills every process left when the program ends (own PID namespace).

    Raises:
        ToolFailure: when the process cannot be started.
    """
    started = time.perf_counter()
    process = await _start(launch, argv)
    output = _Output(limits.output_kb * 1024)
    readers = output.read(process)
    try:
        stopped = await _wait(process, launch, output, timeout_s)
    except BaseException:  # cancelled with the case: nothing may outlive it
        _abandon(process, launch, readers)
        raise
    left_open = await _drain(process, readers)
    exit_code = _exit_code(stopped, process.returncode)
    note = _note(stopped, exit_code, limits, left_open and not isolated)
    return CommandResult(tuple(argv), exit_code, shown_output(bytes(output.stdout), workspace),
                         shown_output(bytes(output.stderr), workspace), time.perf_counter() - started, note)


async def _start(launch: Launch, argv: Sequence[str]) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            *launch.argv, cwd=launch.cwd, env=dict(launch.env), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout stops what it started too
        )
    except OSError as exc:
        raise ToolFailure(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from exc


async def _wait(process: asyncio.subprocess.Process, launch: Launch, output: _Output, timeout_s: float) -> str | None:
    """Wait for the program to end; stop it at the timeout or when it floods, and say which (None: it ended)."""
    ended = asyncio.ensure_future(process.wait())
    flooded = asyncio.ensure_future(output.full.wait())
    done, _ = await asyncio.wait({ended, flooded}, timeout=max(timeout_s, 0.01), return_when=asyncio.FIRST_COMPLETED)
    flooded.cancel()
    stopped = None
    if ended not in done:
        stopped = "output" if flooded in done else "timeout"
        await _stop(process, launch)
        await ended
    _kill_group(process)  # what it left in its process group (the only clean-up without a PID namespace)
    return stopped


def _abandon(process: asyncio.subprocess.Process, launch: Launch, readers: list[asyncio.Future[None]]) -> None:
    """Kill everything the program started and stop reading it, at once."""
    _kill_group(process)
    if launch.stop is not None:
        launch.stop()
    for reader in readers:
        reader.cancel()


async def _drain(process: asyncio.subprocess.Process, readers: list[asyncio.Future[None]]) -> bool:
    """Read what is left of the output for a while; whether a process it left still holds the pipes."""
    _, open_readers = await asyncio.wait(readers, timeout=DRAIN_S)
    for reader in open_readers:
        reader.cancel()
    if open_readers:  # a detached process holds the pipe: only possible without a PID namespace
        transport = getattr(process, "_transport", None)  # asyncio has no public way to let go of the pipes
        if transport is not None:
            transport.close()
    return bool(open_readers)


def _exit_code(stopped: str | None, code: int | None) -> int | None:
    """The exit status, a signal's as 128 + its number like a shell's; None after a timeout."""
    if stopped == "timeout" or code is None:
        return None
    return 128 - code if code < 0 else code


class _Output:
    """Stdout and stderr as they arrive, kept up to ``limit`` bytes together; past it, ``full`` is set."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.full = asyncio.Event()

    def read(self, process: asyncio.subprocess.Process) -> list[asyncio.Future[None]]:
        """Start reading the program's stdout and stderr."""
        assert process.stdout is not None and process.stderr is not None
        return [asyncio.ensure_future(self.pump(process.stdout, self.stdout)),
                asyncio.ensure_future(self.pump(process.stderr, self.stderr))]

    async def pump(self, stream: asyncio.StreamReader, into: bytearray) -> None:
        # read on after the limit and drop the rest, so a writer is not blocked until it is killed
        while chunk := await stream.read(CHUNK_BYTES):
            room = self.limit - len(self.stdout) - len(self.stderr)
            if room > 0:
                into += chunk[:room]
            if len(chunk) > room:
                self.full.set()


async def _stop(process: asyncio.subprocess.Process, launch: Launch) -> None:
    _kill_group(process)
    if launch.stop is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.to_thread(launch.stop), timeout=STOP_S)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (AttributeError, OSError):  # no process groups (Windows), or nothing is left of it
        with contextlib.suppress(ProcessLookupError):
            if process.returncode is None:
                process.kill()


def _note(stopped: str | None, exit_code: int | None, limits: SandboxLimits, left_running: bool) -> str | None:
    if stopped == "output":
        return f"output cut at {limits.output_kb} KB: the program wrote more and was stopped"
    signals = {
        128 + signal.SIGXCPU: f"ended by SIGXCPU: it used up its {limits.cpu_seconds} s of CPU time",
        128 + signal.SIGXFSZ: f"ended by SIGXFSZ: it wrote a file past the {limits.file_mb} MB limit",
    }
    if exit_code in signals:
        return signals[exit_code]
    if left_running:
        return "a process it started in the background still holds its output; it was left running (no sandbox)"
    return None
