"""pytest hooks only: options, collection, scheduling after deselection, reports. Each hook is thin."""

from __future__ import annotations

import atexit
import functools
import gc
import signal
import threading
from collections import Counter
from collections.abc import Generator, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bench_plugin.plugin import startup  # noqa: F401  (start-up: before our other modules load)

# isort: split
from bench_plugin import __version__
from bench_plugin.calls.cache import cache_problem
from bench_plugin.calls.run_status import RunStatus
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.plugin import hookspecs
from bench_plugin.plugin.failure_summary import register_failure_summary
from bench_plugin.plugin.gate_items import GATE_MARKER, JUDGE_KEY, gates_last
from bench_plugin.plugin.gate_judge import GateJudge
from bench_plugin.plugin.nodes import CaseItem, SuiteFile
from bench_plugin.plugin.options import args_name_suites, check_names, read_options, wants_html_report
from bench_plugin.plugin.options.baseline import add_baseline_options
from bench_plugin.plugin.options.calls import add_call_options
from bench_plugin.plugin.options.controls import ControlOptions, add_control_options
from bench_plugin.plugin.options.env_file import ENV_FILE_KEY, env_file_path, load_env_file
from bench_plugin.plugin.options.first_cases import first_cases
from bench_plugin.plugin.options.quality_gates import GATE_SETTINGS_KEY, add_gate_options, read_gate_settings
from bench_plugin.plugin.options.runs import add_run_options, load_history
from bench_plugin.plugin.progress import register_progress
from bench_plugin.plugin.sandbox_notice import SandboxNotice
from bench_plugin.plugin.session import STATE_KEY, SUITE_TASKS_OUTPUT, BenchState
from bench_plugin.plugin.xdist_progress import distributes
from bench_plugin.providers.http import allow_open_files
from bench_plugin.results.journal import journal_path
from bench_plugin.run.shards import share_from_workerinput, split_shard, worker_share
from bench_plugin.suite.agent.spec import DEFAULT_SANDBOX_IMAGE, SANDBOX_BACKENDS
from bench_plugin.suite.discover import SUITE_SUFFIXES, find_suites, looks_like_suite
from bench_plugin.suite.spec import CaseSpec

if TYPE_CHECKING:  # start-up: imported when a baseline is given (``_read_baseline``)
    from bench_plugin.plugin.baseline import BaselineComparison


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bench", "LLM benchmarks (bench_plugin)")
    group.addoption("--bench-models", action="append", default=None, metavar="NAMES",
                    help="models to run, comma-separated: names from the suite or provider:model-id "
                         "(e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, ollama:llama3.2)")
    group.addoption("--bench-runs", type=int, default=None, metavar="N", help="repeat every case N times")
    group.addoption("--bench-load", default=None, metavar="in_flight=N,...|rate=R,...",
                    help="a latency benchmark's load steps, over the suites' load: every case runs once per step, "
                         "e.g. in_flight=8,32,128 (cases at once) or rate=1,2,4 (cases started a second)")
    group.addoption("--bench-concurrency", type=int, default=None, metavar="N",
                    help="cases in flight at once (default: ini bench_concurrency, 16)")
    group.addoption("--bench-output", default=None, metavar="DIR",
                    help="folder for results.jsonl, report.md, summary.json and report.html "
                         "(default: ini bench_output, bench-results)")
    group.addoption("--bench-judge", default=None, metavar="PROVIDER:MODEL",
                    help="judge every llm_judge scorer with this model instead of the suite's judges")
    group.addoption("--bench-base-url", action="append", default=[], metavar="PROVIDER=URL",
                    help="point a provider at another endpoint, e.g. vllm=http://gpu-box:8000/v1")
    group.addoption("--bench-html", default=None, metavar="PATH|off",
                    help="HTML report path (default: <output>/report.html when suites are run)")
    group.addoption("--bench-sandbox", default=None, choices=SANDBOX_BACKENDS,
                    help="where agent commands run, over the suites' sandbox: (default auto: bubblewrap, else "
                         "landlock (Linux namespaces and Landlock), else seatbelt (macOS), else a container "
                         "engine); none runs them without isolation, and every report says so")
    group.addoption("--bench-sandbox-image", default=None, metavar="IMAGE",
                    help=f"image of the container sandbox, present locally (default {DEFAULT_SANDBOX_IMAGE})")
    group.addoption("--bench-shard", default=None, metavar="I/N",
                    help="run only shard I of N (e.g. 2/3): each case belongs to one shard by its node id, "
                         "the others are deselected; combine the shards' results with bench merge")
    group.addoption("--bench-allow-path", action="append", default=[], metavar="DIR",
                    help="let suites read files in DIR too (datasets, prompts, replays, workspace copies); "
                         "by default a suite reads only inside its own folder (repeatable)")
    group.addoption("--bench-allow-key-env", action="append", default=[], metavar="NAME",
                    help="let suites send the environment variable NAME as an API key to the endpoints they "
                         "declare (repeatable); built-in providers' keys go only to their own hosts without it")
    add_call_options(group)
    add_control_options(group)
    add_run_options(group)
    add_baseline_options(group, parser)
    add_gate_options(group, parser)
    parser.addini("bench_output", "folder for benchmark results", default="bench-results")
    parser.addini("bench_allow_paths", "folders suites may read besides their own (like --bench-allow-path)",
                  type="paths", default=[])
    parser.addini("bench_allow_key_env", "key variables suites may send (like --bench-allow-key-env)",
                  type="args", default=[])
    parser.addini("bench_concurrency", "cases in flight at once", default="16")
    parser.addini("bench_allow_no_sandbox", "let suites run agent commands without a sandbox (their sandbox: none); "
                  "--bench-sandbox none does it for every suite", type="bool", default=False)


