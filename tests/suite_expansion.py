"""Suites written to a temporary folder and expanded to cases, for the unit tests of the suite layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.spec import CaseSpec


def expand(text: str, tmp_path: Path, files: dict[str, str] | None = None) -> list[CaseSpec]:
    """The cases of the suite ``text``, saved as ``demo.yaml`` beside ``files`` (name -> content)."""
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    loaded = load_suite_text(text, path=path, display_path="suites/demo.yaml")
    return expand_suite(build_suite(loaded, BuildOptions()))


def build_error(text: str, tmp_path: Path) -> str:
    """The message of the suite error that building ``text`` raises."""
    with pytest.raises(SuiteError) as info:
        expand(text, tmp_path)
    return str(info.value)
