"""How the selected cases split: across CI machines (``--bench-shard i/n``) and across xdist workers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from bench_plugin.suite.discover import SUITE_SUFFIXES
from bench_plugin.suite.quality_gates import is_gate_nodeid
from bench_plugin.suite.spec import parse_case_nodeid

ItemT = TypeVar("ItemT")

SHARE_KEY = "bench_share"
"""The ``workerinput`` key through which the controller tells an xdist worker its share: ``[k, n]``."""


@dataclass(frozen=True)
class Shard:
    """One machine's part of a sharded run: ``index`` of ``count``, counted from 1 as written."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """Read ``i/n`` (``1 <= i <= n``), as ``--bench-shard`` takes it.

    Raises:
        ValueError: saying what is expected and what was given.
    """
    index, sep, count = text.strip().partition("/")
    try:
        shard = Shard(int(index), int(count))
    except ValueError:
        shard = None
    if not sep or shard is None or not 1 <= shard.index <= shard.count:
        raise ValueError(f"expected I/N with 1 <= I <= N, such as 2/3, got {text!r}")
    return shard


def shard_of(nodeid: str, count: int) -> int:
    """The shard (1 to ``count``) a case belongs to, from its node id alone.

    A hash of the id, not the case's position: every machine agrees whatever its collection order
    (``pytest-randomly``), and a case keeps its shard whatever ``-k``, ``-m`` or ``--lf`` leave out.
    """
    digest = hashlib.sha256(nodeid.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def split_shard(
    items: Sequence[ItemT], shard: Shard, nodeid: Callable[[ItemT], str], is_case: Callable[[ItemT], bool]
) -> tuple[list[ItemT], list[ItemT]]:
    """Split ``items`` into (kept, deselected) for ``shard``: other shards' cases are deselected.

    Args:
        items: the selected items, in run order (kept in that order).
        shard: this machine's shard.
        nodeid: an item's node id.
        is_case: whether an item is a bench case; anything else (an ordinary test) is kept.
    """
    kept: list[ItemT] = []
    dropped: list[ItemT] = []
    for item in items:
        mine = not is_case(item) or shard_of(nodeid(item), shard.count) == shard.index
        (kept if mine else dropped).append(item)
    return kept, dropped


def is_suite_nodeid(nodeid: str) -> bool:
    """Whether a node id names an item collected from a suite file (the xdist controller sees ids only)."""
    return nodeid.split("::", 1)[0].endswith(SUITE_SUFFIXES)


def worker_share(nodeids: Sequence[str], worker: int, workers: int) -> list[int]:
    """Indices (into ``nodeids``) of the suite items xdist worker ``worker`` (0-based) of ``workers`` runs.

    Round robin over each model's cases in collection order (the deal goes on from one model to the
    next), so every worker gets as many cases of each model as the others: each keeps to an equal share
    of a model's limits (``limits.shared_by``). Dealt over all the cases at once, two models alternating
    in the collection gave two workers one model each, each at half its limit. The controller and every
    worker compute it from the same collection, so a worker starts exactly the cases it will be sent.
    """
    models: dict[tuple[str, str], list[int]] = {}
    for index, nodeid in enumerate(nodeids):
        if is_suite_nodeid(nodeid) and not is_gate_nodeid(nodeid):  # gates: the controller judges them
            parsed = parse_case_nodeid(nodeid)
            models.setdefault((parsed[0], parsed[2]) if parsed else (nodeid.partition("::")[0], ""), []).append(index)
    dealt = (index for positions in models.values() for index in positions)
    return sorted(index for turn, index in enumerate(dealt) if turn % workers == worker)


def share_from_workerinput(workerinput: Mapping[str, Any]) -> tuple[int, int] | None:
    """The ``(worker, workers)`` share the controller assigned, or None when it sends cases as it goes."""
    share = workerinput.get(SHARE_KEY)
    if not share:
        return None
    worker, workers = share
    return int(worker), int(workers)
