"""A registry hands out what importing the implementation's module gives now, also after that module was dropped."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from bench_plugin.core.registry import Registry


def test_an_implementation_is_loaded_once_while_its_module_stays(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "registry_demo_kept.py").write_text("class Thing:\n    pass\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    things: Registry[object] = Registry("thing", "bench_plugin.tests_none", {"t": "registry_demo_kept:Thing"},
                                        lambda value: value)
    assert things.get("t") is things.get("t") is importlib.import_module("registry_demo_kept").Thing


def test_an_implementation_whose_module_was_dropped_is_loaded_again(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # pytester's in-process runs drop the modules a run imported: a late import then makes a new module, and the
    # registry must hand out that module's class, not the one it kept, or isinstance checks between them fail
    (tmp_path / "registry_demo_dropped.py").write_text("class Thing:\n    pass\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    things: Registry[object] = Registry("thing", "bench_plugin.tests_none", {"t": "registry_demo_dropped:Thing"},
                                        lambda value: value)
    first = things.get("t")
    monkeypatch.delitem(sys.modules, "registry_demo_dropped")
    again = things.get("t")
    assert again is not first
    assert again is importlib.import_module("registry_demo_dropped").Thing
