"""YAML -> plain data plus a side table of where every key and item sits in the file.

The data the user wrote is never annotated; line numbers live in ``LineMap``, keyed by the path of
keys and indexes, so that schema errors and bad cases can point at the exact line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench_plugin.errors import SuiteError

PathPart = str | int
KeyPath = tuple[PathPart, ...]


@dataclass
class LineMap:
    """0-based line of every key path, e.g. ``("tasks", 3, "scorers", 1, "weight") -> 41``."""

    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, path: Sequence[PathPart]) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        parts = tuple(path)
        while parts:
            if parts in self.lines:
                return self.lines[parts]
            parts = parts[:-1]
        return self.lines.get((), None)


@dataclass
class LoadedSuite:
    """A parsed suite file: its data, the line map and the source text (for quoting)."""

    path: Path
    display_path: str
    data: Any
    lines: LineMap
    source: str

    def excerpt(self, line: int | None, context: int = 1) -> str | None:
        """One to three numbered source lines around ``line`` (0-based), for error messages."""
        if line is None:
            return None
        text_lines = self.source.splitlines()
        start, end = max(0, line - context), min(len(text_lines), line + context + 1)
        width = len(str(end))
        return "\n".join(
            f"  {'>' if n == line else ' '} {n + 1:>{width}} | {text_lines[n]}" for n in range(start, end)
        )


def format_key_path(path: Sequence[PathPart]) -> str:
    """``("tasks", 3, "scorers")`` -> ``tasks[3].scorers``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def load_suite_file(path: Path, display_path: str | None = None) -> LoadedSuite:
    """Read and parse a suite file.

    Raises:
        SuiteError: when the file cannot be read, is not valid YAML, has a duplicate key, or its
            top level is not a mapping.
    """
    shown = display_path or str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read the file: {exc}", path=shown) from exc
    return load_suite_text(source, path=path, display_path=shown)


def load_suite_text(source: str, *, path: Path, display_path: str) -> LoadedSuite:
    """Parse suite text (see ``load_suite_file``)."""
    try:
        node = yaml.compose(source, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, display_path) from exc
    if node is None:
        raise SuiteError("the file is empty; a suite needs at least 'models' and 'tasks'", path=display_path)
    lines = LineMap()
    data = _construct(node, (), lines, display_path)
    if not isinstance(data, dict):
        raise SuiteError(
            f"expected a mapping at the top level (keys such as models:, tasks:), got a {_kind(data)}",
            path=display_path,
            line=node.start_mark.line,
        )
    loaded = LoadedSuite(path=path, display_path=display_path, data=data, lines=lines, source=source)
    return loaded


def _construct(node: yaml.Node, path: KeyPath, lines: LineMap, shown: str) -> Any:
    """Build plain data from a node tree, recording lines; anchors and merge keys are honoured."""
    lines.lines.setdefault(path, node.start_mark.line)
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(node, path, lines, shown)
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, (*path, i), lines, shown) for i, item in enumerate(node.value)]
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, shown) from exc
    finally:
        loader.dispose()


def _construct_mapping(node: yaml.MappingNode, path: KeyPath, lines: LineMap, shown: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for key_node, value_node in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            merged = _construct(value_node, path, lines, shown)
            for part in merged if isinstance(merged, list) else [merged]:
                if isinstance(part, dict):
                    for k, v in part.items():
                        out.setdefault(k, v)
            continue
        key = _construct(key_node, (*path, "<key>"), lines, shown)
        if not isinstance(key, (str, int, float, bool)) or isinstance(key, bool):
            raise SuiteError(
                f"keys must be plain strings, got {_kind(key)}",
                path=shown,
                line=key_node.start_mark.line,
                key=format_key_path(path) or None,
            )
        key = str(key)
        line = key_node.start_mark.line
        if key in seen:
            raise SuiteError(
                f"duplicate key '{key}' (first on line {seen[key] + 1}); YAML would silently keep the last one",
                path=shown,
                line=line,
                key=format_key_path((*path, key)),
            )
        seen[key] = line
        child = (*path, key)
        lines.lines[child] = line
        out[key] = _construct(value_node, child, lines, shown)
        lines.lines[child] = line  # the key's line, not the value's, is what a person looks for
    lines.lines.pop((*path, "<key>"), None)
    return out


def _yaml_error(exc: yaml.YAMLError, shown: str) -> SuiteError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    return SuiteError(message, path=shown, line=mark.line if mark is not None else None)


def _kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", type(None): "null"}.get(type(value), type(value).__name__)
