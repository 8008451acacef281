"""The options that bound model calls (limits, timeouts, retries, budgets, fail-fast), declared and checked once.

They override what suites declare under ``providers:`` and ``models:`` and reach the runner as
``RunnerSettings``; ``plugin/__init__.py`` declares them through ``add_call_options`` and ``plugin/options/__init__.py``
reads them through ``read_call_settings``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench_plugin.calls.cache import DEFAULT_FOLDER, DEFAULT_MODE, MODES
from bench_plugin.run.runner import BREAKER_THRESHOLD, RunnerSettings

PROVIDER_KEYS = ("concurrency", "rpm", "tpm", "timeout", "max_retries", "max_wait")
MODEL_KEYS = ("concurrency", "rpm", "tpm")
_WHOLE = ("concurrency", "max_retries")
MAX_RETRIES = 20
"""As the suite schema's bound on a provider's ``max_retries``."""


def add_call_options(group: pytest.OptionGroup) -> None:
    """Declare the call options in the ``bench`` group."""
    group.addoption("--bench-rate-limit", action="append", default=[], metavar="PROVIDER:KEY=VALUE,...",
                    help="limit a provider's calls, over the suite: concurrency, rpm, tpm, timeout (s per "
                         "attempt), max_retries, max_wait (s of waiting per call); e.g. openai:rpm=500,tpm=90000 "
                         "(repeatable; under xdist each worker keeps to an equal share of concurrency, rpm, tpm)")
    group.addoption("--bench-model-rate-limit", action="append", default=[], metavar="MODEL:KEY=VALUE,...",
                    help="limit one model's calls (its name in the suite, or provider:model-id): concurrency, "
                         "rpm, tpm; e.g. gpt-4o:rpm=60 (repeatable; under xdist each worker keeps to an equal share)")
    group.addoption("--bench-timeout", type=float, default=None, metavar="SECONDS",
                    help="seconds per request phase (connect, send, each read) of every attempt of a model call, "
                         "for every provider (over the suites' timeout)")
    group.addoption("--bench-case-timeout", type=float, default=None, metavar="SECONDS",
                    help="wall-clock budget of one case, its judges included; a case past it is an ERROR that "
                         "keeps what was said")
    group.addoption("--bench-budget-usd", type=float, default=None, metavar="USD",
                    help="once the session's calls cost this much, no new case starts; the rest are reported "
                         "as not run (under xdist each worker keeps to an equal share)")
    group.addoption("--bench-budget-tokens", type=int, default=None, metavar="N",
                    help="once the session's calls used this many tokens, no new case starts (each xdist worker "
                         "keeps to an equal share)")
    group.addoption("--bench-fail-fast", action="store_true", default=False,
                    help="do not retry rate limits (429): the provider's remaining cases end at once as errors")
    group.addoption("--bench-circuit-breaker", type=int, default=None, metavar="K",
                    help=f"after K consecutive infrastructure failures of a provider its remaining cases end at "
                         f"once (default {BREAKER_THRESHOLD}, or twice the calls it may have in flight when that is "
                         f"more; 0: never)")
    group.addoption("--bench-stream", action="store_true", default=False,
                    help="stream every answer (server-sent events) and record its time to first token and token "
                         "rate; a model's own stream: false still wins")
    group.addoption("--bench-cache", default=DEFAULT_MODE, choices=MODES,
                    help=f"response cache of HTTP model calls (default {DEFAULT_MODE}): on reads and stores, read "
                         "never stores, write calls every model again and stores the answers, off neither")
    group.addoption("--bench-cache-dir", default=None, metavar="DIR",
                    help=f"folder of the response cache, shared by xdist workers and parallel runs (default "
                         f"{DEFAULT_FOLDER} under the rootdir)")


def read_call_settings(config: pytest.Config) -> RunnerSettings:
    """Check the call options.

    Raises:
        pytest.UsageError: naming the option, what it expects and what it got.
    """
    breaker = config.getoption("bench_circuit_breaker")
    if breaker is not None and breaker < 0:
        raise pytest.UsageError(f"--bench-circuit-breaker: expected a whole number >= 0, got {breaker}")
    tokens = config.getoption("bench_budget_tokens")
    if tokens is not None and tokens < 1:
        raise pytest.UsageError(f"--bench-budget-tokens: expected a whole number >= 1, got {tokens}")
    usd = _positive("--bench-budget-usd", config.getoption("bench_budget_usd"))
    # under xdist each worker keeps to an equal share, so that together they stay within the budget
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    return RunnerSettings(
        provider_limits=_limits("--bench-rate-limit", config.getoption("bench_rate_limit"), PROVIDER_KEYS),
        model_limits=_limits("--bench-model-rate-limit", config.getoption("bench_model_rate_limit"), MODEL_KEYS),
        fail_fast=bool(config.getoption("bench_fail_fast")),
        breaker_threshold=breaker,
        call_timeout_s=_positive("--bench-timeout", config.getoption("bench_timeout")),
        case_timeout_s=_positive("--bench-case-timeout", config.getoption("bench_case_timeout")),
        budget_usd=usd / workers if usd is not None else None,
        budget_tokens=max(1, tokens // workers) if tokens is not None else None,
        cache_mode=config.getoption("bench_cache"),
        cache_dir=config.rootpath / Path(config.getoption("bench_cache_dir") or DEFAULT_FOLDER).expanduser(),
        stream=bool(config.getoption("bench_stream")),
        processes=workers,  # the rate limits too: each worker keeps to an equal share (limits.shared_by)
    )


def _positive(option: str, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise pytest.UsageError(f"{option}: expected a number > 0, got {value}")
    return value


def _limits(option: str, values: Sequence[str], keys: Sequence[str]) -> dict[str, dict[str, float]]:
    """``NAME:KEY=VALUE,...`` by name; a model named ``provider:model-id`` keeps its colon (the last one splits)."""
    limits: dict[str, dict[str, float]] = {}
    for value in values:
        name, sep, pairs = value.rpartition(":")
        if not sep or not name or not pairs:
            raise pytest.UsageError(f"{option}: expected NAME:KEY=VALUE[,KEY=VALUE...] such as "
                                    f"openai:rpm=500, got {value!r}")
        for pair in pairs.split(","):
            key, eq, number = pair.strip().partition("=")
            if key not in keys or not eq:
                raise pytest.UsageError(f"{option}: {value!r}: expected KEY=VALUE with KEY one of {', '.join(keys)}, "
                                        f"got {pair.strip()!r}")
            if key in limits.get(name, {}):  # the last would win in silence
                raise pytest.UsageError(f"{option}: {name}: {key} given twice; give each limit once")
            limits.setdefault(name, {})[key] = _number(option, value, key, number)
    return limits


def _number(option: str, value: str, key: str, text: str) -> float:
    """One limit's value: a number > 0 (``max_retries`` >= 0), whole for ``concurrency`` and ``max_retries``."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    whole, low = key in _WHOLE, 0 if key == "max_retries" else None
    in_range = (0 <= number <= MAX_RETRIES) if low == 0 else number > 0
    if not (math.isfinite(number) and in_range and (not whole or number.is_integer())):
        expected = ("a whole number" if whole else "a number") + (f" from 0 to {MAX_RETRIES}" if low == 0 else " > 0")
        raise pytest.UsageError(f"{option}: {value!r}: {key} expects {expected}, got {text!r}")
    return int(number) if whole else number
