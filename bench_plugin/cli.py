"""The ``bench`` command: work on suites and stored results without running pytest.

bench validate [PATH ...]        check suites without calling a model: what a run finds before any call
bench report RESULTS.jsonl ...   rebuild every report from one or more stored result sets (no model is called)
bench audit RESULTS.jsonl ...    print the audit: cases to look at before trusting the numbers
bench merge RESULTS.jsonl ...    combine shards' results into one results.jsonl (each case once) and every report
bench compare BASELINE CURRENT   compare a run with a baseline: compare.md, compare.json; exit 1 on a regression
bench gates RESULTS.jsonl ...    judge the suites' quality gates over stored results (merged shards, exit 1: broken)
bench view [RUNS ...]            browse runs in the browser (--static DIR: the same pages as files)
bench schema                     print the suite JSON Schema (for editors)
bench mock-server [...]          the OpenAI/Anthropic-compatible mock server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.calls.pricing import price_unknown
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import AuthError
from bench_plugin.core.text_safety import echo
from bench_plugin.mock.server import main as serve
from bench_plugin.plugin.nodes import CaseItem
from bench_plugin.providers.http import api_key_from_env
from bench_plugin.report.audit import audit, render_audit
from bench_plugin.report.compare.build import NothingToCompare, Side, compare_sides, regressions
from bench_plugin.report.compare.facts import facts_of
from bench_plugin.report.compare.sides import locate_side
from bench_plugin.report.compare.text import headline_lines
from bench_plugin.report.compare.verdicts import DEFAULT_CONFIDENCE, DEFAULT_MARGIN, CompareSettings
from bench_plugin.report.compare.write import write_comparison
from bench_plugin.report.conversation_log import ConversationLogWriter
from bench_plugin.report.markdown import describe_skipped
from bench_plugin.report.quality_gates import read_baseline, resolve_baseline
from bench_plugin.report.quality_gates.stored import judge_stored_results, verdict_lines
from bench_plugin.report.write import in_case_order, write_reports
from bench_plugin.results.journal import journals
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.rejected import earlier_set_aside, rejected_path
from bench_plugin.results.store import encode_record, read_result_sets, write_atomically
from bench_plugin.suite.aggregates.build import read_suite_aggregates
from bench_plugin.suite.aggregates.spec import AggregateSpec
from bench_plugin.suite.discover import find_suites
from bench_plugin.suite.leaderboard import LeaderboardSpec, read_suite_leaderboards
from bench_plugin.suite.quality_gates import parse_gate_text
from bench_plugin.suite.schema import suite_schema
from bench_plugin.suite.sections import refused_suite_paths
from bench_plugin.view.command import add_view_command

# what a shell reports for a command stopped by a closed pipe (128 + SIGPIPE)
CLOSED_PIPE_EXIT = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bench`` console script; returns the exit code.

    A reader that stops early (``bench schema | head``) closes the pipe: the command then ends quietly, as
    other command-line tools do, instead of printing a traceback.
    """
    try:
        code = _command(argv)
        sys.stdout.flush()  # inside the try: a closed pipe found at exit would print "Exception ignored"
    except BrokenPipeError:
        _drop_stdout()
        return CLOSED_PIPE_EXIT
    return code


def _drop_stdout() -> None:
    """Point stdout at the null device, so the flush at exit finds nothing to write into the closed pipe."""
    with contextlib.suppress(OSError, ValueError):  # a stdout without a file descriptor (captured): nothing to do
        out = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, out)
        finally:
            os.close(null)


