"""Checks of JSON in the text (the reply, or its first fenced block): json_valid, json_schema, json_path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from typing_extensions import Self, override

from bench_plugin.core.json_text import (
    PathStep,
    fenced_blocks,
    format_json_path,
    json_equal,
    load_json,
    parse_json_path,
    walk_json_path,
)
from bench_plugin.scoring.checks.scorer import Check, Options, Outcome
from bench_plugin.scoring.checks.text import quote
from bench_plugin.suite.spec import ScorerSpec

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_EXTRACT = MappingProxyType({"extract": True})


def _source_of(text: str, extract: bool) -> str:
    # extract is on by default (unlike peers that parse the whole answer): the evidence says when it mattered
    return " (from a fenced block, extract: true)" if extract and fenced_blocks(text) else ""


@dataclass(frozen=True)
class JsonValid(Check):
    """``json_valid``: the text (or its first fenced block, with ``extract``) is JSON."""

    extract: bool

    DEFAULTS = _EXTRACT

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        return cls(spec, options["target"], options["extract"])

    @override
    def run(self, text: str) -> Outcome:
        try:
            data = load_json(text, extract=self.extract)
        except ValueError as exc:
            return False, f"expected valid JSON — {exc}{_source_of(text, self.extract)}"
        return True, f"expected valid JSON — got a JSON {type(data).__name__}{_source_of(text, self.extract)}"


@dataclass(frozen=True)
class JsonSchema(Check):
    """``json_schema``: the JSON matches a JSON Schema (2020-12, formats checked)."""

    validator: Draft202012Validator
    extract: bool

    REQUIRED = ("schema",)
    DEFAULTS = _EXTRACT

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        schema = options["schema"]
        if not isinstance(schema, Mapping):
            raise TypeError("schema must be a JSON Schema object (a mapping)")
        from jsonschema import Draft202012Validator  # start-up: only where a suite uses json_schema
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"schema is not a valid JSON Schema (2020-12): {exc.message}") from exc
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        return cls(spec, options["target"], validator, options["extract"])

    @override
    def run(self, text: str) -> Outcome:
        try:
            data = load_json(text, extract=self.extract)
        except ValueError as exc:
            return False, f"expected JSON matching the schema — {exc}"
        errors = list(self.validator.iter_errors(data))
        if not errors:
            return True, f"expected JSON matching the schema — it matches{_source_of(text, self.extract)}"
        from jsonschema.exceptions import best_match  # loaded by build already

        worst = best_match(errors)
        more = f" ({len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        where = format_json_path(list(worst.absolute_path))
        return False, f"expected JSON matching the schema — {where}: {worst.message}{more}"


@dataclass(frozen=True)
class JsonPath(Check):
    """``json_path``: the JSON has a value at ``path`` (equal to ``equals``, when given)."""

    steps: tuple[PathStep, ...]
    extract: bool
    has_equals: bool
    equals: object = None

    REQUIRED = ("path",)
    DEFAULTS = _EXTRACT
    OPTIONAL = ("equals",)
    TEMPLATED = ("path", "equals")

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        if not isinstance(options["path"], str):
            raise TypeError("path must be a string such as $.a.b[0].c")
        steps = parse_json_path(options["path"])
        return cls(spec, options["target"], steps, options["extract"], "equals" in options, options.get("equals"))

    @override
    def run(self, text: str) -> Outcome:
        where = format_json_path(self.steps)
        try:
            found = walk_json_path(load_json(text, extract=self.extract), self.steps)
        except (ValueError, LookupError) as exc:
            return False, f"expected {where} in the JSON — {exc}"
        shown = quote(json.dumps(found, ensure_ascii=False))
        if not self.has_equals:
            return True, f"expected {where} in the JSON — found {shown}"
        wanted = json.dumps(self.equals, ensure_ascii=False)
        same = json_equal(found, self.equals)
        return same, f"expected {where} = {quote(wanted)} — {'equal' if same else f'got {shown}'}"
