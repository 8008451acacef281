"""Markdown tables in a judge's reply: find one (after a heading), read a cell or a whole column.

Judges write tables such as BackroomsBench's ``| Model | Score | Assessment |`` with emphasis,
extra spaces and scores like ``92/100`` in the cells; these readers allow for all of that. The
parse rule ``{table: {column: Score, row: Alpha, key_column: Model, after: "Individual Model
Assessment"}}`` is read once into a ``TableRule``, whose ``cell`` reads one cell of a reply and
``scores`` a whole column as ``key -> number``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.errors import JudgeError
from bench_plugin.scoring.options import check_known_keys

TABLE_KEYS = ("column", "row", "key_column", "after")
_SEPARATOR_CELL = re.compile(r"^:?-{1,}:?$")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_EMPHASIS = re.compile(r"[*_`]+")


@dataclass(frozen=True)
class MarkdownTable:
    """A table as written: header cells and data rows (cells stripped, emphasis kept)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def column(self, name: str) -> int | None:
        """The index of the header cell ``name`` (emphasis and case ignored), or None."""
        wanted = clean_cell(name).casefold()
        return next((i for i, cell in enumerate(self.header) if clean_cell(cell).casefold() == wanted), None)


def cell_at(row: Sequence[str], index: int) -> str:
    """The row's cell at ``index``; an empty text when the row is shorter."""
    return row[index] if index < len(row) else ""


def clean_cell(cell: str) -> str:
    """A cell's text without markdown emphasis (``**Alpha**`` -> ``Alpha``) and outer spaces."""
    return " ".join(_EMPHASIS.sub("", cell).split())


def split_row(line: str) -> tuple[str, ...]:
    r"""``| a | b \| c |`` -> ``("a", "b | c")``: outer pipes dropped, escaped pipes kept."""
    body = line.strip()
    body = body.removeprefix("|")
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    cells = re.split(r"(?<!\\)\|", body)
    return tuple(cell.replace("\\|", "|").strip() for cell in cells)