def _command(argv: Sequence[str] | None) -> int:
    """Parse the arguments and run the command they name."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "mock-server":
        return serve(args[1:])
    parser = _parser()
    given = []
    if args and args[0] == "validate":  # the run's options go to pytest, after the paths
        options_at = next((i for i, arg in enumerate(args[1:], start=1) if arg.startswith("-") and arg not in
                           ("-h", "--help")), len(args))
        args, given = args[:options_at], args[options_at:]
    options = parser.parse_args(args)
    options.pytest_options = given
    if options.command is None:
        parser.print_help()
        return 2
    result: int = options.run(options)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description="bench_plugin: LLM benchmarks as pytest suites.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    validate = commands.add_parser(
        "validate", help="check suites without calling any model",
        usage="bench validate [PATHS...] [--bench-* and pytest options of the run]",
        epilog="Options after the paths are the run's (e.g. --bench-allow-key-env NAME, --bench-models, "
               "--bench-base-url, --bench-rate-limit): they are checked, and the suites checked with them.")
    validate.add_argument("paths", nargs="*", default=["suites"], help="suite files or folders (default: suites)")
    validate.set_defaults(run=_validate)
    report = commands.add_parser("report", help="rebuild every report from stored results, calling no model")
    report.add_argument("results", type=Path, nargs="+",
                        help="results.jsonl files of a run, its shards or a merge; a case found twice counts once")
    report.add_argument("-o", "--output", type=Path, default=None,
                        help="folder to write to (default: the results' folder, when they share one)")
    report.set_defaults(run=_report)
    audit_command = commands.add_parser("audit", help="print the audit of stored results")
    audit_command.add_argument("results", type=Path, nargs="+", help="results.jsonl files, as for bench report")
    audit_command.set_defaults(run=_audit)
    _add_merge_command(commands)
    _add_compare_command(commands)
    _add_gates_command(commands)
    add_view_command(commands)
    schema = commands.add_parser("schema", help="print the suite JSON Schema")
    schema.set_defaults(run=_schema)
    commands.add_parser("mock-server", help="run the mock LLM server (bench mock-server --help)")
    return parser


def _validate(options: argparse.Namespace) -> int:
    """Collect the suites the way ``pytest`` would, calling no model, and list every problem.

    Going through pytest's own collection loads the same ``conftest.py`` files and plugins a run
    would, so a project's own scorers, providers and engines are known here too, and everything a
    run finds before its first call is found here: the YAML and the schema, scripted models' rules,
    and per case its templates (prompts, scorer options, judge prompts), scorers and composite.
    """
    missing = [path for path in options.paths if not Path(path).exists()]
    for path in missing:
        print(f"bench validate: {path} does not exist", file=sys.stderr)
    if missing:
        return 2
    files = find_suites(Path(p) for p in options.paths)
    if not files:
        echo(f"no suite files under {' '.join(options.paths)}", file=sys.stderr)
        return 2
    validation = _Validation()
    # -s: our lines go to this process's stdout; without the terminal plugin ours are the only lines;
    # pytest-asyncio is not needed to collect and would warn about its own settings
    args = [*(str(f) for f in files), "--collect-only", "-s", "--continue-on-collection-errors",
            "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:asyncio", *options.pytest_options]
    code = pytest.main(args, plugins=[validation])
    if code == pytest.ExitCode.USAGE_ERROR:  # an option the run would refuse: pytest said which
        return 2
    return 1 if validation.problems else 0


class _Validation:
    """Reads collection as it happens: a broken file is one problem, a case that cannot run another."""

    def __init__(self) -> None:
        self.problems = 0

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite file that does not load: its message names the file, line and key."""
        if report.failed:
            text = str(report.longrepr).strip()
            found = len(_problem_heads(text)) or 1
            self.problems += found
            echo(text, file=sys.stderr)
            echo(f"{report.nodeid}: {found} problem{'s' * (found != 1)}; no case collected")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Per suite file: how many cases, and each case that would fail before any call."""
        by_file: dict[str, list[CaseItem]] = {}
        for item in session.items:
            if isinstance(item, CaseItem):
                by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
        for path, items in by_file.items():
            self._say_cases(path, items)
            for note in unpriced_models(items):  # not a problem: the run works, but its cost will be unknown
                echo(f"{path}: note: {note}")
            for warning in missing_keys(items):  # not a problem of the suite: the key may be set where it runs
                echo(f"{path}: warning: {warning}", file=sys.stderr)

    def _say_cases(self, path: str, items: Sequence[CaseItem]) -> None:
        """Each case of a file that would fail before any call (every problem it has), then the file's counts."""
        problems = [item.case.problem for item in items if item.case.problem is not None]
        for item in items:
            if item.case.problem is not None:
                echo(f"{item.case.case_id}: {item.case.problem}", file=sys.stderr)
        self.problems += len(problems)
        found = sum(len(problem.problems()) for problem in problems)
        many = f" ({found} problems)" if found > len(problems) else ""
        echo(f"{path}: {len(items)} case{'s' * (len(items) != 1)}, {len(problems)} with problems{many}")


