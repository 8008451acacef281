"""The options that name a run and say what a session continues: resume, retry errors, start over, re-judge.

``plugin/__init__.py`` declares them through ``add_run_options`` and ``plugin/options/__init__.py`` reads them through
``read_run_settings``, which also moves the output folder of a named run to ``<output>/runs/NAME``.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest

from bench_plugin.core.private_files import LINK_REFUSED, refuse_links
from bench_plugin.core.text_safety import log_line
from bench_plugin.results.journal import absorb_left_journals, delete_journals, journals
from bench_plugin.results.rejected import earlier_set_aside, set_aside_bad_lines
from bench_plugin.results.store import keep_each_case_once
from bench_plugin.run.run_history import RunHistory, RunSettings

RUNS_FOLDER = "runs"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def add_run_options(group: pytest.OptionGroup) -> None:
    """Declare the run options in the ``bench`` group."""
    group.addoption("--bench-run", default=None, metavar="NAME",
                    help="a named run, kept in <output>/runs/NAME: each finished case is saved at once, and running "
                         "the same run again skips the cases it finished (reporting them again)")
    group.addoption("--bench-retry-errors", action="store_true", default=False,
                    help="with --bench-run: run again the cases that ended in an infrastructure error")
    group.addoption("--bench-fresh", action="store_true", default=False,
                    help="with --bench-run: forget the run's earlier results and start over")
    group.addoption("--bench-rejudge", action="store_true", default=False,
                    help="score the selected cases' stored transcripts again (the run's, or <output>'s results.jsonl) "
                         "without calling the models under test; judges are called, earlier scores are kept in "
                         "each record's judgments")


def read_run_settings(config: pytest.Config, output_dir: Path) -> tuple[RunSettings, Path]:
    """Check the run options; returns them and the session's output folder (a named run's own).

    Raises:
        pytest.UsageError: naming the option and what is wrong.
    """
    name = config.getoption("bench_run", None)
    fresh = bool(config.getoption("bench_fresh", False))
    retry = bool(config.getoption("bench_retry_errors", False))
    rejudge = bool(config.getoption("bench_rejudge", False))
    _check_run_flags(name, fresh, retry, rejudge)
    if name is not None:
        output_dir = output_dir / RUNS_FOLDER / name
        _refuse_planted_links(output_dir.parent, output_dir)
    results = output_dir / "results.jsonl"
    if rejudge and not config.option.collectonly:
        _check_results_to_rejudge(results, name, output_dir)
    last_failed = bool(config.getoption("lf", False))
    settings = RunSettings(name=name, results=results, fresh=fresh, retry_errors=retry, rejudge=rejudge,
                           keep_earlier=not fresh and (name is not None or rejudge or last_failed))
    return settings, output_dir


def _refuse_planted_links(*folders: Path) -> None:
    """``runs`` and ``runs/NAME`` as links (a repository may commit them) would take the run's files elsewhere."""
    try:
        refuse_links(*folders)
    except OSError as exc:
        raise pytest.UsageError(f"--bench-run: {log_line(exc.filename)} {LINK_REFUSED}") from exc


def _check_run_flags(name: str | None, fresh: bool, retry: bool, rejudge: bool) -> None:
    if name is not None and not _NAME.fullmatch(name):
        raise pytest.UsageError(f"--bench-run: expected a name of letters, digits, '.', '_' or '-' (at most 100, "
                                f"starting with a letter or digit), got {name!r}")
    for flag, given in (("--bench-fresh", fresh), ("--bench-retry-errors", retry)):
        if given and name is None:
            raise pytest.UsageError(f"{flag} applies to a named run: add --bench-run NAME")
    if rejudge and (fresh or retry):
        flag = "--bench-fresh" if fresh else "--bench-retry-errors"
        raise pytest.UsageError(f"--bench-rejudge scores stored transcripts again; it cannot be combined with {flag}")


def _check_results_to_rejudge(results: Path, name: str | None, output_dir: Path) -> None:
    if not results.is_file() and not journals(results):
        where = f"run {name!r}" if name is not None else str(output_dir)
        raise pytest.UsageError(f"--bench-rejudge: no stored results to re-judge: {results} does not exist; run the "
                                f"suites first (the {where} results are re-judged)")


def load_history(settings: RunSettings, *, controller: bool = True, collect_only: bool = False) -> RunHistory:
    """The run's earlier records, indexed.

    The controller first folds into a named run's results what the journals of a killed session hold (its
    cases that finished ahead of pytest's order, ``journal.py``); with ``--bench-fresh`` it removes them and
    the run's results.jsonl at once (left to the first case's record, a session killed before it kept the old
    records, which the next resume took for its own). It runs before the xdist workers start, which read the
    file too.

    A line of the results file that is not a case record is moved to results.rejected.jsonl (``rejected.py``):
    its case runs again, and the history keeps the line's ``path:line: why`` for the warnings and the reports (and
    counts the lines earlier sessions set aside there, which the reports count too).

    Raises:
        pytest.UsageError: the results file cannot be read or written.
    """
    try:
        if controller and settings.name is not None and settings.results is not None:
            if settings.fresh and not collect_only:
                delete_journals(settings.results)
                settings.results.unlink(missing_ok=True)
            elif not settings.fresh:
                absorb_left_journals(settings.results)
        continued = settings.name is not None or settings.rejudge
        set_aside: list[str] = []
        before: list[str] = []
        if controller and continued and settings.results is not None and not settings.fresh and not collect_only:
            set_aside = set_aside_bad_lines(settings.results)  # each named when the session ends, and counted
            before = earlier_set_aside(settings.results, fresh=len(set_aside))  # counted in the reports too
            keep_each_case_once(settings.results)  # before the history notes where each case's line is
        return RunHistory.load(settings, set_aside, before)
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"bench: cannot continue the earlier results: {exc}; {_what_to_do(exc)}") from None


def _what_to_do(exc: Exception) -> str:
    """A full disk is not the records' fault: starting over (--bench-fresh) would throw them away for nothing."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space and run the same command again (the run's records and journals are kept)"
    return "start over with --bench-fresh or choose another --bench-run NAME"