CONTROLS_KEY = pytest.StashKey[ControlOptions]()
FROZEN_KEY = pytest.StashKey[bool]()  # the session's items were taken out of the garbage collector's way
REPEATED_KEY = pytest.StashKey[frozenset[int]]()  # ids of the items the session runs more than once


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """Read ``.env`` before any conftest.py is imported; give pytest-asyncio's loop scope a default.

    ``pip install bench_plugin[dev]`` brings pytest-asyncio, which warns in every run that does not set
    ``asyncio_default_fixture_loop_scope``; users running their suites should not see our packaging.
    Declaring the option again changes only its default: an ini file or ``-o`` still wins.
    """
    choice = getattr(early_config.known_args_namespace, "bench_env_file", None)
    path = env_file_path(choice, early_config.rootpath, early_config.invocation_params.dir)
    if path is not None:
        early_config.stash[ENV_FILE_KEY] = load_env_file(path)
    if early_config.pluginmanager.hasplugin("asyncio"):
        parser.addini("asyncio_default_fixture_loop_scope", "default scope of the asyncio event loop of async "
                      "fixtures (bench_plugin: function, pytest-asyncio's coming default, when unset)",
                      default="function")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    options = read_options(config)
    baseline = _read_baseline(config, options.baseline)  # before a fresh named run deletes what it compares with
    calls = options.calls
    # progress on the terminal of the process that shows results; an xdist worker sends it there
    calls = replace(calls, on_wait=register_progress(config, calls.status))
    run = options.run
    if run.name is not None and run.results is not None:  # each finished case saved at once (journal.py)
        calls = replace(calls, journal=journal_path(run.results))
    history = load_history(run, controller=not hasattr(config, "workerinput"), collect_only=config.option.collectonly)
    config.stash[STATE_KEY] = BenchState(options.concurrency, options.build, options.expand, config.hook,
                                         shard=options.shard, calls=calls, history=history)
    config.stash[CONTROLS_KEY] = options.controls
    config.addinivalue_line("markers", "bench: every case collected from a bench_plugin suite")
    config.addinivalue_line("markers", f"{GATE_MARKER}: every quality gate of a bench_plugin suite")
    config.stash[GATE_SETTINGS_KEY] = read_gate_settings(config)
    too_few_files = allow_open_files(options.concurrency)  # each process: an xdist worker holds its own sockets
    if too_few_files is not None:
        raise pytest.UsageError(too_few_files)
    if hasattr(config, "workerinput"):
        _stop_calls_on_ctrl_c(config, calls.status)  # an xdist worker gets the terminal's Ctrl-C too
        return  # controller only: workers must not write reports
    config.add_cleanup(functools.partial(_thaw, config))
    names_suites = args_name_suites(config)  # reads the folders' YAML files: once
    if names_suites:
        _stop_calls_on_ctrl_c(config, calls.status)
        _stop_on_sigterm(config, calls.status)
    if distributes(config):
        # start-up: imports xdist's schedulers, only in the process that distributes
        from bench_plugin.plugin.xdist_schedule import BenchDistribution, wants_bench_distribution

        if wants_bench_distribution(config):
            config.pluginmanager.register(BenchDistribution(window=options.concurrency), "bench_distribution")
    html_path = wants_html_report(config, options.output_dir, names_suites)
    if html_path is not None:
        config.option.htmlpath = str(html_path)
        config.option.self_contained_html = True
    # start-up: every pytest run loads this plugin; report writers load only where reports are written
    from bench_plugin.plugin.reporter import BenchReporter

    problem = cache_problem(calls.cache_dir, calls.cache_mode) if names_suites and calls.cache_dir else None
    config.pluginmanager.register(BenchReporter(config, options.output_dir, cache_problem=problem, baseline=baseline),
                                  "bench_reporter")
    config.pluginmanager.register(SandboxNotice(), "bench_sandbox_notice")
    register_failure_summary(config)  # pytest's failure summary kept linear
    judge = GateJudge(config, config.stash[GATE_SETTINGS_KEY])  # the controller sees every record (gate_judge.py)
    if baseline is not None:  # relative gates compare with the records the comparison read at the start
        judge.use_baseline(baseline.by_nodeid)
    config.stash[JUDGE_KEY] = judge
    config.pluginmanager.register(judge, "bench_gate_judge")
    if getattr(config.option, "htmlpath", None):
        from bench_plugin.report.html import HtmlReportHooks  # start-up: only when an HTML report is written

        config.pluginmanager.register(HtmlReportHooks(), "bench_html")


