"""The baseline a run is compared with at its end: ``--bench-baseline`` and the ini key ``bench_baseline``.

``plugin/__init__.py`` declares them through ``add_baseline_options``; ``plugin/options/__init__.py`` reads them
through ``read_baseline``, which finds the baseline's results file before the session writes any of its own (the
baseline may be the very folder the run writes to).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.report.compare.sides import SideNotFound, locate_side


def add_baseline_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """Declare ``--bench-baseline`` in the ``bench`` group, and its ini key."""
    group.addoption("--bench-baseline", default=None, metavar="BASELINE",
                    help="compare the run with these results at its end (a results.jsonl, an output folder or a "
                         "named run's name): <output>/compare.md and compare.json; a regression fails the session")
    parser.addini("bench_baseline", "results every run is compared with at its end (like --bench-baseline; "
                  "relative to the rootdir)", default="")


def read_baseline(config: pytest.Config, output: Path) -> Path | None:
    """The baseline's results file, or None when no baseline is given.

    The option is relative to where pytest was started, the ini key to the rootdir; a bare name stands for the
    named run ``<output>/runs/NAME``.

    Raises:
        pytest.UsageError: nothing of that name.
    """
    text, base, source = config.getoption("bench_baseline", None), config.invocation_params.dir, "--bench-baseline"
    if text is None:
        text, base, source = str(config.getini("bench_baseline")), config.rootpath, "ini option bench_baseline"
    if not text:
        return None
    try:
        return locate_side(text, output, base)
    except SideNotFound as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None
