"""A task's ``output_schema:`` -> the ResponseSchema its calls ask for, checked as a JSON Schema before any call.

Three forms: an inline JSON Schema (a mapping), the name of a file in the suite's folder holding one (JSON or
YAML), or ``{schema: ... | file: ..., name: ..., strict: ...}`` to name it or ask the endpoint to be strict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bench_plugin.core.chat import ResponseSchema
from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path, load_suite_file
from bench_plugin.suite.paths import SuiteFolders

KEY = "output_schema"
_LONG_FORM = frozenset({"schema", "file", "name", "strict"})
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_NAME = "answer"
MAX_FILE_BYTES = 1024 * 1024
_NOT_FOR = ("turns", "phases", "conversation")


def build_output_schema(
    loaded: LoadedSuite, folders: SuiteFolders, entry: Mapping[str, Any], base: KeyPath
) -> ResponseSchema | CaseError | None:
    """The task's ``output_schema:`` (None without one), or the problem its cases fail with, at its line."""
    if KEY not in entry:
        return None
    try:
        return _Reader(loaded, folders, (*base, KEY)).read(entry)
    except CaseError as exc:
        return exc


def is_long_form(value: Any) -> bool:
    """``{schema: ...}`` or ``{file: ...}`` with only the long form's keys; any other mapping is a JSON Schema."""
    keys = set(value) if isinstance(value, Mapping) else set()
    return bool(keys & {"schema", "file"}) and keys <= _LONG_FORM


class _Reader:
    def __init__(self, loaded: LoadedSuite, folders: SuiteFolders, path: KeyPath) -> None:
        self.loaded, self.folders, self.path = loaded, folders, path

    def error(self, message: str, where: KeyPath = (), hint: str | None = None) -> CaseError:
        at = (*self.path, *where)
        return CaseError(message, path=self.loaded.display_path, line=self.loaded.lines.line_of(at),
                         key=format_key_path(at), hint=hint)

    def read(self, entry: Mapping[str, Any]) -> ResponseSchema:
        for key in _NOT_FOR:
            if key in entry:
                raise self.error(f"output_schema: is for a task answered in one reply, not one with {key}:")
        if "tools" in entry:
            raise self.error("output_schema: and tools: ask for two kinds of answer (JSON, or tool calls)",
                             hint="keep output_schema: for a JSON answer, or the tools for calls scored by tool_calls")
        value = entry[KEY]
        if not is_long_form(value):
            return self.response(value, (), DEFAULT_NAME, strict=False)
        if "schema" in value and "file" in value:
            raise self.error("give schema: or file:, not both")
        name = str(value.get("name", DEFAULT_NAME))
        if not _VALID_NAME.match(name):
            raise self.error(f"name {name!r} is not a schema name", ("name",),
                             "1 to 64 letters, digits, _ or -: the wire formats send it as the schema's name")
        if not isinstance(value.get("strict", False), bool):
            raise self.error("strict: expected true or false", ("strict",))
        where = "schema" if "schema" in value else "file"
        return self.response(value[where], (where,), name, strict=bool(value.get("strict", False)))

    def response(self, value: Any, where: KeyPath, name: str, *, strict: bool) -> ResponseSchema:
        """The schema written at ``where`` (inline, or a file's name), checked."""
        inline = not isinstance(value, str)
        schema = value if inline else self.from_file(value, where)
        if not isinstance(schema, Mapping):
            raise self.error(f"expected a JSON Schema (a mapping) or a file name, got {type(schema).__name__}", where)
        self.check(schema, where if inline else None)
        return ResponseSchema(name=name, schema=schema, strict=strict)

    def from_file(self, name: str, where: KeyPath) -> Any:
        at = (*self.path, *where)
        file = self.folders.confine(name, what="schema file", path=self.loaded.display_path,
                                    key=format_key_path(at), line=self.loaded.lines.line_of(at))
        if not file.is_file():
            raise self.error(f"schema file {name!r} does not exist under the suite's folder", where)
        if file.stat().st_size > MAX_FILE_BYTES:
            raise self.error(f"schema file {name!r} is larger than {MAX_FILE_BYTES // 1024} KB", where)
        try:  # the suite's own reader: aliases, depth and sizes bounded, as for the suite file
            return load_suite_file(file, display_path=name).data
        except SuiteError as exc:
            raise self.error(f"schema file {name!r} cannot be read as JSON or YAML: {exc}", where) from None

    def check(self, schema: Mapping[str, Any], where: KeyPath | None) -> None:
        """The schema against the JSON Schema meta-schema (2020-12); an inline one's error at its own line."""
        from jsonschema import Draft202012Validator  # start-up: only for a suite that has this key
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(dict(schema))
        except SchemaError as exc:
            inside = ".".join(str(part) for part in exc.path)
            at = f" at {inside}" if inside else ""
            deeper: KeyPath = (*where, *exc.path) if where is not None else ()
            raise self.error(f"not a valid JSON Schema (2020-12){at}: {exc.message}", deeper,
                             "see https://json-schema.org/understanding-json-schema/") from None
