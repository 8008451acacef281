"""The runner's loop: it starts every case submitted, and says when it is quiet.

One wake-up starts all the cases submitted while the loop was busy; another thread can wait until the loop
waits on its connections with nothing else to do.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import CaseError
from bench_plugin.plugin.reporter import WRITER_STEPS, prepare_in_background
from bench_plugin.run.case import PreparedCase
from bench_plugin.run.runner import Runner
from bench_plugin.suite.spec import CaseSpec, CompositeSpec


def broken_case(name: str) -> PreparedCase:
    """A case that ends without a call: its record says why it cannot run."""
    spec = CaseSpec("s", "suites/s.yaml", name, "m", None, 1, (), (), CompositeSpec(), 1.0, {})
    return PreparedCase(replace(spec, problem=CaseError(f"{name} cannot run")))


def hold(runner: Runner) -> tuple[asyncio.AbstractEventLoop, threading.Event]:
    """Keep the runner's loop busy until the event returned is set."""
    loop = runner._ensure_started()
    busy, release = threading.Event(), threading.Event()

    def block() -> None:
        busy.set()
        release.wait(10)

    loop.call_soon_threadsafe(block)
    assert busy.wait(10)
    return loop, release


def test_cases_submitted_while_the_loop_is_busy_start_with_one_wake_up(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = Runner(8)
    try:
        loop, release = hold(runner)
        wake_ups: list[Any] = []
        real = loop.call_soon_threadsafe

        def counted(*args: Any) -> asyncio.Handle:
            wake_ups.append(args)
            return real(*args)

        monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
        futures = [runner.submit(broken_case(f"t{i}"), f"id{i}") for i in range(200)]
        release.set()
        records = [future.result(timeout=10) for future in futures]
        assert [record.nodeid for record in records] == [f"id{i}" for i in range(200)]
        assert all(record.status == "invalid" and "cannot run" in (record.reason or "") for record in records)
        assert len(wake_ups) == 1
        # the loop took them all: the next case wakes it again
        assert runner.submit(broken_case("later"), "later").result(timeout=10).nodeid == "later"
        assert len(wake_ups) == 2
    finally:
        runner.close()


def test_a_runner_closed_with_cases_not_taken_starts_the_next_ones() -> None:
    runner = Runner(2)
    _, release = hold(runner)
    waiting = runner.submit(broken_case("never"), "never")
    release.set()
    runner.close()
    assert waiting.cancelled() or waiting.result(timeout=10).nodeid == "never"
    try:
        assert runner.submit(broken_case("next"), "next").result(timeout=10).nodeid == "next"
    finally:
        runner.close()


def test_quiet_at_once_without_a_loop_and_once_the_loop_waits() -> None:
    runner = Runner(2)
    assert runner.wait_until_quiet(timeout=0)  # no loop: nothing to disturb
    try:
        runner._ensure_started()
        assert runner.wait_until_quiet(timeout=5)
    finally:
        runner.close()
    assert runner.wait_until_quiet(timeout=0)


def test_not_quiet_while_the_loop_works() -> None:
    runner = Runner(2)
    try:
        _, release = hold(runner)
        assert not runner.wait_until_quiet(timeout=0.05)
        release.set()
        assert runner.wait_until_quiet(timeout=5)
    finally:
        runner.close()


def test_not_quiet_while_cases_submitted_wait_for_the_loop_to_take_them(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = Runner(2)
    try:
        loop = runner._ensure_started()
        assert runner.wait_until_quiet(timeout=5)
        wake_ups: list[Any] = []
        real = loop.call_soon_threadsafe
        monkeypatch.setattr(loop, "call_soon_threadsafe", lambda *args: wake_ups.append(args))
        future = runner.submit(broken_case("first"), "first")  # its wake-up is held back: the loop sleeps on
        assert not runner.wait_until_quiet(timeout=0.05)
        monkeypatch.undo()
        real(*wake_ups[0])
        assert future.result(timeout=10).nodeid == "first"
        assert runner.wait_until_quiet(timeout=5)
    finally:
        runner.close()


def test_the_writers_load_step_by_step_each_when_the_loop_is_quiet(tmp_path: Path) -> None:
    asked: list[int] = []
    thread = prepare_in_background(None, tmp_path, html=True, quiet=lambda: asked.append(1))
    thread.join(30)
    assert len(asked) == len(WRITER_STEPS) + 1  # and report.html's hooks
    assert "bench_plugin.report.write" in sys.modules
