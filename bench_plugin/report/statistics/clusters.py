"""Which unit each case of a suite belongs to: the cases that are one piece of evidence together.

A record may declare its cluster in a field ``cluster`` (for example a dataset's question id shared by
prompt variants of one question, or a conversation's seed): every case with that cluster is one unit.
Without a declared cluster, the unit is the task when some task ran more than once (its runs cluster
together), else the case (task, run). Every interval and paired test of the report is over these units.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

CaseKey = tuple[str, int]


def declared_cluster(record: Any) -> Hashable | None:
    """The record's declared cluster (its ``cluster`` field), or None.

    Every record names a cluster (the suite's ``cluster:``, else its task's id without a prompt variant's suffix):
    one that is the case's own task is no declaration, and the rules without one apply.
    """
    cluster = getattr(record, "cluster", None)
    return None if cluster is None or cluster == "" or cluster == getattr(record, "task", None) else cluster


def unit_labels(rows: Sequence[tuple[Any, str, CaseKey]], clustered: bool) -> list[Hashable]:
    """Per row ``(record or None, model, (task, run))``, its unit's label.

    A case's declared cluster counts for every model's row of that case (a row without a record, a case the
    model did not finish, takes the cluster the other models' records of the case declare).
    """
    declared: dict[CaseKey, Hashable] = {}
    for record, _, key in rows:
        cluster = declared_cluster(record)
        if cluster is not None:
            declared.setdefault(key, cluster)
    return [_label(declared.get(key), key, clustered) for _, _, key in rows]


def _label(cluster: Hashable | None, key: CaseKey, clustered: bool) -> Hashable:
    if cluster is not None:
        return ("cluster", cluster)
    return key[0] if clustered else key


def figure_bounds(key: Hashable) -> tuple[float, float]:
    """The ends of a figure's scale: -1 to 1 for a paired difference (key ``("pair", a, b)``), else 0 to 1.

    A score or a rate runs from 0 to 1; ``intervals.cluster_t`` widens the ends to the values seen.
    """
    is_pair = isinstance(key, tuple) and bool(key) and key[0] == "pair"
    return (-1.0, 1.0) if is_pair else (0.0, 1.0)