def _problem_heads(text: str) -> list[str]:
    """The first line of each problem in a file's message (``file:line: ...``; quoted lines and hints are indented)."""
    return [line for line in text.splitlines() if line and not line[0].isspace() and not line.startswith("(")]


def unpriced_models(items: Sequence[CaseItem]) -> list[str]:
    """A line for each paid endpoint's model (under test or judging) whose calls will have no price."""
    return [f"model {name}: {why} (its cost stays unknown, and a --bench-budget-usd run stops at its first call)"
            for name, model in _models_of(items).items() if (why := price_unknown(model)) is not None]


def missing_keys(items: Sequence[CaseItem]) -> list[str]:
    """A line for each model (under test or judging) whose key variable is unset here: every call of it would fail."""
    lines = []
    for name, model in _models_of(items).items():
        try:
            api_key_from_env(model.provider)
        except AuthError as exc:
            lines.append(f"model {name}: {exc.message} (every call to it would fail; set it, or put it in .env)")
    return lines


def _models_of(items: Sequence[CaseItem]) -> dict[str, ModelSpec]:
    """The models the cases call, under test or judging, by name."""
    return {model.name: model for item in items for model in (item.case.model, *item.case.judges.values())
            if model is not None}


def _report(options: argparse.Namespace) -> int:
    """Read the result sets as one (each case once) and write every report the run wrote, from them alone."""
    folders = {path.resolve().parent for path in options.results}
    if options.output is None and len(folders) > 1:
        echo("bench report: the results are in different folders; choose where the reports go with -o FOLDER",
              file=sys.stderr)
        return 2
    read = _read_sets(options.results)
    if read is None:
        return 2
    records, skipped = read
    # suites are named relative to the directory pytest ran in; run bench report from there
    _say_refused_suites(records)
    aggregates = read_suite_aggregates((r.path for r in records), Path.cwd())
    leaderboards = read_suite_leaderboards((r.path for r in records), Path.cwd())
    try:
        paths = write_reports(records, options.output or options.results[0].parent, aggregates, leaderboards,
                              skipped=skipped)
    except OSError as exc:
        return _cannot_write(exc)
    echo(f"{len(records)} records -> {', '.join(str(path) for path in paths.values())}")
    return 0


def _say_refused_suites(records: Sequence[CaseRecord]) -> None:
    """On stderr: each suite a record names outside the current folder, which is not read (its records still count)."""
    for path in refused_suite_paths((r.path for r in records), Path.cwd()):
        echo(f"bench: a record names the suite {path!r}, which is not a YAML file under {Path.cwd()}: it is not "
             "read (its aggregates, leaderboard and gates are left out; its records are reported)", file=sys.stderr)


