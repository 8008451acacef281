"""Outputs never follow links we did not make: results.jsonl, runs/NAME, journals and the cache refuse them.

A repository can commit ``bench-results/results.jsonl`` (or ``runs/NAME``, the cache folder) as a symbolic link
to a file of the user's; a plain ``pytest`` must not overwrite the link's target. What we make is readable by
its owner only: files 0600, folders 0700.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from bench_plugin.calls.cache import DB_NAME, ResponseCache, cache_key, cache_problem
from bench_plugin.core.chat import Completion, CompletionRequest, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.private_files import LINK_REFUSED
from bench_plugin.results.journal import CaseJournal
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import ResultsStore

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links and file modes are POSIX")

SUITE = """
suite: links
models:
  parrot: {provider: echo}
tasks:
  - {id: t, prompt: "Say hi to Ada"}
scorers:
  - {type: contains, value: Ada}
"""
MODEL = ModelSpec("m", ProviderSpec("mock", "openai_compatible", "http://127.0.0.1:9/v1", "BENCH_TEST_KEY"), "m", "M")
VICTIM_TEXT = "the user's own file\n"


def victim(root: Path) -> Path:
    path = root / "victim.txt"
    path.write_text(VICTIM_TEXT, encoding="utf-8")
    return path


def a_record() -> CaseRecord:
    golden = Path(__file__).parents[1] / "golden" / "pairwise_two_cases.jsonl"
    return CaseRecord.from_dict(json.loads(golden.read_text(encoding="utf-8").splitlines()[0]))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_planted_results_jsonl_link_is_refused_by_name_and_its_target_kept(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/links": SUITE})
    target = victim(pytester.path)
    pytester.mkdir("bench-results").joinpath("results.jsonl").symlink_to(target)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    output = "\n".join(result.outlines + result.errlines)
    assert target.read_text(encoding="utf-8") == VICTIM_TEXT
    assert "INTERNALERROR" not in output and "Traceback" not in output and result.ret != 0
    assert f"bench-results/results.jsonl: {LINK_REFUSED}" in output, output


def test_a_planted_named_run_folder_link_is_refused_before_anything_runs(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/links": SUITE})
    elsewhere = pytester.mkdir("elsewhere")
    pytester.mkdir("bench-results").joinpath("runs").mkdir()
    (pytester.path / "bench-results" / "runs" / "nightly").symlink_to(elsewhere, target_is_directory=True)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-run", "nightly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--bench-run: *bench-results/runs/nightly {LINK_REFUSED}*"])
    assert list(elsewhere.iterdir()) == []


def test_results_jsonl_and_its_folder_are_private(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "out" / "results.jsonl")
    store.open()
    store.append(a_record().to_dict())
    store.finalize()
    assert mode(tmp_path / "out") == 0o700 and mode(tmp_path / "out" / "results.jsonl") == 0o600


def test_a_journal_link_is_not_written_through(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    target = victim(tmp_path)
    journal_file = tmp_path / "results.jsonl.123.journal"
    journal_file.symlink_to(target)
    journal = CaseJournal(journal_file)
    journal.write(a_record())
    journal.close()
    assert target.read_text(encoding="utf-8") == VICTIM_TEXT
    assert LINK_REFUSED in caplog.text and str(journal_file) in caplog.text


def stored_answer(folder: Path) -> str:
    cache = ResponseCache(folder)
    key = cache_key(CompletionRequest(MODEL, (Message("user", "hi"),)))
    cache.put(key, Completion("hello", Usage(1, 1)), "mock", "m")
    cache.close()
    return key


def test_the_cache_is_made_private(tmp_path: Path) -> None:
    stored_answer(tmp_path / "cache")
    assert mode(tmp_path / "cache") == 0o700 and mode(tmp_path / "cache" / DB_NAME) == 0o600
    assert mode(tmp_path / "cache" / ".gitignore") == 0o600


def test_a_planted_cache_file_or_folder_link_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    target = victim(tmp_path)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / DB_NAME).symlink_to(target)
    assert cache_problem(tmp_path / "cache", "on") == f"{tmp_path / 'cache' / DB_NAME} {LINK_REFUSED}"
    stored_answer(tmp_path / "cache")
    assert target.read_text(encoding="utf-8") == VICTIM_TEXT
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere, target_is_directory=True)
    assert cache_problem(tmp_path / "linked", "on") == f"{tmp_path / 'linked'} {LINK_REFUSED}"
    stored_answer(tmp_path / "linked")
    assert list(elsewhere.iterdir()) == []


def test_a_runs_output_folder_and_results_are_private(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/links": SUITE})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    output = pytester.path / "bench-results"
    assert mode(output) == 0o700 and mode(output / "results.jsonl") == 0o600


BOARD_SUITE = """
suite: board
models:
  a: {provider: echo}
  b: {provider: echo}
tasks:
  - id: t
    prompt: hi
    scorers: [{name: C, type: contains, value: hi}]
leaderboard: {of: C, sessions: cases, dir: boards/elo}
"""


@pytest.mark.parametrize("planted", ["boards", "boards/elo", "boards/elo/leaderboard.json"])
def test_a_planted_leaderboard_link_is_refused_by_name_and_its_target_kept(
    pytester: pytest.Pytester, planted: str
) -> None:
    """An earlier run's (or a repository's) leaderboard folder or file as a link was read and written through."""
    pytester.makefile(".yaml", **{"suites/board": BOARD_SUITE})
    elsewhere = pytester.mkdir("elsewhere")
    (elsewhere / "elo").mkdir()
    own = elsewhere / "elo" / "leaderboard.json"
    own.write_text(VICTIM_TEXT, encoding="utf-8")
    link = pytester.path / "bench-results" / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to({"boards": elsewhere, "boards/elo": elsewhere / "elo"}.get(planted, own))
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    output = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    assert f"bench-results/{planted}: {LINK_REFUSED}" in output, output
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["elo", "leaderboard.json"]
    assert own.read_text(encoding="utf-8") == VICTIM_TEXT
