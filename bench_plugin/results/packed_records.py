"""The records the controller keeps for the report files until the end of the run, a few hundred bytes each.

The reports read each case's ``CaseRecord.for_reports`` at the end of the run, after pytest-html has written
report.html, the run's largest moment. Kept as objects until then, they were about 2.7 KB a case; packed with
``marshal`` (floats exact, dicts in their order, as the case made them) they are about 500 bytes, and in a
large run, compressed against one of them (``PackedRecords``: a run's records differ in a few values), about
80. They are unpacked once, through one ``ValuePool``, so the records share their equal strings and small
containers.

Why not read them back from results.jsonl: its lines have their keys sorted, and the order of a case's
``variables`` (breakdowns) or a judge's ``categories`` (panels) is the order the reports show.
"""

from __future__ import annotations

import dataclasses
import json
import marshal
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from bench_plugin.results.record import LEFT_OUT, REPORTED_FIELDS, CaseRecord, reported_fields


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


class PackedRecords:
    """The packed records of a run by node id; in a large run, compressed against one of them (zlib, preset dictionary).

    Compressed alone, a record of a few hundred bytes hardly shrinks; next to another record of the run, whose
    keys, model, suite and much of whose text it repeats, it is a sixth of its size. That costs about 35 us of
    the main thread's CPU a case in a running session: only worth it from ``squeeze_from`` records on (the
    records kept before stay as they are, half a MB a thousand).
    """

    __slots__ = ("_dictionary", "_packed", "_squeeze_from")

    _LEVEL = 1  # at level 6 a record is a few bytes smaller and takes a third longer
    _WINDOW = -15  # raw deflate: no header and checksum to store per record
    _SQUEEZED = b"\0"  # starts a compressed record: marshal's data never does

    def __init__(self, squeeze_from: int = 0) -> None:
        self._packed: dict[str, bytes] = {}
        self._squeeze_from = squeeze_from
        self._dictionary = b""  # the first record compressed, packed

    def add(self, nodeid: str, packed: bytes) -> None:
        """Keep ``pack_for_reports``'s bytes as the case's record; a newer record replaces an older one."""
        if len(self._packed) >= self._squeeze_from:
            if not self._dictionary:
                self._dictionary = packed
            squeeze = zlib.compressobj(self._LEVEL, zlib.DEFLATED, self._WINDOW, zdict=self._dictionary)
            packed = self._SQUEEZED + squeeze.compress(packed) + squeeze.flush()
        self._packed[nodeid] = packed

    def unpack(self, nodeids: Iterable[str], pool: ValuePool | None = None) -> list[CaseRecord]:
        """The records of ``nodeids`` (each one kept), in that order; through ``pool`` (see ``unpack_for_reports``)."""
        records = []
        for nodeid in nodeids:
            packed = self._packed[nodeid]
            if packed.startswith(self._SQUEEZED):
                packed = zlib.decompressobj(self._WINDOW, zdict=self._dictionary).decompress(packed[1:])
            records.append(unpack_for_reports(packed, pool))
        return records

    def clear(self) -> None:
        """Forget every record (and the dictionary: the next record compressed starts a new one)."""
        self._packed.clear()
        self._dictionary = b""


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
