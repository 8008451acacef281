"""YAML -> plain data plus a side table of where every key and item sits in the file.

The data the user wrote is never annotated; line numbers live in ``LineMap``, keyed by the path of
keys and indexes, so that schema errors and bad cases can point at the exact line.

A suite may come from someone we do not know, so reading it is bounded: an alias repeats a value
without copying it in the file, and a few lines of aliases can stand for billions of nodes (the
"billion laughs"), or for themselves (``a: &a [*a]``). The composer counts, while it reads, what the
aliases will expand to and how deep the data nests, and stops at the limits below with the line of
the alias that crossed them.

Where PyYAML was built with libyaml (``yaml.__with_libyaml__``), libyaml's C scanner and parser feed
the same composer and constructor: a suite is read three to four times faster (PyYAML's Python scanner
and parser were most of the time). PyYAML's Python parser stays the reference: libyaml words its errors
differently (the messages of ``yaml_errors.py`` read PyYAML's), and it accepts a few things PyYAML
refuses: a tab inside a plain value or between tokens, a byte order mark after the start, a comment
right after a block scalar's ``|`` or ``>``, a '?' inside a plain value in { } or [ ], a tag followed
by a flow indicator (the C path leaves any tag to the Python parser). A file that fails in any way on
the C path, or holds any of those, is read by the Python parser, which then says what is wrong exactly
as it always did (``tests/test_yaml_libyaml.py`` compares the two).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from bench_plugin.core.errors import SuiteError, all_of
from bench_plugin.core.utf8 import HINT as UTF8_HINT
from bench_plugin.core.utf8 import NotUtf8, read_utf8
from bench_plugin.suite.yaml_errors import yaml_syntax_error

PathPart = str | int
KeyPath = tuple[PathPart, ...]

#: Nodes that aliases may add to a suite, all expansions together. A suite that shares a model or
#: scorer block a few dozen times adds hundreds; nine nested aliases of nine items add over 400 million.
MAX_ALIAS_NODES = 100_000
#: Characters of scalar text that aliases may add (a long shared prompt times the places that use it).
MAX_ALIAS_CHARS = 10_000_000
#: Nesting depth of the data, aliases included. Real suites nest about ten levels; the bound keeps
#: the composer, the constructor and the schema check far below Python's recursion limit.
MAX_DEPTH = 50

_COMMENT_AFTER_BLOCK = re.compile(r"[|>][-+0-9]*#")  # ``|#`` or ``>-#``: libyaml reads a comment there

_STR_TAG = "tag:yaml.org,2002:str"
_ALIAS_HINT = "aliases may share a value a few times, not multiply it; put bulk data in a dataset file"


@dataclass
class LineMap:
    """0-based line of every key path, e.g. ``("tasks", 3, "scorers", 1, "weight") -> 41``.

    ``plain`` keeps the source text of every unquoted value YAML did not read as text (``Yes`` read as
    true, ``1.10`` as 1.1, ``~`` as null), so that a message can say what was written, not what YAML made of it.
    """

    lines: dict[KeyPath, int] = field(default_factory=dict)
    plain: dict[KeyPath, str] = field(default_factory=dict)

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
        source = read_utf8(path)
    except OSError as exc:
        raise SuiteError(f"cannot read the file: {exc}", path=shown) from exc
    except NotUtf8 as exc:
        raise SuiteError(f"the file is not UTF-8: byte 0x{exc.byte:02x} cannot be read", path=shown,
                         line=exc.line, column=exc.column, hint=UTF8_HINT) from exc
    return load_suite_text(source, path=path, display_path=shown)


def load_suite_text(source: str, *, path: Path, display_path: str) -> LoadedSuite:
    """Parse suite text (see ``load_suite_file``)."""
    if _LibyamlLoader is not None and not _libyaml_differs(source):
        try:
            return _load(_LibyamlLoader, source, path, display_path)
        except Exception:  # any problem at all: PyYAML's Python parser reads the file again and says what it is
            pass
    return _load(_BoundedLoader, source, path, display_path)


def _libyaml_differs(source: str) -> bool:
    """Whether ``source`` holds text libyaml reads and PyYAML refuses, outside what the C path's composer checks."""
    return "\t" in source or source.find("\ufeff", 1) >= 0 or _COMMENT_AFTER_BLOCK.search(source) is not None