def _is_separator(cells: Sequence[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL.match(cell.replace(" ", "")) for cell in cells)


def find_tables(text: str) -> list[MarkdownTable]:
    """Every table in ``text``: runs of lines starting with ``|`` whose second line is ``|---|``."""
    tables: list[MarkdownTable] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip().startswith("|"):
            block.append(line)
            continue
        table = _table_of(block)
        if table is not None:
            tables.append(table)
        block = []
    return tables


def _table_of(block: Sequence[str]) -> MarkdownTable | None:
    """The table a run of ``|`` lines makes, or None when its second line is not ``|---|``."""
    if len(block) < 2 or not _is_separator(split_row(block[1])):
        return None
    rows = tuple(split_row(row) for row in block[2:] if not _is_separator(split_row(row)))
    return MarkdownTable(header=split_row(block[0]), rows=rows)


def find_table(text: str, column: str, after: str | None = None) -> MarkdownTable:
    """The first table with a ``column`` header, after the first line that contains ``after``.

    Raises:
        JudgeError: when there is no such heading or no such table, saying which.
    """
    tables = find_tables(_after(text, after) if after else text)
    found = next((table for table in tables if table.column(column) is not None), None)
    if found is None:
        raise _no_table(tables, column, after)
    return found


def _no_table(tables: Sequence[MarkdownTable], column: str, after: str | None) -> JudgeError:
    """Why no table was found: none at all, or none with the column (showing the first headers)."""
    where = f" after {after!r}" if after else ""
    if not tables:
        return JudgeError(f"no markdown table{where}")
    headers = "; ".join(" | ".join(table.header) for table in tables[:3])
    return JudgeError(f"no markdown table{where} has a column {column!r} (headers: {headers})")


def _after(text: str, heading: str) -> str:
    """The text after the first line that mentions ``heading`` (ignoring case).

    Raises:
        JudgeError: when no line mentions it.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if heading.casefold() in line.casefold()), None)
    if start is None:
        raise JudgeError(f"no line mentions {heading!r}, so there is no table after it")
    return "\n".join(lines[start + 1 :])


def key_index(table: MarkdownTable, key_column: str | None) -> int:
    """The column that names the rows: ``key_column``, else the first one."""
    if key_column is None:
        return 0
    index = table.column(key_column)
    if index is None:
        raise JudgeError(f"the table has no column {key_column!r} (header: {' | '.join(table.header)})")
    return index


def cell_number(cell: str, what: str) -> float:
    """The first number in a cell: ``**92**/100`` -> 92.

    Raises:
        JudgeError: when the cell holds no number.
    """
    match = _NUMBER.search(clean_cell(cell))
    if match is None:
        raise JudgeError(f"{what} is {cell.strip()!r}, not a number")
    return float(match.group(0))


def match_name(names: Sequence[str], wanted: Sequence[str], what: str = "row") -> int:
    """The index of the name that is one of ``wanted`` (emphasis and case ignored), tried in order.

    Else the index of the only name that contains one of them (``Alpha (AI-1)`` for ``Alpha``).

    Raises:
        JudgeError: when no name, or more than one, matches.
    """
    cleaned = [clean_cell(name).casefold() for name in names]
    many = _plural(what)
    found = _exact_match(cleaned, wanted)
    if found is None:
        found = _only_mention(cleaned, wanted, many)
    if found is not None:
        return found
    raise JudgeError(f"no {what} is {' or '.join(map(repr, wanted))} ({many}: {_listed(names)})")


def _listed(names: Sequence[str]) -> str:
    """The names (without emphasis, blanks left out) for a message; ``none`` when there are none."""
    return ", ".join(repr(clean_cell(name)) for name in names if clean_cell(name)) or "none"


def _plural(what: str) -> str:
    """``row`` -> ``rows``, ``row of the table`` -> ``rows of the table``."""
    return what.replace(" of ", "s of ", 1) if " of " in what else f"{what}s"


def _exact_match(cleaned: Sequence[str], wanted: Sequence[str]) -> int | None:
    """The index of the first of ``wanted`` that is one of the (cleaned) names."""
    targets = [target for target in (clean_cell(text).casefold() for text in wanted) if target]
    return next((cleaned.index(target) for target in targets if target in cleaned), None)


def _only_mention(cleaned: Sequence[str], wanted: Sequence[str], many: str) -> int | None:
    """The index of the only name that mentions one of ``wanted``, tried in order.

    Raises:
        JudgeError: when more than one name mentions it.
    """
    for text in wanted:
        found = _mentions(cleaned, clean_cell(text).casefold())
        if len(found) > 1:
            raise JudgeError(f"{len(found)} {many} mention {text!r}; expected one")
        if found:
            return found[0]
    return None


def _mentions(cleaned: Sequence[str], target: str) -> list[int]:
    """The indexes of the names that contain ``target`` (none for an empty target)."""
    return [index for index, name in enumerate(cleaned) if target and target in name]


def find_row(table: MarkdownTable, keys: int, wanted: Sequence[str]) -> tuple[str, ...]:
    """The row whose key cell names one of ``wanted`` (see ``match_name``).

    Raises:
        JudgeError: when no row, or more than one row, matches.
    """
    names = [cell_at(row, keys) for row in table.rows]
    return table.rows[match_name(names, wanted, "row of the table")]


@dataclass(frozen=True)
class TableRule:
    """Where a table's scores are.

    The ``column``, the ``row`` to read (None: the caller names it, e.g. the candidate's), the column
    that names the rows (``key_column``, else the first) and a heading the table comes ``after``.
    """

    column: str
    row: tuple[str, ...] | None = None
    key_column: str | None = None
    after: str | None = None

    def _table(self, text: str) -> tuple[MarkdownTable, int, int]:
        """The table with the rule's column, the index of its key column and that of the score column.

        Raises:
            JudgeError: when there is no such table, or it has no such key column.
        """
        table = find_table(text, self.column, self.after)
        keys = key_index(table, self.key_column)
        column = table.column(self.column)
        assert column is not None  # find_table chose a table with this column
        return table, keys, column

    def cell(self, text: str, rows: Sequence[str] = ()) -> float:
        """The number in the cell of ``row`` (else the first of ``rows`` that names a row).

        Raises:
            JudgeError: when the table, the row or a number in the cell cannot be found.
            ValueError: when neither the rule nor the caller names a row.
        """
        return cell_number(*self.cell_text(text, rows))

    def cell_text(self, text: str, rows: Sequence[str] = ()) -> tuple[str, str]:
        """The cell of ``row`` as written, and how messages name it (a verdict map reads a label there).

        Raises:
            JudgeError: when the table or the row cannot be found.
            ValueError: when neither the rule nor the caller names a row.
        """
        wanted = self.row if self.row is not None else tuple(rows)
        if not wanted:
            raise ValueError("a table rule needs row: the row to read (llm_judge fills in the candidate's)")
        table, keys, column = self._table(text)
        row = find_row(table, keys, wanted)
        if column >= len(row):
            raise JudgeError(f"the row {clean_cell(row[keys])!r} has no {self.column!r} cell")
        return row[column], f"the {self.column!r} cell of {clean_cell(row[keys])!r}"

    def scores(self, text: str) -> tuple[dict[str, float], list[str]]:
        """The whole column as ``row key -> number`` (keys without emphasis, in table order).

        Returns:
            The scores, and the problems with rows whose cell holds no number (those rows are left out).

        Raises:
            JudgeError: when the table cannot be found.
        """
        table, keys, column = self._table(text)
        scores: dict[str, float] = {}
        problems: list[str] = []
        for row in table.rows:
            name = clean_cell(cell_at(row, keys))
            if not name:
                continue
            try:
                scores[name] = cell_number(cell_at(row, column), f"the score of {name!r}")
            except JudgeError as exc:
                problems.append(str(exc))
        return scores, problems


def parse_table_rule(options: Any, *, needs_row: bool) -> TableRule:
    """Read ``{column, row, key_column, after}`` before any judge is called.

    Raises:
        ValueError: for unknown keys, a missing column, or values that are not text.
        TypeError: when ``options`` is not a mapping.
    """
    if not isinstance(options, Mapping):
        raise TypeError(f"table must be a mapping such as {{column: Score, row: Alpha}}, got {options!r}")
    check_known_keys(options, TABLE_KEYS, "table")
    if not isinstance(options.get("column"), str) or not options["column"].strip():
        raise ValueError("table needs column: the header of the column that holds the score")
    wrong = next((key for key in ("key_column", "after") if not isinstance(options.get(key, ""), str)), None)
    if wrong is not None:
        raise ValueError(f"table.{wrong} must be text, got {options[wrong]!r}")
    rows = _rows(options.get("row"), needs_row)
    return TableRule(options["column"], rows, options.get("key_column"), options.get("after"))


def _is_texts(value: Any) -> bool:
    """A non-empty list of texts."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)


def _rows(row: Any, needs_row: bool) -> tuple[str, ...] | None:
    """``row:`` as a tuple of the texts that may name the row; None when the caller names it."""
    if row is None:
        if needs_row:
            raise ValueError("table needs row: the text in the key column of the row to read")
        return None
    if isinstance(row, str):
        return (row,)
    if not _is_texts(row):
        raise ValueError(f"table.row must be a text or a list of texts, got {row!r}")
    return tuple(row)
