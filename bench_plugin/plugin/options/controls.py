"""The options that choose how much runs and how the models under test are called, declared and checked once.

``--bench-limit N`` (the first N cases per suite and model), ``--bench-model-arg KEY=VALUE`` (sampling
parameters for the models under test, never the judges) and ``--bench-env-file PATH|off`` (where
``.env`` is read from; ``env_file.py`` reads it). ``plugin/__init__.py`` declares them through
``add_control_options``; ``plugin/options/__init__.py`` reads them through ``read_control_options``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from bench_plugin.core.hints import did_you_mean

ModelArgs = tuple[tuple[str, Any], ...]


def _number(low: float | None, high: float | None, *, whole: bool = False) -> Callable[[Any], str | None]:
    """A check of a number in ``[low, high]``; it returns what was expected when the value is not that."""
    kind = "a whole number" if whole else "a number"
    if low is not None and high is not None:
        expected = f"{kind} from {low:g} to {high:g}"
    else:
        expected = f"{kind} >= {low:g}" if low is not None else kind

    def check(value: Any) -> str | None:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        fits = fits and (not whole or float(value).is_integer())
        fits = fits and (low is None or value >= low) and (high is None or value <= high)
        return None if fits else expected

    return check


def _stop(value: Any) -> str | None:
    fits = isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))
    return None if fits else 'a string, or a JSON list of strings such as ["###", "END"]'


def _effort(value: Any) -> str | None:
    return None if value in ("low", "medium", "high") else "one of low, medium, high"


#: What ``--bench-model-arg`` may set, and what each takes (the providers' own names, sent as params).
MODEL_ARG_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "temperature": _number(0, 2),
    "top_p": _number(0, 1),
    "top_k": _number(1, None, whole=True),
    "max_tokens": _number(1, None, whole=True),
    "seed": _number(None, None, whole=True),
    "stop": _stop,
    "frequency_penalty": _number(-2, 2),
    "presence_penalty": _number(-2, 2),
    "reasoning_effort": _effort,
}


_WHOLE = ("top_k", "max_tokens", "seed")


@dataclass(frozen=True)
class ControlOptions:
    """``--bench-limit`` (None: every case) and ``--bench-model-arg``, checked."""

    limit: int | None = None
    model_args: ModelArgs = ()

    def describe(self) -> str:
        """``first 5 cases per suite and model; model args temperature=0, seed=1`` for the report header."""
        parts = [f"first {self.limit} case{'s' if self.limit != 1 else ''} per suite and model (--bench-limit)"
                 if self.limit is not None else "",
                 "model args " + ", ".join(f"{key}={json.dumps(value)}" for key, value in self.model_args)
                 + " (--bench-model-arg)" if self.model_args else ""]
        return "; ".join(part for part in parts if part)


def add_control_options(group: pytest.OptionGroup) -> None:
    """Declare the options in the ``bench`` group."""
    group.addoption("--bench-limit", type=_case_count, default=None, metavar="N",
                    help="run only the first N cases of each suite for each model (in YAML order, after -k/-m; "
                         "every run of each); the rest are deselected")
    group.addoption("--bench-model-arg", action="append", default=[], metavar="KEY=VALUE",
                    help=f"a parameter sent to the models under test (not the judges), over the suite's "
                         f"(repeatable): {', '.join(MODEL_ARG_CHECKS)}; e.g. temperature=0")
    group.addoption("--bench-env-file", default=None, metavar="PATH|off",
                    help="read environment variables (API keys) from PATH instead of <rootdir>/.env, or off; "
                         "variables already set win, and values are never shown")


def _case_count(text: str) -> int:
    """``--bench-limit``'s value; the old provider form (``openai:rpm=500``) gets pointed at its new name."""
    try:
        count = int(text)
    except ValueError:
        moved = "; provider limits such as openai:rpm=500 are --bench-rate-limit" if "=" in text else ""
        raise argparse.ArgumentTypeError(f"expected a whole number of cases, got {text!r}{moved}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {count}")
    return count


def read_control_options(config: pytest.Config) -> ControlOptions:
    """Check ``--bench-model-arg`` (``--bench-limit`` was checked as it was parsed).

    Raises:
        pytest.UsageError: naming the option, what it expects and what it got.
    """
    return ControlOptions(limit=config.getoption("bench_limit"),
                          model_args=parse_model_args(config.getoption("bench_model_arg")))


def parse_model_args(values: Sequence[str]) -> ModelArgs:
    """``["temperature=0", "stop=END"]`` -> ``(("temperature", 0), ("stop", "END"))``; the last of a key wins.

    A value is read as JSON when it is JSON (numbers, true/false, lists such as ``["END"]``), else as text.

    Raises:
        pytest.UsageError: an unknown key (with a did-you-mean) or a value the key does not take.
    """
    args: dict[str, Any] = {}
    for given in values:
        key, sep, text = given.partition("=")
        key = key.strip()
        if not sep or not key:
            raise pytest.UsageError(f"--bench-model-arg: expected KEY=VALUE such as temperature=0, got {given!r}")
        check = MODEL_ARG_CHECKS.get(key)
        if check is None:
            guess = did_you_mean(key, MODEL_ARG_CHECKS)
            raise pytest.UsageError(f"--bench-model-arg: unknown key {key!r}{'; ' + guess if guess else ''} "
                                    f"(keys: {', '.join(MODEL_ARG_CHECKS)})")
        value = _value(text.strip())
        expected = check(value)
        if expected is not None:
            raise pytest.UsageError(f"--bench-model-arg: {key} expects {expected}, got {text.strip()!r}")
        args[key] = int(value) if key in _WHOLE else value  # max_tokens=100.0 is sent as 100
    return tuple(args.items())


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