def _load(kind: Callable[[str, str], _BoundedComposer], source: str, path: Path, display_path: str) -> LoadedSuite:
    try:
        loader = kind(source, display_path)
    except yaml.YAMLError as exc:  # the reader refuses a control character before anything is parsed
        raise yaml_syntax_error(exc, source, display_path, None) from exc
    node, data, lines = _read_tree(loader, source, display_path)
    if not isinstance(data, dict):
        raise SuiteError(
            f"expected a mapping at the top level (keys such as models:, tasks:), got a {_kind(data)}",
            path=display_path,
            line=node.start_mark.line,
        )
    loaded = LoadedSuite(path=path, display_path=display_path, data=data, lines=lines, source=source)
    return loaded


def _read_tree(loader: _BoundedComposer, source: str, display_path: str) -> tuple[yaml.Node, Any, LineMap]:
    """The file's one document: its root node, the plain data built from it, and where each key is."""
    try:
        node = loader.get_single_node()
        if node is None:
            raise SuiteError("the file is empty; a suite needs at least 'models' and 'tasks'", path=display_path)
        lines = LineMap()
        data = _construct(node, (), lines, display_path, loader)
        duplicates = all_of(loader.duplicates)
        if duplicates is not None:
            raise duplicates
        return node, data, lines
    except yaml.YAMLError as exc:
        key = format_key_path([part for part in loader.failed_in or () if part is not None])
        raise yaml_syntax_error(exc, source, display_path, key or None) from exc
    finally:
        loader.dispose()


class _BoundedComposer(Composer, SafeConstructor):
    """PyYAML's composer, measuring what aliases expand to as it reads, and its safe constructor.

    PyYAML composes an alias as a second reference to the anchored node, so the node graph stays
    as small as the file; it is building plain data from that graph that multiplies. Each finished
    node records its expanded size, text and height, so an alias costs one look-up, and a limit is
    crossed (with the line of the alias) before anything is expanded.
    """

    if TYPE_CHECKING:  # given by the parser a loader joins this with: PyYAML's Python one or libyaml's

        def check_event(self, *choices: Any) -> bool: ...

        def peek_event(self) -> Any: ...

        def dispose(self) -> None: ...

    def _start_bounds(self, shown: str) -> None:
        self.shown = shown
        self.trail: list[PathPart | None] = []  # the key path being composed, for messages
        self.measures: dict[int, tuple[int, int, int]] = {}  # id(node) -> nodes, characters, height
        self.alias_nodes = 0
        self.alias_chars = 0
        self.failed_in: tuple[PathPart | None, ...] | None = None  # the trail when a syntax error was found
        self.duplicates: list[SuiteError] = []  # every duplicate key, said together once the file is read

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """Compose one node (PyYAML calls this for every node and alias), within the limits."""
        self.trail.append(_path_part(parent, index))
        try:
            if self.check_event(yaml.AliasEvent):
                mark = self._next_mark()
                node = cast(yaml.Node, super().compose_node(parent, index))
                self._count_alias(node, mark)
                return node
            if len(self.trail) > MAX_DEPTH:
                self._refuse(f"the data nests more than {MAX_DEPTH} levels deep", self._next_mark())
            node = cast(yaml.Node, super().compose_node(parent, index))
            self.measures[id(node)] = self._measure(node)
            return node
        except yaml.YAMLError:
            if self.failed_in is None:  # the innermost node being read names the key path
                self.failed_in = tuple(self.trail)
            raise
        finally:
            self.trail.pop()

    def _next_mark(self) -> yaml.Mark:
        event = self.peek_event()
        return cast(yaml.Mark, event.start_mark)

    def _measure(self, node: yaml.Node) -> tuple[int, int, int]:
        if isinstance(node, yaml.ScalarNode):
            return 1, len(node.value), 1
        measures = [self.measures[id(child)] for child in _children(node)]  # children are composed first
        return (
            1 + sum(m[0] for m in measures),
            sum(m[1] for m in measures),
            1 + max((m[2] for m in measures), default=0),
        )

    def _count_alias(self, node: yaml.Node, mark: yaml.Mark) -> None:
        measure = self.measures.get(id(node))
        if measure is None:  # anchored, but still being composed: the alias is inside its own anchor
            self._refuse(
                "recursive alias: the alias is inside the value it names, so that value would be infinite",
                mark,
                hint="an alias may only refer to a value that is complete before the alias",
            )
        nodes, chars, height = measure
        self.alias_nodes += nodes
        self.alias_chars += chars
        if self.alias_nodes > MAX_ALIAS_NODES:
            self._refuse(
                f"too many alias expansions: the suite expands to more than {MAX_ALIAS_NODES:,} nodes through aliases",
                mark,
                hint=_ALIAS_HINT,
            )
        if self.alias_chars > MAX_ALIAS_CHARS:
            self._refuse(
                f"too many alias expansions: aliases repeat more than {MAX_ALIAS_CHARS:,} characters of text",
                mark,
                hint=_ALIAS_HINT,
            )
        if len(self.trail) - 1 + height > MAX_DEPTH:
            self._refuse(f"the data nests more than {MAX_DEPTH} levels deep once aliases are expanded", mark)

    def _refuse(self, message: str, mark: yaml.Mark, hint: str | None = None) -> NoReturn:
        key = format_key_path([part for part in self.trail if part is not None])
        raise SuiteError(message, path=self.shown, line=mark.line, key=key or None, hint=hint)


