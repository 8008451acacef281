"""The records the controller keeps for the report files until the end of the run, a few hundred bytes each.

The reports read each case's ``CaseRecord.for_reports`` at the end of the run, after pytest-html has written
report.html, the run's largest moment. Kept as objects until then, they were about 2.7 KB a case; packed with
``marshal`` (floats exact, dicts in their order, as the case made them) they are about 500 bytes. They are
unpacked once, through one ``ValuePool``, so the records share their equal strings and small containers.

Why not read them back from results.jsonl: its lines have their keys sorted, and the order of a case's
``variables`` (breakdowns) or a judge's ``categories`` (panels) is the order the reports show.
"""

from __future__ import annotations

import dataclasses
import json
import marshal
from collections.abc import Mapping
from typing import Any

from bench_plugin.record import LEFT_OUT, REPORTED_FIELDS, CaseRecord, reported_fields


def pack_for_reports(data: Mapping[str, Any]) -> bytes:
    """``CaseRecord.for_reports(data)`` as bytes, for ``unpack_for_reports``.

    Raises:
        TypeError: a field every record has is missing (as ``CaseRecord`` would say).
    """
    kept = reported_fields(data)
    missing = [name for name in _REQUIRED if name not in kept]
    if missing:
        raise TypeError(f"missing field{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}")
    values = tuple(kept[name] if name in kept else _DEFAULTS[name]() for name in _ORDER)
    try:
        return marshal.dumps(values)
    except ValueError:  # a value marshal cannot write (records hold JSON builtins): as results.jsonl writes it
        return marshal.dumps(json.loads(json.dumps(values, default=str)))


def unpack_for_reports(packed: bytes, pool: ValuePool | None = None) -> CaseRecord:
    """The record ``pack_for_reports`` packed; through ``pool``, it shares equal values with the others unpacked."""
    values = marshal.loads(packed)
    if pool is not None:
        values = [pool.share(value) for value in values]
    return CaseRecord(**dict(zip(_ORDER, values, strict=True)), **LEFT_OUT)


class ValuePool:
    """One copy of each equal string, float and small container among the records unpacked together.

    Unpacked one by one, every record has its own copy of each key, of its model's name, its status, a cost
    note, an empty usage: most of what a report record holds. Through one pool they are one object each.
    Containers of a few plain values (``{"cache": "miss"}``, ``[]``, a judge usage of Nones) are shared too,
    so a record's parts must never be changed in place (no reader does: the reports build new values). Drop
    the pool once the records are unpacked: it holds every value it saw.
    """

    __slots__ = ("_containers", "_floats", "_shared", "_strings")

    _SMALL = 6  # items of a container worth looking up: larger ones are seldom equal

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._floats: dict[str, float] = {}  # by exact text: 0.0 and -0.0 are equal, and must stay apart
        self._containers: dict[tuple[Any, ...], Any] = {}
        self._shared: set[int] = set()  # ids of the containers in ``_containers`` (kept alive there)

    def share(self, value: Any) -> Any:
        """``value`` with its strings, floats and small containers replaced by the pool's equal ones."""
        kind = type(value)
        if kind is str:
            return self._strings.setdefault(value, value)
        if kind is float:
            return self._floats.setdefault(value.hex(), value)
        if kind is list:
            return self._one(list, [self.share(item) for item in value])
        if kind is dict:
            strings, share = self._strings, self.share
            items = [(strings.setdefault(key, key) if type(key) is str else key, share(item))
                     for key, item in value.items()]
            return self._one(dict, items)
        return value

    def _one(self, kind: type, items: list[Any]) -> Any:
        """The pool's container equal to ``kind(items)``, or a new one when it has more than a few items."""
        if len(items) > self._SMALL:
            return kind(items)
        parts: list[Any] = [kind]
        for item in items:
            name, value = item if kind is dict else (None, item)
            value_kind = type(value)
            if value_kind in _SCALARS:
                # 0.0 and -0.0 are equal, and 1 and True: the type and a float's exact text keep them apart
                parts.append((name, value_kind, value.hex() if value_kind is float else value))
            elif id(value) in self._shared:
                parts.append((name, id(value)))
            else:
                return kind(items)  # holds a container that is not shared: so is this one
        key = tuple(parts)
        found = self._containers.get(key)
        if found is None:
            found = self._containers[key] = kind(items)
            self._shared.add(id(found))
        return found


_SCALARS = frozenset({str, int, float, bool, type(None)})
_FIELDS = [f for f in dataclasses.fields(CaseRecord) if f.name in REPORTED_FIELDS]
_ORDER = tuple(f.name for f in _FIELDS)  # the packed values' order
_REQUIRED = frozenset(f.name for f in _FIELDS
                      if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
# a field the record lacks (a line of an older writer) packs its default, as ``CaseRecord`` would take it
_DEFAULTS: dict[str, Any] = {
    f.name: f.default_factory if f.default_factory is not dataclasses.MISSING else (lambda value=f.default: value)
    for f in _FIELDS if f.name not in _REQUIRED
}
