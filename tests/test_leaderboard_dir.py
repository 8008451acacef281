"""A leaderboard's ``dir:`` stays inside the output folder: checked when the suite is built, at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.leaderboard import build_leaderboard
from bench_plugin.suite.loader import LoadedSuite, load_suite_text

SUITE = """\
suite: {name}
models:
  a: {{provider: echo}}
  b: {{provider: echo}}
tasks:
  - id: t
    prompt: hi
    scorers:
      - {{name: C, type: contains, value: hi}}
leaderboard:
  of: C
  sessions: cases
"""


def loaded(name: str = "duel", tail: str = "") -> LoadedSuite:
    return load_suite_text(SUITE.format(name=name) + tail, path=Path("duel.yaml"), display_path="suites/duel.yaml")


@pytest.mark.parametrize("folder", ["../escaped", "../../etc", "/tmp/board", "a/../../x", "..", "boards/../..",
                                    "..\\\\x", "C:/board", "//server/share"])
def test_a_dir_that_leads_out_of_the_output_folder_stops_collection_at_its_line(folder: str) -> None:
    suite = loaded(tail=f'  dir: "{folder}"\n')
    with pytest.raises(SuiteError) as caught:
        build_suite(suite)
    message = str(caught.value)
    assert message.startswith("suites/duel.yaml:13: leaderboard.dir: dir ")
    assert "leads out of the output folder" in message and "--bench-output" in message
    assert "hint: give a folder relative to the output folder" in message
    assert "> 13 |   dir:" in message  # the line is quoted


@pytest.mark.parametrize("folder", ["boards/duel", "duel", ".", "", "a/../b", "./x", "x..y", "..hidden"])
def test_a_dir_inside_the_output_folder_is_kept_as_written(folder: str) -> None:
    spec = build_leaderboard(loaded(tail=f'  dir: "{folder}"\n'))
    assert spec is not None and spec.dir == folder


def test_the_default_dir_is_the_suite_name_and_is_checked_too() -> None:
    spec = build_leaderboard(loaded())
    assert spec is not None and spec.dir == "duel"
    with pytest.raises(SuiteError) as caught:
        build_suite(loaded(name=".."))
    assert str(caught.value).startswith(
        "suites/duel.yaml:1: suite: the suite's name '..', the leaderboard's dir by default, leads out of the output "
        "folder")