class _BoundedLoader(_BoundedComposer, yaml.SafeLoader):
    """PyYAML's safe loader, all in Python, with the bounded composer: the reference reading of a suite."""

    def __init__(self, source: str, shown: str) -> None:
        yaml.SafeLoader.__init__(self, source)
        self._start_bounds(shown)


class _PythonParserNeeded(Exception):
    """The file holds something libyaml reads and PyYAML's Python parser refuses: the latter must say so."""


_Node = TypeVar("_Node", bound=yaml.Node)
_LibyamlLoader: type[_BoundedComposer] | None
try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: the Python parser reads every suite
    _LibyamlLoader = None
else:

    class _CLoader(_BoundedComposer, CParser, Resolver):
        """libyaml's events through the bounded composer and the safe constructor of ``_BoundedLoader``.

        The composer and constructor are PyYAML's Python ones, so nodes, limits and data are built as
        from PyYAML's events (a plain scalar's style is '' here, None there: see ``_construct``).
        """

        def __init__(self, source: str, shown: str) -> None:
            CParser.__init__(self, source)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_bounds(shown)
            self.flow_level = 0  # how many { } and [ ] the node being composed is inside

        def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
            """PyYAML's, refusing what libyaml reads and PyYAML would not (the Python parser then reads the file)."""
            event = self.peek_event()
            if event.tag is not None or (self.flow_level and not event.style and "?" in event.value):
                raise _PythonParserNeeded
            return super().compose_scalar_node(anchor)

        def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
            """PyYAML's, counting the [ ] the composer is inside."""
            return self._in_collection(super().compose_sequence_node, anchor)

        def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
            """PyYAML's, counting the { } the composer is inside."""
            return self._in_collection(super().compose_mapping_node, anchor)

        def _in_collection(self, compose: Callable[[Any], _Node], anchor: Any) -> _Node:
            event = self.peek_event()
            if event.tag is not None:
                raise _PythonParserNeeded
            flow = 1 if event.flow_style else 0
            self.flow_level += flow
            try:
                return compose(anchor)
            finally:
                self.flow_level -= flow

    _LibyamlLoader = _CLoader


def _path_part(parent: yaml.Node | None, index: Any) -> PathPart | None:
    """The key-path part of a node PyYAML composes: a list index, a mapping key, or None for a key."""
    if isinstance(parent, yaml.SequenceNode) and isinstance(index, int):
        return index
    if isinstance(index, yaml.ScalarNode) and index.tag != "tag:yaml.org,2002:merge":
        return str(index.value)
    return None


