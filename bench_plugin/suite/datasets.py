"""Rows of a dataset file (JSONL, CSV or a JSON list) that generate one task variant each."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import freeze_fields
from bench_plugin.core.utf8 import HINT as UTF8_HINT
from bench_plugin.core.utf8 import NotUtf8, read_utf8
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.templates import TemplateRenderer

#: The variable that holds a row's place in its file (0-based).
ROW_INDEX = "row_index"


@dataclass(frozen=True)
class JoinSpec:
    """One ``join:`` entry: the ``fields`` (``name: dotted path``) of ``file``'s records, matched on ``key``."""

    file: str
    key: str
    fields: Mapping[str, str]
    format: str | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "fields")

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> JoinSpec:
        """The spec of a ``join:`` entry as written (schema-valid)."""
        return cls(file=entry["file"], key=entry["key"], fields=entry["fields"], format=entry.get("format"))


@dataclass(frozen=True)
class DatasetSpec:
    """A task's ``dataset:``: the file, joins, renamed ``fields``, a ``filter`` expression and a ``limit``.

    ``scorers`` names the field (a dotted path) that holds each row's own scorers (``suite/row_scorers.py``).
    ``key`` and ``line`` locate ``dataset:`` in the YAML, ``filter_line`` its ``filter:``.
    """

    file: str
    format: str | None = None
    join: tuple[JoinSpec, ...] = ()
    fields: Mapping[str, str] | None = None
    filter: str | None = None
    limit: int | None = None
    scorers: str | None = None
    key: str = ""
    line: int | None = None
    filter_line: int | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "fields")

    @classmethod
    def from_entry(
        cls, entry: Mapping[str, Any], key: str = "", line: int | None = None, filter_line: int | None = None
    ) -> DatasetSpec:
        """The spec of a ``dataset:`` as written (schema-valid), located at ``key`` and ``line``."""
        return cls(
            file=entry["file"],
            format=entry.get("format"),
            join=tuple(JoinSpec.from_entry(join) for join in entry.get("join", [])),
            fields=entry.get("fields"),
            filter=entry.get("filter"),
            limit=entry.get("limit"),
            scorers=entry.get("scorers"),
            key=key,
            line=line,
            filter_line=filter_line,
        )


def load_rows(file: Path, fmt: str | None = None) -> list[dict[str, Any]]:
    """Read every row of a dataset file, in file order.

    Raises:
        CaseError: when the file is missing or a row is not an object; the message names the row.
    """
    fmt = fmt or _FORMATS.get(file.suffix.lower())
    if fmt is None:
        raise CaseError(f"cannot tell the format of '{file.name}'", hint="set dataset.format: jsonl, csv or json")
    text = _read_text(file)
    if fmt == "csv":
        return [dict(row) for row in csv.DictReader(text.splitlines())]
    rows = _json_rows(text, file.name) if fmt == "json" else _jsonl_rows(text, file.name)
    return _objects(rows, file.name)


def _objects(rows: list[Any], name: str) -> list[dict[str, Any]]:
    """``rows``, once each is known to be an object."""
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise CaseError(f"{name}: row {n} is {type(row).__name__}, expected an object")
    return rows


_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".json": "json"}  # by the file's suffix


def _read_text(file: Path) -> str:
    try:
        return read_utf8(file)
    except OSError as exc:
        raise CaseError(f"cannot read dataset file {file}: {exc.strerror or exc}") from exc
    except NotUtf8 as exc:
        raise CaseError(f"dataset file {exc}", hint=UTF8_HINT) from exc


def _json_rows(text: str, name: str) -> list[Any]:
    rows = _parse_json(text, name)
    if not isinstance(rows, list):
        raise CaseError(f"{name}: expected a JSON list of objects, got {type(rows).__name__}")
    return rows


