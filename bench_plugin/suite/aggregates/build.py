"""The suite's ``aggregates:`` -> frozen table specs, checked with errors that point at the YAML."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.aggregates.spec import (
    RECORD_FIELDS,
    AggregateSpec,
    Baseline,
    Bin,
    BinSet,
    Column,
    Condition,
    Sort,
    Table,
    as_text,
)
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.scorers import component_names
from bench_plugin.suite.sections import read_suite_sections
from bench_plugin.suite.variants import PROMPT_TAG, PROMPT_VARIABLE

# the keys each fn reads; any other key is a mistake worth pointing at
_FN_KEYS = {
    "count": {"fn", "name", "where"},
    "count_scored": {"fn", "name", "where"},
    "mean": {"fn", "name", "of", "where"},
    "proportions": {"fn", "of", "prefix", "where"},
    "rate": {"fn", "name", "where", "event"},
    "uplift": {"fn", "name", "where", "event", "baseline"},
}


def build_aggregates(loaded: LoadedSuite) -> AggregateSpec:
    """Build and check the ``aggregates:`` of a schema-valid suite.

    Aggregates are computed on the controller at the end of a run (``report/aggregates.py``). Under xdist the
    controller collects no suites, so it reads this part again from the suite file named in the records
    (``read_suite_aggregates``); collection calls ``build_aggregates`` too, so a mistake stops the run before any
    model is called.

    Raises:
        SuiteError: located at the offending key: an unknown component, bin set or field (with a
            did-you-mean), overlapping unbounded bins, a repeated column name or CSV file.
    """
    entry = loaded.data.get("aggregates")
    if not entry:
        return AggregateSpec()
    checker = _Checker(loaded)
    bins = {
        name: _bin_set(checker, name, raw, ("aggregates", "bins", name))
        for name, raw in entry.get("bins", {}).items()
    }
    checker.bin_sets = bins
    tables = tuple(
        _table(checker, raw, ("aggregates", "tables", index)) for index, raw in enumerate(entry.get("tables", []))
    )
    checker.unique([t.name for t in tables], ("aggregates", "tables"), "table name")
    checker.unique([t.csv for t in tables if t.csv], ("aggregates", "tables"), "csv file")
    return AggregateSpec(bins=bins, tables=tables)


def read_suite_aggregates(paths: Iterable[str], root: Path) -> dict[str, AggregateSpec]:
    """The aggregates of each suite file the records name (suites without tables are left out)."""

    def tables_only(loaded: LoadedSuite) -> AggregateSpec | None:
        spec = build_aggregates(loaded)
        return spec if spec.tables else None

    return read_suite_sections(paths, root, tables_only)


class _Checker:
    """What the suite defines, to check names against, and located errors."""

    def __init__(self, loaded: LoadedSuite) -> None:
        self.loaded = loaded
        self.components, self.per_turn = component_names(loaded)
        self.fields = _known_fields(loaded)
        self.bin_sets: dict[str, BinSet] = {}

    def component(self, name: str, key_path: KeyPath) -> None:
        """A scorer's component, or ``NAME.tN``: turn N of a ``per_turn`` scorer (MT-Bench's turn means)."""
        scorer, sep, turn = name.rpartition(".t")
        if sep and scorer in self.per_turn and turn.isdigit() and int(turn) >= 1:
            return
        self.name_in(name, [*self.components, *(f"{n}.t1" for n in self.per_turn)], key_path, "component")

    def error(self, key_path: KeyPath, message: str, hint: str | None = None) -> SuiteError:
        line = self.loaded.lines.line_of(key_path)
        return SuiteError(
            message, path=self.loaded.display_path, line=line, key=format_key_path(key_path), hint=hint,
            excerpt=self.loaded.excerpt(line, context=0),
        )

    def name_in(self, name: str, choices: Sequence[str], key_path: KeyPath, what: str) -> None:
        if name in choices:
            return
        hint = choices_hint(name, choices, label=f"{what}s")
        raise self.error(key_path, f"unknown {what} '{name}'", hint)

    def field(self, name: str, key_path: KeyPath) -> None:
        if self.fields is not None:  # None: a dataset may bring any field
            self.name_in(name, [*self.bin_sets, *self.fields], key_path, "field")

    def unique(self, names: Sequence[str], key_path: KeyPath, what: str) -> None:
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise self.error(key_path, f"{what} '{repeated[0]}' is used twice")


def _bin_set(checker: _Checker, name: str, raw: Mapping[str, Any], base: KeyPath) -> BinSet:
    checker.component(raw["of"], (*base, "of"))
    bins = tuple(Bin(label, bounds.get("min"), bounds.get("max")) for label, bounds in raw["labels"].items())
    for bin_ in bins:
        if _backwards(bin_):
            raise checker.error((*base, "labels", bin_.label), f"min {bin_.low:g} is above max {bin_.high:g}")
    open_labels = [bin_.label for bin_ in bins if not bin_.bounded]
    if len(open_labels) > 1:
        raise checker.error(
            (*base, "labels", open_labels[1]),
            f"only one label may have no bounds (it takes what no other label does); found {', '.join(open_labels)}",
        )
    return BinSet(name=name, of=raw["of"], bins=bins)


def _backwards(bin_: Bin) -> bool:
    return bin_.low is not None and bin_.high is not None and bin_.low > bin_.high


def _table(checker: _Checker, raw: Mapping[str, Any], base: KeyPath) -> Table:
    by = tuple(raw.get("by", []))
    for index, name in enumerate(by):
        checker.field(name, (*base, "by", index))
    columns: list[Column] = []
    for index, entry in enumerate(raw["columns"]):
        columns.extend(_columns(checker, entry, (*base, "columns", index)))
    checker.unique([*by, *(column.name for column in columns)], (*base, "columns"), "column name")
    sort = None
    if "sort" in raw:
        name = raw["sort"]["column"]
        checker.name_in(name, [*by, *(column.name for column in columns)], (*base, "sort", "column"), "column")
        sort = Sort(column=name, descending=bool(raw["sort"].get("descending", False)))
    return Table(name=raw["name"], title=raw.get("title", raw["name"]), by=by, columns=tuple(columns),
                 csv=raw.get("csv"), sort=sort)


def _columns(checker: _Checker, raw: Mapping[str, Any], base: KeyPath) -> list[Column]:
    fn = raw["fn"]
    unused = sorted(set(raw) - _FN_KEYS[fn])
    if unused:
        raise checker.error(
            (*base, unused[0]), f"'{unused[0]}' is not used by fn: {fn}",
            hint=f"fn: {fn} takes {', '.join(sorted(_FN_KEYS[fn] - {'fn'}))}",
        )
    where = _condition(checker, raw.get("where", {}), (*base, "where"))
    if fn == "proportions":
        return _proportions(checker, raw, where, base)
    if fn == "mean":
        checker.component(raw["of"], (*base, "of"))
    baseline = _baseline(checker, raw["baseline"], (*base, "baseline")) if fn == "uplift" else None
    return [
        Column(
            name=raw["name"],
            fn=fn,
            of=raw.get("of"),
            where=where,
            event=_condition(checker, raw.get("event", {}), (*base, "event")),
            baseline=baseline,
        )
    ]


def _proportions(checker: _Checker, raw: Mapping[str, Any], where: Condition, base: KeyPath) -> list[Column]:
    """``fn: proportions``: one rate column per label of the bin set it names."""
    checker.name_in(raw["of"], list(checker.bin_sets), (*base, "of"), "bin set")
    prefix = raw.get("prefix", f"{raw['of']}_")
    return [
        Column(name=f"{prefix}{bin_.label}", fn="rate", where=where, event={raw["of"]: (bin_.label,)})
        for bin_ in checker.bin_sets[raw["of"]].bins
    ]


def _baseline(checker: _Checker, entry: Mapping[str, Any], base: KeyPath) -> Baseline:
    """An uplift's ``baseline:``: the records it compares with, matched on ``key`` fields."""
    key = tuple(entry.get("key", []))
    for index, name in enumerate(key):
        checker.field(name, (*base, "key", index))
    return Baseline(
        where=_condition(checker, entry.get("where", {}), (*base, "where")),
        key=key,
        per_model=bool(entry.get("per_model", False)),
    )


