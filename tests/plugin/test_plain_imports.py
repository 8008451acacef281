"""The plugin's modules load as plain Python, not through pytest's assertion rewriter (start-up cost)."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench_plugin

REPO_ROOT = Path(bench_plugin.__file__).resolve().parents[1]

LOADERS = """\
import sys

import bench_plugin.plugin
import bench_plugin.run.runner


def test_loaders():
    names = ("bench_plugin.plugin", "bench_plugin.run.runner")
    loaders = {name: type(sys.modules[name].__loader__).__name__ for name in names}
    assert loaders == dict.fromkeys(names, "SourceFileLoader"), loaders
"""


def test_plugin_modules_are_not_assertion_rewritten(pytester: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the package on sys.path, as a regular (non-editable) install puts it: pytest's rewriter can find it there
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    pytester.makepyfile(test_loaders=LOADERS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_loaders.py")
    result.assert_outcomes(passed=1)
