"""Every case id of a suite is unique: duplicates are refused with a table of them, and the fix.

Two tasks may share an id, or one task may expand to several cases with the same id, when its id does not use
the matrix variables or the dataset rows it is crossed with (a suite's ``matrix:`` applies to every task). The
second says which task, and which variables to add to its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import jinja2

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.datasets import ROW_INDEX
from bench_plugin.suite.spec import CaseSpec, SuiteSpec, TaskSpec
from bench_plugin.suite.templates import TemplateRenderer

SHOWN = 10
"""Rows of the table at most."""
TASKS_SHOWN = 3
"""Tasks whose ids do not vary, explained one by one at most; the others are named by their lines."""


def check_unique_ids(suite: SuiteSpec, cases: Sequence[CaseSpec], renderer: TemplateRenderer) -> None:
    """Refuse a suite whose cases do not all have their own id.

    Raises:
        SuiteError: at the first duplicate, with a row per duplicate (a task's own duplicates share one row) and
            the fix: for a task whose cases share an id, the matrix variables or dataset rows its id leaves out.
    """
    clashes = _clashes(cases)
    if not clashes:
        return
    rows, own = _rows(clashes)
    hints = _own_hints(suite, renderer, own.values())
    if len(rows) > len(own):  # cases of different tasks
        hints.append("give each task a distinct id; with a matrix or dataset put a varying field in the id, "
                     "e.g. id: \"landlord-{{ amount }}-{{ category }}\"")
    index = clashes[0][1].task_index
    raise SuiteError(
        f"{len(clashes)} case id(s) are not unique:\n" + "\n".join(_table(rows)),
        path=suite.path,
        line=clashes[0][1].line,
        key=f"tasks[{index}].id" if index is not None else "tasks",
        hint="\n  hint: ".join(hints),
    )


def _clashes(cases: Sequence[CaseSpec]) -> list[tuple[CaseSpec, CaseSpec]]:
    """``(first, later)`` for each case whose id an earlier case already has."""
    seen: dict[str, CaseSpec] = {}
    clashes: list[tuple[CaseSpec, CaseSpec]] = []
    for case in cases:
        first = seen.setdefault(case.case_id, case)
        if first is not case:
            clashes.append((first, case))
    return clashes


def _rows(clashes: list[tuple[CaseSpec, CaseSpec]]) -> tuple[list[tuple[str, str]], dict[str, list[CaseSpec]]]:
    """The table's rows (case id, where its cases are), and the cases of one task that share an id, by id."""
    rows: list[tuple[str, str]] = []
    own: dict[str, list[CaseSpec]] = {}  # a case id shared by cases of one task -> those cases
    for a, b in clashes:
        if a.task_index is None or a.task_index != b.task_index:
            rows.append((b.case_id, f"line {_line(a)} and line {_line(b)}"))
        elif b.case_id in own:
            own[b.case_id].append(b)
        else:
            own[b.case_id] = [a, b]
            rows.append((b.case_id, ""))  # filled in below, once the task's cases are counted
    rows = [(case_id, text or f"{len(own[case_id])} cases of the task at line {_line(own[case_id][0])}")
            for case_id, text in rows]
    return rows, own


def _table(rows: list[tuple[str, str]]) -> list[str]:
    """The first ``SHOWN`` rows, lined up, and how many more there are."""
    width = max(len(case_id) for case_id, _ in rows)
    table = [f"  {case_id:<{width}}  {text}" for case_id, text in rows[:SHOWN]]
    more = [f"  ... and {len(rows) - SHOWN} more"] if len(rows) > SHOWN else []
    return table + more


def _line(case: CaseSpec) -> int:
    return (case.line or 0) + 1


def _own_hints(suite: SuiteSpec, renderer: TemplateRenderer, groups: Iterable[list[CaseSpec]]) -> list[str]:
    """One hint per task whose cases share ids (the first ``TASKS_SHOWN``): what its id leaves out."""
    by_task: dict[int, list[list[CaseSpec]]] = {}
    for group in groups:
        by_task.setdefault(group[0].task_index or 0, []).append(group)
    hints = [_own_hint(suite.tasks[index], renderer, task_groups)
             for index, task_groups in list(by_task.items())[:TASKS_SHOWN]]
    rest = [_line(task_groups[0][0]) for task_groups in list(by_task.values())[TASKS_SHOWN:]]
    if rest:
        hints.append(_likewise(rest))
    return hints


def _likewise(lines: list[int]) -> str:
    """The tasks (at ``lines``) not explained one by one, named by their lines."""
    tasks = f"the task at line {lines[0]}" if len(lines) == 1 else f"the tasks at lines {_and(map(str, lines))}"
    return f"{tasks} likewise expand{'s' * (len(lines) == 1)} to several cases with the same id"


def _own_hint(task: TaskSpec, renderer: TemplateRenderer, groups: list[list[CaseSpec]]) -> str:
    """Why the cases of ``task`` share an id, and what to add to it."""
    matrix, rows = _left_out(task, renderer, groups)
    head = f"the task at line {_line(groups[0][0])} expands to {len(groups[0])} cases with the same id, because its id"
    if not matrix and not rows:
        return f"{head} comes out the same for several of its variants: make it vary with the matrix or the rows"
    placeholders = [*matrix, *([ROW_INDEX] if rows else [])]
    example = f'e.g. id: "{task.id.source}-{"-".join(f"{{{{ {name} }}}}" for name in placeholders)}"'
    added = _and(f"{{{{ {name} }}}}" for name in placeholders)
    return f"{head} {_unused(matrix, rows, added)} to the id, {example}"


def _left_out(task: TaskSpec, renderer: TemplateRenderer, groups: list[list[CaseSpec]]) -> tuple[list[str], bool]:
    """The matrix variables that vary among the cases and the id does not use; whether the dataset's rows are too."""
    varying = _varying(groups)
    used = _template_variables(renderer, task.id.source)
    matrix = [name for name in task.grid if name in varying and name not in used]
    rows = task.dataset is not None and ROW_INDEX in varying and ROW_INDEX not in used
    return matrix, rows


def _unused(matrix: list[str], rows: bool, added: str) -> str:
    """What the id does not use, and the placeholders (``added``) to add to it."""
    noun = f"the matrix variable{'s' * (len(matrix) > 1)} {_and(matrix)}"
    if matrix and rows:
        return f"uses neither {noun} nor its dataset's rows: add {added} (or a field that tells the rows apart)"
    if matrix:
        return f"does not use {noun}: add {added}"
    return (f"does not use its dataset's rows: add {added} (the row's place in the file) or a field "
            f"that tells the rows apart")


def _varying(groups: list[list[CaseSpec]]) -> list[str]:
    """The variables whose values differ among cases that share an id, in the order of the first case's."""
    names: dict[str, None] = {}
    for group in groups:
        for name in group[0].variables:
            values = [case.variables.get(name) for case in group]
            if any(value != values[0] for value in values[1:]):
                names[name] = None
    return list(names)


def _template_variables(renderer: TemplateRenderer, source: str) -> frozenset[str]:
    """The variables a template names (none when it does not parse: rendering the id reports that)."""
    try:
        return frozenset(renderer.undeclared(source))
    except jinja2.TemplateError:
        return frozenset()


def _and(words: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(words)
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)