def _condition(checker: _Checker, raw: Mapping[str, Any], base: KeyPath) -> Condition:
    for name in raw:
        checker.field(name, (*base, name))
    return {name: tuple(map(as_text, value if isinstance(value, list) else [value])) for name, value in raw.items()}


def _task_fields(task: Mapping[str, Any]) -> list[str]:
    """The variables a task adds to its records, and the names of its mapping tags."""
    names = [name for key in ("vars", "matrix", "derived") for name in task.get(key, {})]
    return names + list(task["tags"]) if isinstance(task.get("tags"), Mapping) else names


def _has_prompt_variants(data: Mapping[str, Any]) -> bool:
    return "prompts" in data or any("prompts" in task for task in data["tasks"])


def _known_fields(loaded: LoadedSuite) -> list[str] | None:
    """Fields a record of this suite can have, or None when a task reads a dataset (any field)."""
    data = loaded.data
    if any("dataset" in task for task in data["tasks"]):
        return None
    names: list[str] = list(RECORD_FIELDS)
    for source in (data.get("variables", {}), data.get("matrix", {}), data.get("derived", {})):
        names += list(source)
    for task in data["tasks"]:
        names += _task_fields(task)
    if _has_prompt_variants(data):
        names += [PROMPT_TAG, PROMPT_VARIABLE]  # every prompt variant is tagged prompt=ID and has prompt_id
    return list(dict.fromkeys(names))
