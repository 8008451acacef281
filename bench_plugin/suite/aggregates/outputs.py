"""The files a suite's ``aggregates:`` write, and the check that no two suites of one run write the same one.

All suites of a run write into one output folder. Two suites naming the same ``csv:`` would
overwrite each other's table without a word, so collection refuses the second, naming both files.
Names are kept as written (no silent renaming): the file a user asked for is the file they get.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import LoadedSuite, format_key_path


@dataclass(frozen=True)
class OutputFile:
    """A file in the output folder that a suite writes: its name, and where the suite names it."""

    name: str
    key: str
    line: int | None = None


def csv_outputs(loaded: LoadedSuite) -> tuple[OutputFile, ...]:
    """The CSV files of a schema-valid suite's aggregate tables, in YAML order."""
    tables = (loaded.data.get("aggregates") or {}).get("tables") or []
    found = []
    for index, table in enumerate(tables):
        if table.get("csv"):
            path = ("aggregates", "tables", index, "csv")
            found.append(OutputFile(table["csv"], format_key_path(path), loaded.lines.line_of(path)))
    return tuple(found)


class OutputClaims:
    """Which suite of the run writes each output file: the first suite collected that names it.

    Collection is deterministic, so every xdist worker refuses the same suite.
    """

    def __init__(self) -> None:
        self._owners: dict[str, tuple[str, OutputFile]] = {}

    def claim(self, suite_path: str, outputs: Iterable[OutputFile]) -> None:
        """Record that the suite at ``suite_path`` writes ``outputs``.

        Raises:
            SuiteError: at the second suite's key, when another suite of the run writes one of the files.
        """
        outputs = list(outputs)
        for output in outputs:
            owner, first = self._owners.get(output.name, (suite_path, output))
            if owner != suite_path:
                where = f"{owner}:{first.line + 1}" if first.line is not None else owner
                stem = suite_path.rsplit("/", 1)[-1].removesuffix(".yaml").removesuffix(".yml")
                raise SuiteError(
                    f"'{output.name}' is also written by {where} ({first.key}); two suites of one run "
                    "would overwrite each other's file",
                    path=suite_path, line=output.line, key=output.key,
                    hint=f"give one of them another name, e.g. csv: {stem}-{output.name}",
                )
        for output in outputs:
            self._owners.setdefault(output.name, (suite_path, output))