def _cannot_write(exc: OSError) -> int:
    """Say which file could not be written and why (a full disk, a planted link, an unreadable leaderboard)."""
    echo(f"bench: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
    return 2


def _audit(options: argparse.Namespace) -> int:
    """Print the audit of the result sets (read as ``bench report`` reads them); write nothing."""
    read = _read_sets(options.results)
    if read is None:
        return 2
    records, skipped = read
    echo(render_audit(audit(records)), end="")
    if skipped:  # the audit did not see them
        echo(f"\n{describe_skipped(len(skipped))}")
    return 0


def _read(paths: Sequence[Path]) -> list[CaseRecord] | None:
    """The records of every file, each case once; None (the reason printed) when a file cannot be read."""
    read = _read_sets(paths)
    return None if read is None else read[0]


def _read_sets(paths: Sequence[Path]) -> tuple[list[CaseRecord], list[str]] | None:
    """The records of every file, each case once, and each line left out (``path:line: why``); None: unreadable.

    None comes with the reason printed. A run's folder stands for its results.jsonl. A named run's journals beside
    a results file (a session killed before it folded them in: ``journal.py``) are read after it, as resuming the
    run would. What a file leaves out is said: none of its lines was a case, or its last one was torn by a killed run.
    """
    files = []
    for path in paths:
        results = path / "results.jsonl" if path.is_dir() else path
        found = journals(results)
        if path.is_dir() and not results.is_file() and not found:
            echo(f"bench: {path} is a folder without a results.jsonl: name the results files", file=sys.stderr)
            return None
        if results.is_file() or not found:
            files.append(results)
        files += found
        if found:
            names = ", ".join(journal.name for journal in found)
            echo(f"bench: also read {names}: cases a session of the run finished before it was stopped "
                  "(resuming the run folds them into its results.jsonl)", file=sys.stderr)
    try:
        records, duplicates, left_out = read_result_sets(files)
    except (OSError, ValueError) as exc:
        echo(f"bench: {exc}", file=sys.stderr)
        return None
    _say_left_out(left_out, duplicates)
    return records, _unreadable_lines(left_out) + _set_aside_before(files)


def _set_aside_before(files: Sequence[Path]) -> list[str]:
    """The lines earlier sessions moved from these results files to results.rejected.jsonl, said on stderr."""
    found = []
    for path in dict.fromkeys(files):
        aside = earlier_set_aside(path)
        if aside:
            echo(f"bench: {rejected_path(path)} holds {len(aside)} line{'s' * (len(aside) != 1)} set aside from "
                 f"{path} (not case records): counted as left out", file=sys.stderr)
        found += aside
    return found


def _say_left_out(left_out: list[tuple[Path, str]], duplicates: int) -> None:
    """On stderr: each thing a file left out, how many records could not be read, the duplicate readings."""
    for path, what in left_out:
        echo(_left_out_line(path, what), file=sys.stderr)
    skipped = len(_unreadable_lines(left_out))
    if skipped:
        echo(f"bench: {skipped} record{'s' * (skipped != 1)} left out: not case records this version can read "
             "(each named above)", file=sys.stderr)
    if duplicates:
        echo(f"{duplicates} duplicate records left out (a case found more than once counts once: its last reading)",
             file=sys.stderr)


_LEFT_OUT_WHOLE = ("empty", "torn")


def _unreadable_lines(left_out: list[tuple[Path, str]]) -> list[str]:
    """The ``path:line: why`` of each line left out as not a case record (not a whole file left out)."""
    return [what for _, what in left_out if what not in _LEFT_OUT_WHOLE]


def _left_out_line(path: Path, what: str) -> str:
    """What a file left out: no case, a torn last line, or a line that is not a case record (``path:line: why``)."""
    if what == "empty":
        return f"bench: {path} holds no case"
    if what == "torn":
        return f"bench: {path}: its last line is cut off (a run killed while writing it): that case is left out"
    return f"bench: {what}; that line is left out"


def _add_merge_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    merge = commands.add_parser("merge", help="combine the results of shards (--bench-shard) into one set")
    merge.add_argument("results", type=Path, nargs="+",
                       help="the shards' results.jsonl files; a case found twice counts once (its last reading)")
    merge.add_argument("-o", "--output", type=Path, default=Path("bench-results"),
                       help="folder for the merged results.jsonl and every report (default: bench-results)")
    merge.set_defaults(run=_merge)


def _merge(options: argparse.Namespace) -> int:
    """Write one results.jsonl from several, each case once in case order, and every report from it.

    The files are read before anything is written, so the output may be one of them.
    """
    read = _read_sets(options.results)
    if read is None:
        return 2
    records, skipped = read
    output: Path = options.output
    ordered = in_case_order(records)
    # suites are named relative to the directory pytest ran in; run bench merge from there
    _say_refused_suites(records)
    aggregates = read_suite_aggregates((r.path for r in records), Path.cwd())
    leaderboards = read_suite_leaderboards((r.path for r in records), Path.cwd())
    try:
        paths = _write_merged(ordered, output, aggregates, leaderboards, skipped)
    except OSError as exc:
        return _cannot_write(exc)
    echo(f"{len(options.results)} result sets, {len(ordered)} cases -> {output / 'results.jsonl'}, "
          f"{', '.join(str(path) for path in paths.values())}")
    return 0


def _add_compare_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = commands.add_parser(
        "compare", help="compare a run with a baseline: compare.md and compare.json; exit 1 when a figure regressed",
        epilog="Each side is a results.jsonl, an output folder holding one, or the name of a named run "
               "(bench-results/runs/NAME). Exit status: 1 when a comparison regressed, 0 otherwise, 2 when the "
               "results cannot be read or compared.")
    compare.add_argument("baseline", help="the results to compare with (a file, a folder or a run's name)")
    compare.add_argument("current", help="the results to judge, named the same ways")
    compare.add_argument("-o", "--output", type=Path, default=None,
                         help="folder for compare.md and compare.json (default: the current results' folder)")
    compare.add_argument("--margin", type=float, default=DEFAULT_MARGIN, metavar="M",
                         help=f"the smallest change that counts, on the 0-1 scale (default {DEFAULT_MARGIN}: 2 points)")
    compare.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, metavar="C",
                         help=f"the intervals' confidence; significant means Holm-adjusted p < 1 - C "
                              f"(default {DEFAULT_CONFIDENCE})")
    compare.set_defaults(run=_compare)


