"""pytest hooks only: options, collection, scheduling after deselection, reports. Each hook is thin."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from bench_plugin import __version__, hookspecs
from bench_plugin.nodes import CaseItem, SuiteFile
from bench_plugin.options import check_names, read_options, wants_html_report
from bench_plugin.session import STATE_KEY, BenchState
from bench_plugin.suite.discover import SUITE_SUFFIXES, find_suites, looks_like_suite


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bench", "LLM benchmarks (bench_plugin)")
    group.addoption("--bench-models", action="append", default=None, metavar="NAMES",
                    help="models to run, comma-separated: names from the suite or provider:model-id "
                         "(e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, ollama:llama3.2)")
    group.addoption("--bench-runs", type=int, default=None, metavar="N", help="repeat every case N times")
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
    parser.addini("bench_output", "folder for benchmark results", default="bench-results")
    parser.addini("bench_concurrency", "cases in flight at once", default="16")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    options = read_options(config)
    config.stash[STATE_KEY] = BenchState(options.concurrency, options.build, options.expand, config.hook)
    config.addinivalue_line("markers", "bench: every case collected from a bench_plugin suite")
    if hasattr(config, "workerinput"):
        return  # controller only: workers must not write reports
    html_path = wants_html_report(config, options.output_dir)
    if html_path is not None:
        config.option.htmlpath = str(html_path)
        config.option.self_contained_html = True
    # start-up: every pytest run loads this plugin; report writers load only where reports are written
    from bench_plugin.reporter import BenchReporter

    config.pluginmanager.register(BenchReporter(config, options.output_dir), "bench_reporter")
    if getattr(config.option, "htmlpath", None):
        from bench_plugin.report.html import HtmlReportHooks  # start-up: only when an HTML report is written

        config.pluginmanager.register(HtmlReportHooks(), "bench_html")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check names given on the command line once, on the controller.

    Under xdist a worker's usage error would be lost.
    """
    if not hasattr(session.config, "workerinput"):
        paths = [session.config.invocation_params.dir / arg.split("::")[0] for arg in session.config.args]
        state: BenchState = session.config.stash[STATE_KEY]
        check_names(state.expand_options.models, list(state.build_options.base_urls), find_suites(paths))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    if file_path.suffix not in SUITE_SUFFIXES:
        return None
    if parent.session.isinitpath(file_path) or looks_like_suite(file_path):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start work only now, after -k/-m/--lf deselection; xdist workers start each case lazily."""
    state: BenchState = session.config.stash[STATE_KEY]
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    cases = [(item.nodeid, item.prepared) for item in session.items
             if isinstance(item, CaseItem) and item.case.problem is None]
    if cases:
        state.scheduler.plan(cases)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Put the case record on the report as plain data, so it reaches the controller under xdist too."""
    report = yield
    if isinstance(item, CaseItem):
        item.annotate_report(report, call)
    return report


def pytest_report_header(config: pytest.Config) -> str:
    state: BenchState = config.stash[STATE_KEY]
    return f"bench_plugin {__version__}: concurrency {state.concurrency}"