def _read_baseline(config: pytest.Config, results: Path | None) -> BaselineComparison | None:
    """The baseline's cases, read now by the process that writes the reports (the run may write over them)."""
    if results is None or hasattr(config, "workerinput") or config.option.collectonly:
        return None
    # start-up: the comparison imports numpy and the statistics, only when a baseline is given
    from bench_plugin.plugin.baseline import BaselineComparison

    return BaselineComparison(results)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the runner, collect what the session left once, and set the survivors aside, before pytest collects twice.

    pytest's unconfigure and its cleanup each run a full ``gc.collect`` (unraisable exceptions in finalizers):
    after a run, each walked every object the cases made (about 18 ms for 1000 cases). This one collection,
    after the runner's loop and connections are closed, finds the same garbage (pytest's hook, still in place,
    reports the errors of its finalizers), and pytest's two walk only what the end of the session made since.
    """
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()
    if config.stash.get(FROZEN_KEY, False):
        gc.collect()
        gc.freeze()
    elif hasattr(config, "workerinput"):
        # an xdist worker's process ends now, and the controller waits for it: spare it the interpreter's
        # final garbage collection over every item and record (about a second for 1000 cases)
        gc.freeze()


def _stop_calls_on_ctrl_c(config: pytest.Config, status: RunStatus) -> None:
    """Ctrl-C stops the runner's calls the moment it comes, not when pytest has unwound to closing the runner.

    Between the two, the end of the session (its reports) took long enough for 16 to 60 more calls to start,
    which a resumed run then paid for again. Only where Python's own handler is in place; put back at the end.
    """
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def interrupt(signum: int, frame: Any) -> None:
        status.stop_calls()
        signal.default_int_handler(signum, frame)

    def restore() -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, interrupt)
    config.add_cleanup(restore)


def _stop_on_sigterm(config: pytest.Config, status: RunStatus) -> None:
    """SIGTERM (a cancelled CI job, ``docker stop``) stops the run as Ctrl-C does: the finished cases are reported.

    By default it ended the process at once: results.jsonl kept every finished case, but no report was written.
    Only where nothing else handles SIGTERM; put back when the session ends.
    """
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        return

    def interrupt(signum: int, frame: object) -> None:
        status.stop_calls()  # at once, as for Ctrl-C
        raise KeyboardInterrupt(f"stopped by SIGTERM (signal {signum})")

    def restore() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    signal.signal(signal.SIGTERM, interrupt)
    config.add_cleanup(restore)


@functools.cache  # once per process, however many sessions run in it
def _freeze_at_exit() -> None:
    atexit.register(gc.freeze)


def _thaw(config: pytest.Config) -> None:
    """Make what the session left collectable again: the process may go on (pytester runs pytest again and again).

    A cleanup registered in ``pytest_configure``, so it runs after pytest's own cleanups, whose ``gc.collect``
    (unraisable exceptions) would otherwise scan every item again (about 0.05 s for 1000 cases). When the
    process ends, its final collection over every item, report and record is spared too (about 0.45 s for
    1000 cases): at exit nothing is left to free, as in an xdist worker (``pytest_unconfigure``). A session
    without cases (a project's own tests) leaves the collector as it was.
    """
    if config.stash.get(FROZEN_KEY, False):
        gc.unfreeze()
        _freeze_at_exit()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check names given on the command line once, on the controller.

    Under xdist a worker's usage error would be lost. Only a run that names models, base URLs or a judge looks for
    the suites: every other pytest run in the environment would walk its folders for nothing.
    """
    config = session.config
    state: BenchState = config.stash[STATE_KEY]
    names, base_urls = state.expand_options.models, list(state.build_options.base_urls)
    limited = list(state.calls.provider_limits), list(state.calls.model_limits)
    judge = state.build_options.judge
    if not hasattr(config, "workerinput") and (names or base_urls or any(limited) or judge):
        paths = [config.invocation_params.dir / arg.split("::")[0] for arg in config.args]
        check_names(names, base_urls, find_suites(paths, config.getini("norecursedirs")), *limited, judge=judge)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collect with the garbage collector paused: collection makes objects that live to the end, and no garbage.

    Each item, its spec and its scorers stay until the session ends, so the collector's automatic passes
    while they are made find nothing to free and walk them all again, ever longer (10,000 cases: four
    full passes, 0.25 s of a 1.5 s collection; measured leftovers: a few dozen objects). It runs again
    once collection is over, and ``pytest_collection_finish`` freezes the items before cases run.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if enabled:
            gc.enable()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    if file_path.suffix not in SUITE_SUFFIXES:
        return None
    if parent.session.isinitpath(file_path) or looks_like_suite(file_path):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--bench-limit, then --bench-shard: deselect the cases past the limit, then those of other shards; gates last.

    Both run after -k/-m/--lf, so the limit counts the selected cases and the shards split what is left.
    """
    limit = config.stash[CONTROLS_KEY].limit
    if limit is not None:
        items[:], deselected = first_cases(items, limit, lambda i: (
            (i.nodeid.split("::")[0], i.case.model_name, i.case.task) if isinstance(i, CaseItem) else None))
        if deselected:
            config.hook.pytest_deselected(items=deselected)
    shard = config.stash[STATE_KEY].shard
    if shard is not None:
        items[:], deselected = split_shard(items, shard, lambda i: i.nodeid, lambda i: isinstance(i, CaseItem))
        if deselected:
            config.hook.pytest_deselected(items=deselected)
    items[:] = gates_last(items)  # a quality gate reads the cases: in one process it runs after them all


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start work only now, after -k/-m/--lf deselection.

    An xdist worker starts the share the controller gave it (see ``xdist_schedule.py``); without
    one (an explicit ``--dist``) it starts each case when it runs it.
    """
    state: BenchState = session.config.stash[STATE_KEY]
    if session.config.option.collectonly:
        if session.items:  # nothing runs: only pytest's cleanups, whose gc.collect() would walk every item twice
            _freeze(session.config)
        return
    items = session.items
    session.config.stash[REPEATED_KEY] = repeated(items)
    if hasattr(session.config, "workerinput"):
        if state.suite_tasks:  # the controller collects nothing: it learns the suites' tasks from a worker
            session.config.workeroutput[SUITE_TASKS_OUTPUT] = {  # type: ignore[attr-defined]
                path: sorted(tasks) for path, tasks in state.suite_tasks.items()}
        share = share_from_workerinput(session.config.workerinput)
        if share is None:
            return
        items = [items[index] for index in worker_share([item.nodeid for item in items], *share)]
    # reused cases call no model; re-judged ones score their stored transcript (nodes.py)
    cases = [(item.nodeid, prepared) for item in items
             if isinstance(item, CaseItem) and (prepared := item.to_run()) is not None]
    if cases:
        # the items and specs live to the end of the session: out of the garbage collector's way, whose full
        # passes would scan them again and again while the cases run (half their cost, a tenth of all CPU)
        _freeze(session.config)
        _fit_load(state, cases)
        state.runner.declare(called_endpoints(prepared.spec for _, prepared in cases))
        state.scheduler.plan(cases)


def _fit_load(state: BenchState, cases: Iterable[tuple[str, Any]]) -> None:
    """Raise the session's concurrency to the largest ``in_flight`` step of the cases, before the runner starts."""
    most = max((step.in_flight or 0 for _, case in cases if (step := case.spec.load) is not None), default=0)
    if most <= state.concurrency:
        return
    too_few_files = allow_open_files(most)
    if too_few_files is not None:
        pytest.exit(f"load step in_flight={most}: {too_few_files}", returncode=pytest.ExitCode.USAGE_ERROR)
    state.concurrency = most


def called_endpoints(cases: Iterable[CaseSpec]) -> set[ProviderSpec]:
    """The endpoints of the models, judges and conversation partners the cases call (``Runner.declare``)."""
    found: set[ProviderSpec] = set()
    for case in cases:
        models = [case.model, *case.judges.values()]
        if case.conversation is not None:
            models += [participant.model for participant in case.conversation.participants]
        found.update(model.provider for model in models if model is not None)
    return found


def repeated(items: list[pytest.Item]) -> frozenset[int]:
    """The ids of the items listed more than once (a plugin repeating them): they must keep their case."""
    return frozenset(key for key, times in Counter(map(id, items)).items() if times > 1)


def _freeze(config: pytest.Config) -> None:
    """Set every object made so far aside from the collector, until ``_thaw`` at the end of the session."""
    gc.freeze()
    config.stash[FROZEN_KEY] = True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """Once a case's item ran (reruns included: a plugin running them does so inside this hook), let its case go.

    An item listed twice (a plugin repeating items) keeps it: it runs again.
    """
    try:
        return (yield)
    finally:
        if isinstance(item, CaseItem) and id(item) not in item.config.stash.get(REPEATED_KEY, ()):
            item.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Put the case record on the report as plain data, so it reaches the controller under xdist too."""
    report = yield
    if isinstance(item, CaseItem):
        item.annotate_report(report, call)
    return report


def pytest_report_header(config: pytest.Config) -> list[str]:
    state: BenchState = config.stash[STATE_KEY]
    shard = f", shard {state.shard} (--bench-shard)" if state.shard is not None else ""
    lines = [f"bench_plugin {__version__}: concurrency {state.concurrency}{shard}"]
    run = state.history.settings
    if run.name is not None or run.rejudge:  # what the session continues (run_history.py)
        what = f"run {run.name}" if run.name is not None else "re-judging"
        lines.append(f"bench_plugin: {what}: {len(state.history)} earlier case records in {run.results}")
    controls = config.stash[CONTROLS_KEY].describe()
    if controls:
        lines.append(f"bench_plugin: {controls}")
    env_file = config.stash.get(ENV_FILE_KEY, None)
    if env_file is not None:
        lines.append(f"bench_plugin: {env_file.describe()}")
    if config.getoption("bench_sandbox", None) == "none":
        lines.append("bench_plugin: agent commands run WITHOUT a sandbox (--bench-sandbox none): they can read "
                     "this machine's files and pytest's environment")
    return lines