def _compare(options: argparse.Namespace) -> int:
    """Compare the current results with the baseline's, write compare.md and compare.json, print the headline."""
    try:
        settings = CompareSettings(margin=options.margin, confidence=options.confidence)
        paths = [locate_side(text, Path("bench-results")) for text in (options.baseline, options.current)]
    except ValueError as exc:
        echo(f"bench compare: {exc}", file=sys.stderr)
        return 2
    baseline, current = _side(paths[0]), _side(paths[1])
    if baseline is None or current is None:
        return 2
    comparison = _compared(baseline, current, settings, options.output or paths[1].parent)
    if comparison is None:
        return 2
    return 1 if regressions(comparison) else 0


def _compared(baseline: Side, current: Side, settings: CompareSettings, folder: Path) -> dict[str, Any] | None:
    """The comparison, written into ``folder`` and its headline printed; None (the reason printed) when it cannot be."""
    try:
        comparison = compare_sides(baseline, current, settings)
        written = write_comparison(comparison, folder)
    except NothingToCompare as exc:
        echo(f"bench compare: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        echo(f"bench compare: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return None
    for line in [*headline_lines(comparison), f"-> {written['markdown']}, {written['json']}"]:
        echo(line)
    return comparison


def _side(results: Path) -> Side | None:
    """One side's cases, read as ``bench report`` reads results; None (the reason printed) when they cannot be."""
    records = _read([results])
    return None if records is None else Side(str(results), [facts_of(record) for record in records])
def _add_gates_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gates = commands.add_parser("gates", help="judge the suites' quality gates over stored results (merged shards)")
    gates.add_argument("results", type=Path, nargs="+", help="results.jsonl files, as for bench report")
    gates.add_argument("--gate", action="append", default=[], metavar="GATE",
                       help="a gate for every suite, as --bench-gate takes it (repeatable)")
    gates.add_argument("--baseline", default=None, metavar="PATH",
                       help="the run relative gates compare with: a results.jsonl or an output folder")
    gates.set_defaults(run=_gates)


def _gates(options: argparse.Namespace) -> int:
    """Print each gate's verdict; exit 1 when one is broken, 2 when the input cannot be read."""
    records = _read(options.results)
    if records is None:
        return 2
    try:
        extra = [parse_gate_text(text, origin="--gate") for text in options.gate]
        baseline = None
        if options.baseline is not None:
            baseline = read_baseline(resolve_baseline(options.baseline, Path.cwd(), Path.cwd()))
    except ValueError as exc:  # a gate that cannot be read, or a baseline (BaselineError)
        echo(f"bench: {exc}", file=sys.stderr)
        return 2
    # suites are named relative to the directory pytest ran in; run bench gates from there
    _say_refused_suites(records)
    verdicts = judge_stored_results(records, Path.cwd(), extra, baseline)
    for line in verdict_lines(verdicts):
        echo(line)
    return 1 if any(verdict.outcome == "broken" for verdict in verdicts.values()) else 0
def _write_merged(ordered: list[CaseRecord], output: Path, aggregates: Mapping[str, AggregateSpec],
                  leaderboards: Mapping[str, LeaderboardSpec], skipped: Sequence[str] = ()) -> dict[str, Path]:
    """The merged results.jsonl, the conversation logs and every report; their paths."""
    write_atomically(output / "results.jsonl", "".join(encode_record(r.to_dict()) + "\n" for r in ordered),
                     private=True)
    conversations = ConversationLogWriter(output)
    for record in ordered:
        conversations.write(record.to_dict())
    return write_reports(ordered, output, aggregates, leaderboards, skipped=skipped)


def _schema(options: argparse.Namespace) -> int:
    print(json.dumps(suite_schema(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
