"""The plugin's own hooks: what a ``conftest.py`` or another pytest plugin may implement.

Added to pytest with ``pytest_addhooks``. The three ``*_types``/``engines`` hooks are asked when a
suite file is collected, through that file's hook proxy: a ``conftest.py`` adds names for the suites
in its folder and below, the way pytest scopes fixtures. Each returns a mapping of name -> object;
later conftests (deeper folders) win on a clash, then built-ins, then entry points.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest


def pytest_bench_scorer_types() -> Mapping[str, object]:  # type: ignore[empty-body]
    """Return scorer types to add, by the name suites write as ``type:``.

    A scorer type has ``parse(spec) -> Scorer``; the Scorer it returns is frozen and has
    ``async score(context) -> ComponentScore`` (``bench_plugin.scoring.context``). A class with a
    ``parse`` classmethod is the usual shape. See the guide's "Extending in Python".
    """


def pytest_bench_provider_types() -> Mapping[str, object]:  # type: ignore[empty-body]
    """Return provider types to add, by the name suites write as a provider's ``type:``.

    Each is a callable ``(ProviderSpec, HttpPool) -> Provider`` (a subclass of
    ``bench_plugin.providers.interface.BaseProvider`` only has to write ``complete``).
    """


def pytest_bench_engines() -> Mapping[str, object]:  # type: ignore[empty-body]
    """Return engines to add, by the name a task writes as ``engine:``.

    Each is an async callable ``(CaseSpec, CallModel) -> Transcript``; it makes every model call
    through ``CallModel``, which brings the runner's concurrency limits and retries.
    """


def pytest_bench_base_urls(config: pytest.Config) -> Mapping[str, str]:  # type: ignore[empty-body]
    """Return base URLs by provider name for the suites of this folder: servers the project starts itself.

    Asked when a suite file is collected (a deeper conftest wins on a clash), so a ``conftest.py`` can start
    a stand-in application on a free loopback port and point a provider at it; the user's
    ``--bench-base-url NAME=URL`` wins over it (the real application is one option away).
    """


def pytest_bench_case_recorded(config: pytest.Config, record: Mapping[str, Any]) -> None:
    """Called on the controller (never on an xdist worker) as each case's record arrives.

    ``record`` is the plain-data record also written to ``results.jsonl``; read it, do not change it.
    """