def _children(node: yaml.Node) -> list[yaml.Node]:
    """A collection node's children: a sequence's items, a mapping's keys and values."""
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return cast(list[yaml.Node], node.value)


def _construct(node: yaml.Node, path: KeyPath, lines: LineMap, shown: str, loader: _BoundedComposer) -> Any:
    """Build plain data from a node tree, recording lines; anchors and merge keys are honoured."""
    lines.lines.setdefault(path, node.start_mark.line)
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(node, path, lines, shown, loader)
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, (*path, i), lines, shown, loader) for i, item in enumerate(node.value)]
    if node.tag == _STR_TAG:  # most values: text, as the constructor would give it (``construct_scalar``)
        return node.value
    value = _construct_scalar(node, path, shown, loader)
    if _unquoted_value(node, path) and not isinstance(value, str):
        lines.plain[path] = str(node.value)
    return value


def _construct_scalar(node: yaml.Node, path: KeyPath, shown: str, loader: _BoundedComposer) -> Any:
    """A scalar that is not plain text (a number, a boolean, a date...), as the safe constructor reads it."""
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError:  # an unknown tag: the key path is known here, not where it is caught
        if loader.failed_in is None:
            loader.failed_in = path
        raise
    except (ValueError, OverflowError) as exc:
        # PyYAML lets Python's own errors through: a 5,000-digit integer, a date such as 2024-13-01
        raise _scalar_error(node, exc, path, shown) from exc


def _unquoted_value(node: yaml.Node, path: KeyPath) -> bool:
    """Whether the node is a plain (unquoted) scalar that is not a key.

    A plain scalar's style is None from PyYAML's parser, '' from libyaml's.
    """
    return isinstance(node, yaml.ScalarNode) and not node.style and path[-1:] != ("<key>",)


def _scalar_error(node: yaml.Node, exc: Exception, path: KeyPath, shown: str) -> SuiteError:
    kind = str(node.tag).rsplit(":", 1)[-1]
    if kind == "int" and "digits" in str(exc):
        message = f"an integer of {len(str(node.value)):,} digits is too long to read"
    else:
        message = f"cannot read {_shorten(str(node.value))} as {kind}: {exc}"
    return SuiteError(
        message,
        path=shown,
        line=node.start_mark.line,
        key=format_key_path(path) or None,
        hint="quote the value to keep it as text",
    )


def _shorten(text: str, width: int = 40) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")


def _construct_mapping(
    node: yaml.MappingNode, path: KeyPath, lines: LineMap, shown: str, loader: _BoundedComposer
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for key_node, value_node in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            _merge(out, _construct(value_node, path, lines, shown, loader))
            continue
        key = _key(_construct(key_node, (*path, "<key>"), lines, shown, loader), key_node, path, shown)
        line = key_node.start_mark.line
        if key in seen:
            loader.duplicates.append(SuiteError(
                f"duplicate key '{key}' (first on line {seen[key] + 1}); YAML would silently keep the last one",
                path=shown,
                line=line,
                key=format_key_path((*path, key)),
            ))
            continue
        seen[key] = line
        child = (*path, key)
        lines.lines[child] = line
        out[key] = _construct(value_node, child, lines, shown, loader)
        lines.lines[child] = line  # the key's line, not the value's, is what a person looks for
    lines.lines.pop((*path, "<key>"), None)
    return out


def _merge(out: dict[str, Any], merged: Any) -> None:
    """A merge key (``<<: *defaults``, or a list of them): add the keys ``out`` does not have yet."""
    for part in merged if isinstance(merged, list) else [merged]:
        if isinstance(part, dict):
            for k, v in part.items():
                out.setdefault(k, v)


def _key(key: Any, key_node: yaml.Node, path: KeyPath, shown: str) -> str:
    """A mapping key as text; a key that is not a string or number (a list, a boolean, null) is refused."""
    if not isinstance(key, (str, int, float, bool)) or isinstance(key, bool):
        raise SuiteError(
            f"keys must be plain strings, got {_kind(key)}",
            path=shown,
            line=key_node.start_mark.line,
            key=format_key_path(path) or None,
        )
    return str(key)


def _kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", type(None): "null"}.get(type(value), type(value).__name__)
