"""What the benchmark scripts share: the mock server in its own process, the suites, and a measured pytest run.

The mock server runs in a process of its own, so that neither pytest nor the bare httpx loop shares
a GIL with it, and the CPU and memory measured for a pytest run are pytest's alone (``os.wait4`` on
its process: its own CPU time and peak resident set, plus those of the xdist workers it waited for).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

JUDGE_REPLY = "Correct. Rating: [[9]]"
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly"]


@contextmanager
def mock_server(latency: float, rules: list[dict[str, object]] | None = None) -> Iterator[str]:
    """Run ``bench-mock-server`` in its own process; yields its OpenAI base URL.

    The judge model rates 9/10; ``rules`` (the mock's, see ``bench_plugin/mock/rules.py``) come first.
    """
    with tempfile.TemporaryDirectory() as tmp:
        rules_file = Path(tmp) / "rules.json"
        all_rules = [*(rules or []), {"model": "judge-model", "reply": JUDGE_REPLY}]
        rules_file.write_text(json.dumps(all_rules), encoding="utf-8")
        command = [sys.executable, "-m", "bench_plugin.mock", "--port", "0", "--latency", str(latency),
                   "--quiet", "--rules", str(rules_file)]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            base_url = ""
            for line in server.stdout:
                if "OpenAI base_url:" in line:
                    base_url = line.split()[-1]
                    break
            if not base_url:
                raise SystemExit("the mock server did not start")
            yield base_url
        finally:
            server.terminate()
            server.wait(timeout=10)


def case_options(doc: str | None, repeat_help: str) -> argparse.ArgumentParser:
    """A script's parser with the options of a run of cases: --cases, --latency, --concurrency, --repeat."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3, help=repeat_help)
    return parser


def suite_text(base_url: str, cases: int, judge: bool = False) -> str:
    """N single-turn cases calling the mock over HTTP, scored by a check (and a judge: two calls per case)."""
    text = (
        "providers:\n"
        f"  local: {{type: openai_compatible, base_url: '{base_url}', timeout: 30, max_retries: 0}}\n"
        "models:\n  m: {provider: local, id: bench-model}\n"
        f"matrix:\n  n: {list(range(cases))}\n"
        "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }}'}\n"
        "scorers:\n  - {name: C, type: contains, value: '{{ n }}'}\n"
    )
    if judge:
        text = text.replace("models:", "judges:\n  grader: {provider: local, id: judge-model}\nmodels:")
        text += ("  - {name: J, type: llm_judge, judge: grader, prompt: 'Grade: {{ answer }}'}\n"
                 "pass_threshold: 0.5\n")
    return text


def write_suite(folder: Path, base_url: str, cases: int, judge: bool = False) -> Path:
    suite = folder / "suites" / "bench.yaml"
    suite.parent.mkdir(parents=True, exist_ok=True)
    suite.write_text(suite_text(base_url, cases, judge), encoding="utf-8")
    return suite


@dataclass(frozen=True)
class RunFigures:
    """One pytest process: wall seconds, CPU seconds (user + system) and peak resident set in MB."""

    wall_s: float
    cpu_s: float
    peak_mb: float


def run_pytest(folder: Path, *args: str, check: bool = True) -> RunFigures:
    """Run ``pytest suites`` in ``folder`` in a child process and measure it.

    Each run starts as a first run does: no results and no response cache from an earlier round
    (with the cache left at its default, every call is made and written to it).
    """
    for leftover in ("bench-results", ".bench-cache"):
        shutil.rmtree(folder / leftover, ignore_errors=True)
    command = [sys.executable, "-m", "pytest", "suites", *PYTEST_ARGS, *args]
    env = {**os.environ, "NO_PROXY": "*", "PYTEST_ADDOPTS": ""}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=folder, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if check and child.returncode != 0:
            out.seek(0)
            raise SystemExit(f"pytest failed ({' '.join(args)}):\n{out.read().decode(errors='replace')[-3000:]}")
    # ru_maxrss is in kilobytes on Linux
    return RunFigures(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def pytest_floor(folder: Path, cases: int) -> RunFigures:
    """Pytest alone: ``cases`` no-op tests, without the plugin, with pytest-html's self-contained report.

    What this machine's pytest costs before any plugin does anything: its start-up, its per-item protocol
    (reports, capture, logging, the terminal) and the HTML report the plugin writes by default.
    """
    test = folder / "suites" / "test_noop.py"
    test.parent.mkdir(parents=True, exist_ok=True)
    test.write_text(f"import pytest\n\n\n@pytest.mark.parametrize('n', range({cases}))\ndef test_noop(n):\n"
                    "    pass\n", encoding="utf-8")
    return run_pytest(folder, "-p", "no:bench_plugin", "--html", "report.html", "--self-contained-html")


def bare_httpx_cpu(base_url: str, cases: int, concurrency: int, judge: bool = False) -> float:
    """CPU seconds of this process making every case's calls through the bare httpx loop."""
    started = time.process_time()
    bare_httpx(base_url, cases, concurrency, judge)
    return time.process_time() - started


async def _bare_httpx(base_url: str, cases: int, concurrency: int, judge: bool) -> float:
    """The peer: the same calls through httpx alone, no pytest, no scoring.

    One client per worker, each taking the next case when its last one is done: httpx's pool grows
    slower per request with the connections it holds (one shared client of 64 connections spends
    several ms of CPU per call), so this is the fastest plain use of httpx at this concurrency. The
    clients share one SSL context and are made before the clock starts (each context costs ~40 ms).
    """
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(cases):
        queue.put_nowait(n)
    context = httpx.create_ssl_context()
    clients = [httpx.AsyncClient(trust_env=False, timeout=30, verify=context) for _ in range(concurrency)]

    async def post(client: httpx.AsyncClient, model: str, content: str) -> str:
        body = {"model": model, "messages": [{"role": "user", "content": content}]}
        response = await client.post(f"{base_url}/chat/completions", json=body)
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"])

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            n = queue.get_nowait()
            answer = await post(client, "bench-model", f"Say {n}")
            if judge:
                await post(client, "judge-model", f"Grade: {answer}")

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(client) for client in clients))
        return time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()


def bare_httpx(base_url: str, cases: int, concurrency: int, judge: bool = False) -> float:
    """Wall seconds of the bare httpx loop making every case's calls with ``concurrency`` in flight."""
    return asyncio.run(_bare_httpx(base_url, cases, concurrency, judge))


def ideal_s(cases: int, calls_per_case: int, latency: float, concurrency: int) -> float:
    """``N x calls_per_case x latency / concurrency``: every slot busy all the time, nothing else costs."""
    return cases * calls_per_case * latency / concurrency