def _jsonl_rows(text: str, name: str) -> list[Any]:
    return [_parse_json(line, f"{name}:{n}") for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def load_dataset(
    data_dir: Path, dataset: DatasetSpec | Mapping[str, Any], folders: SuiteFolders | None = None
) -> list[dict[str, Any]]:
    """The rows of a task's ``dataset:`` (a spec, or the mapping as written), joins added.

    Files are relative to ``data_dir`` and must resolve (symbolic links followed) inside ``folders``:
    the suite's folder and those the user allows; by default ``data_dir`` itself.

    Raises:
        CaseError: when a file is outside the folders or cannot be read, or a ``join`` field is missing
            from its record.
    """
    spec = dataset if isinstance(dataset, DatasetSpec) else DatasetSpec.from_entry(dataset)
    folders = folders or SuiteFolders.of(data_dir)
    rows = load_rows(folders.confine(spec.file, base=data_dir, what="file"), spec.format)
    for join in spec.join:
        other = folders.confine(join.file, base=data_dir, what="join file")
        rows = join_rows(rows, load_rows(other, join.format), join)
    return rows


def select_rows(
    dataset: DatasetSpec,
    data_dir: Path,
    renderer: TemplateRenderer,
    variables: Mapping[str, Any],
    folders: SuiteFolders | None = None,
) -> list[dict[str, Any]]:
    """The variables of each row the task runs, in file order.

    Rows pass ``filter`` (which also sees the suite's ``variables``), up to ``limit``. Files must lie
    inside ``folders`` (see ``load_dataset``). ``row_index`` is the row's place in the file (0-based,
    counted before the filter and the limit, so that it names the same row whatever is left out);
    a column of that name wins.

    Raises:
        CaseError: a file outside the folders or that cannot be read, a missing field, or a filter that
            fails (at its line).
    """
    selected: list[dict[str, Any]] = []
    for row_index, row in enumerate(load_dataset(data_dir, dataset, folders)):
        row_vars = {ROW_INDEX: row_index, **row_variables(row, dataset.fields)}
        if dataset.filter is not None:
            scope = {**variables, **row_vars}
            key = f"{dataset.key}.filter"
            if not renderer.expression(dataset.filter, scope, key=key, line=dataset.filter_line):
                continue
        selected.append(row_vars)
        if len(selected) == dataset.limit:
            break
    return selected


def join_rows(
    rows: list[dict[str, Any]], others: list[dict[str, Any]], join: JoinSpec | Mapping[str, Any]
) -> list[dict[str, Any]]:
    """A left join on the join's ``key`` (a field of both, compared as text).

    Each row gets the ``fields`` (``name: dotted path``) of the first record with its key value, or
    None for each when no record has it (MT-Bench: GPT-4's reference answers exist for 30 of 80
    questions).
    """
    spec = join if isinstance(join, JoinSpec) else JoinSpec.from_entry(join)
    on, fields, name = spec.key, spec.fields, Path(spec.file).name
    index: dict[str, dict[str, Any]] = {}
    for number, other in enumerate(others, 1):
        index.setdefault(str(_lookup_in(other, on, f"{name}, row {number}")), other)
    joined = []
    for number, row in enumerate(rows, 1):
        key = str(_lookup_in(row, on, f"dataset row {number}"))
        match = index.get(key)
        extra = {
            field: None if match is None else _lookup_in(match, path, f"{name}, the record for {on} {key}")
            for field, path in fields.items()
        }
        joined.append({**row, **extra})
    return joined


def _lookup_in(data: Any, dotted: str, where: str) -> Any:
    try:
        return lookup(data, dotted)
    except CaseError as exc:
        raise CaseError(f"{where}: {exc.message}") from exc


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from exc


def row_variables(row: Mapping[str, Any], fields: Mapping[str, str] | None) -> dict[str, Any]:
    """Variables for one row.

    Every column by its own name, ``row`` for the whole record, and ``fields`` renames
    (``question: turns.0`` takes the first turn). promptfoo's ``__expected`` columns hold the row's
    scorers (``suite/row_scorers.py``), not variables: they are only in ``row``.
    """
    variables = {k: v for k, v in row.items() if k.isidentifier() and not k.startswith("__expected")}
    variables["row"] = dict(row)
    for name, dotted in (fields or {}).items():
        variables[name] = lookup(row, dotted)
    return variables


def lookup(data: Any, dotted: str) -> Any:
    """Follow ``a.b.0.c`` through mappings and lists; raise CaseError naming the missing part."""
    current = data
    for part in dotted.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            raise CaseError(f"field '{dotted}' not found in a dataset row (no '{part}')")
    return current
