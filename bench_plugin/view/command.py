"""``bench view``'s options and what the command does with them (``cli.py`` only adds the command)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_plugin.core.text_safety import echo
from bench_plugin.view.runs import find_runs
from bench_plugin.view.server import LOOPBACK, serve_view
from bench_plugin.view.site import Site
from bench_plugin.view.static import write_static

DEFAULT_OUTPUT = Path("bench-results")
MAX_PORT = 65535


def add_view_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``bench view`` among the ``bench`` commands."""
    view = commands.add_parser(
        "view", help="browse runs in the browser: runs, cases, two runs or models compared",
        epilog="Each path is a results.jsonl, an output folder (its results and every named run under runs/), or a "
               "named run's name. The server listens on 127.0.0.1 and reads only the runs given.")
    view.add_argument("paths", nargs="*", default=[str(DEFAULT_OUTPUT)],
                      help="runs to serve (default: bench-results)")
    view.add_argument("--port", type=_port, default=0, help="the port to listen on (default: a free one)")
    view.add_argument("--host", default=None,
                      help="the address to listen on instead of 127.0.0.1 (anyone who reaches it reads the runs)")
    view.add_argument("--no-open", action="store_true", help="do not open the browser")
    view.add_argument("--static", type=Path, default=None, metavar="DIR",
                      help="write the pages as files into DIR (a CI artifact) instead of serving them")
    view.set_defaults(run=run_view)


def _port(text: str) -> int:
    """A port number, 0 to 65535 (0: a free one)."""
    if not text.isdigit() or int(text) > MAX_PORT:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to {MAX_PORT}, got {text!r}")
    return int(text)


def run_view(options: argparse.Namespace) -> int:
    """Serve the runs (or write them with ``--static``); 2 when they cannot be found or served."""
    try:
        sources = find_runs(options.paths, DEFAULT_OUTPUT)
    except ValueError as exc:
        echo(f"bench view: {exc}", file=sys.stderr)
        return 2
    site = Site(sources, Path.cwd(), static=options.static is not None)
    try:
        if options.static is not None:
            count = write_static(site, options.static)
            echo(f"bench view: {count} pages of {len(sources)} run(s) -> {options.static / 'index.html'}")
            return 0
        if options.host is not None:
            echo(f"bench view: warning: listening on {options.host}: anyone who can reach it reads these runs' "
                 "prompts and outputs", file=sys.stderr)
        serve_view(site, host=options.host or LOOPBACK, port=options.port, open_browser=not options.no_open,
                   announce=echo)
    except OSError as exc:
        echo(f"bench view: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
