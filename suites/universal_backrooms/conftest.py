"""Offline, the CLI seat of cli_with_world_interface is a stand-in world interface this folder starts itself.

The stand-in (``bench_plugin/mock/world.py``) answers from a fixed file system on a free loopback port, one
per process; ``--bench-base-url world=URL`` points the seat at a real world interface instead.
"""

from __future__ import annotations

import pytest

from bench_plugin import MockServer

_WORLD = pytest.StashKey[MockServer]()


def pytest_bench_base_urls(config: pytest.Config) -> dict[str, str]:
    """The stand-in world's URL for the ``world`` provider, started on the first suite collected here."""
    if _WORLD not in config.stash:
        server = MockServer().start()
        config.add_cleanup(server.stop)
        config.stash[_WORLD] = server
    return {"world": config.stash[_WORLD].url + "/world"}
