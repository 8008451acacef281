"""The ``bench`` command: work on suites and stored results without running pytest.

bench validate [PATH ...]        check suites (schema, templates, scorers) without calling a model
bench report RESULTS.jsonl       rebuild report.md and summary.json from stored records
bench schema                     print the suite JSON Schema (for editors)
bench mock-server [...]          the OpenAI/Anthropic-compatible mock server
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench_plugin.mock.server import main as serve
from bench_plugin.nodes import CaseItem
from bench_plugin.report.write import write_reports
from bench_plugin.store import read_results
from bench_plugin.suite.aggregates.build import read_suite_aggregates
from bench_plugin.suite.discover import find_suites
from bench_plugin.suite.leaderboard import read_suite_leaderboards
from bench_plugin.suite.schema import suite_schema


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bench`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "mock-server":
        return serve(args[1:])
    parser = _parser()
    options = parser.parse_args(args)
    if options.command is None:
        parser.print_help()
        return 2
    result: int = options.run(options)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description="bench_plugin: LLM benchmarks as pytest suites.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    validate = commands.add_parser("validate", help="check suites without calling any model")
    validate.add_argument("paths", nargs="*", default=["suites"], help="suite files or folders (default: suites)")
    validate.set_defaults(run=_validate)
    report = commands.add_parser("report", help="rebuild report.md and summary.json from results.jsonl")
    report.add_argument("results", type=Path, help="a results.jsonl written by a run")
    report.add_argument("-o", "--output", type=Path, default=None, help="folder to write to (default: beside it)")
    report.set_defaults(run=_report)
    schema = commands.add_parser("schema", help="print the suite JSON Schema")
    schema.set_defaults(run=_schema)
    commands.add_parser("mock-server", help="run the mock LLM server (bench mock-server --help)")
    return parser


def _validate(options: argparse.Namespace) -> int:
    """Collect the suites the way ``pytest`` would, calling no model, and list every problem.

    Going through pytest's own collection loads the same ``conftest.py`` files and plugins a run
    would, so a project's own scorers, providers and engines are known here too.
    """
    files = find_suites(Path(p) for p in options.paths)
    if not files:
        print(f"no suite files under {' '.join(options.paths)}", file=sys.stderr)
        return 2
    validation = _Validation()
    # -s: our lines go to this process's stdout; without the terminal plugin ours are the only lines;
    # pytest-asyncio is not needed to collect and would warn about its own settings
    args = [*(str(f) for f in files), "--collect-only", "-s", "--continue-on-collection-errors",
            "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:asyncio"]
    pytest.main(args, plugins=[validation])
    return 1 if validation.problems else 0


class _Validation:
    """Reads collection as it happens: a broken file is one problem, a case that cannot run another."""

    def __init__(self) -> None:
        self.problems = 0

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite file that does not load: its message names the file, line and key."""
        if report.failed:
            self.problems += 1
            print(str(report.longrepr).strip(), file=sys.stderr)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Per suite file: how many cases, and each case that would fail before any call."""
        by_file: dict[str, list[CaseItem]] = {}
        for item in session.items:
            if isinstance(item, CaseItem):
                by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
        for path, items in by_file.items():
            broken = [item for item in items if item.case.problem is not None]
            for item in broken:
                print(f"{item.case.case_id}: {item.case.problem}", file=sys.stderr)
            self.problems += len(broken)
            print(f"{path}: {len(items)} cases, {len(broken)} with problems")


def _report(options: argparse.Namespace) -> int:
    records = read_results(options.results)
    # suites are named relative to the directory pytest ran in; run bench report from there
    aggregates = read_suite_aggregates((r.path for r in records), Path.cwd())
    leaderboards = read_suite_leaderboards((r.path for r in records), Path.cwd())
    paths = write_reports(records, options.output or options.results.parent, aggregates, leaderboards)
    print(f"{len(records)} records -> {paths['markdown']}, {paths['summary']}")
    return 0


def _schema(options: argparse.Namespace) -> int:
    print(json.dumps(suite_schema(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
