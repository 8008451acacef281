"""Suite text kept for later, with its place in the YAML: templates, and raw pieces built per case."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.frozen import FrozenDict, freeze_fields
from bench_plugin.suite.loader import KeyPath, LoadedSuite, PathPart, format_key_path
from bench_plugin.suite.templates import TemplateRenderer


@dataclass(frozen=True)
class TemplateSpec:
    """A template and where it is written: rendered per case, or when a conversation reaches it.

    ``from_file``: ``source`` names a template file; ``literal``: ``source`` is text taken from data
    (e.g. a dataset's list of turns) and is sent as it is. ``key`` and ``line`` locate it in the YAML.
    """

    source: str
    from_file: bool = False
    literal: bool = False
    key: str = ""
    line: int | None = None

    def render(self, renderer: TemplateRenderer, scope: Mapping[str, Any]) -> str:
        """The text for ``scope``.

        Raises:
            CaseError: at this template's key and line, for a missing variable, a broken template
                or a template file that does not exist.
        """
        if self.literal:
            return self.source
        if self.from_file:
            return renderer.render_file(self.source, scope, key=self.key, line=self.line)
        return renderer.render(self.source, scope, key=self.key, line=self.line)


@dataclass(frozen=True)
class Located:
    """A piece of the YAML kept as written (deep-frozen), for a builder that needs a case's variables.

    ``path`` is where the piece sits (``("tasks", 2, "conversation")``), ``file`` the suite as shown in
    messages, and ``lines`` the 0-based line of every key path at or below ``path``.
    """

    data: Any
    path: KeyPath
    file: str
    lines: FrozenDict[KeyPath, int]

    def __post_init__(self) -> None:
        freeze_fields(self, "data", "lines")

    @classmethod
    def take(cls, loaded: LoadedSuite, path: KeyPath, data: Any) -> Located:
        """``data`` (the value at ``path`` in ``loaded``) with the lines of its keys."""
        size = len(path)
        lines = {key: line for key, line in loaded.lines.lines.items() if key[:size] == path}
        return cls(data, path, loaded.display_path, FrozenDict(lines))

    def child(self, part: PathPart, default: Any = None) -> Located:
        """The piece at ``part`` below this one (``default`` when it is not written)."""
        data = self.data[part] if _has(self.data, part) else default
        return Located(data, (*self.path, part), self.file, self.lines)

    def line_of(self, *parts: PathPart) -> int | None:
        """The line of ``path + parts``, or of its nearest ancestor that has one."""
        full = (*self.path, *parts)
        while len(full) >= len(self.path):
            if full in self.lines:
                return self.lines[full]
            if not full:
                break
            full = full[:-1]
        return None

    def where(self, *parts: PathPart) -> tuple[str, int | None]:
        """The key path as messages show it (``tasks[2].conversation.order[1]``) and its line."""
        return format_key_path((*self.path, *parts)), self.line_of(*parts)


def _has(data: Any, part: PathPart) -> bool:
    if isinstance(data, Mapping):
        return part in data
    return isinstance(data, list) and isinstance(part, int) and -len(data) <= part < len(data)
