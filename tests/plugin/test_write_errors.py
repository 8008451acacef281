"""A full disk or a folder that cannot be written ends the run cleanly: the file is named, no INTERNALERROR.

results.jsonl keeps the lines written before the error, each whole, and the exit status is non-zero.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
from pathlib import Path
from typing import BinaryIO

import pytest

import bench_plugin.report.write as report_write
import bench_plugin.results.store as store_module

SUITE = """
suite: disk
models:
  parrot: {provider: echo}
tasks:
  - {id: "t{{ n }}", matrix: {n: [1, 2, 3, 4, 5, 6]}, prompt: "Say {{ n }} to Ada"}
scorers:
  - {type: contains, value: Ada}
"""


def lines_of(path: Path) -> list[dict[str, object]]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n")  # no torn last line
    return [json.loads(line) for line in text.splitlines()]


def assert_clean_stop(result: pytest.RunResult, file: str, reason: str) -> None:
    output = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert result.ret != 0
    assert fnmatch.fnmatch(output, f"*bench: cannot write *{file}: {reason}*"), output


def blocked_folder(pytester: pytest.Pytester, blocked: str) -> tuple[str, str]:
    """An output folder that cannot be made, and the reason the OS gives."""
    if blocked == "a file in the way":
        (pytester.path / "out").write_text("not a folder")
        return "out/results", "Not a directory"
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders; 'a file in the way' covers this run")
    (pytester.path / "out").mkdir(mode=0o555)
    return "out/results", "Permission denied"


@pytest.mark.parametrize("blocked", ["a file in the way", "a read-only folder"])
def test_an_output_folder_that_cannot_be_written_is_a_usage_error_before_any_case(
    pytester: pytest.Pytester, blocked: str
) -> None:
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    output, reason = blocked_folder(pytester, blocked)
    # report.html goes there too, and pytest-html makes its folder while pytest configures
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--bench-output", output)
    assert_clean_stop(result, output, reason)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: bench: cannot write*--bench-output*"])


@pytest.mark.parametrize("blocked", ["a file in the way", "a read-only folder"])
def test_an_output_folder_that_cannot_be_written_stops_the_run_at_the_first_record(
    pytester: pytest.Pytester, blocked: str
) -> None:
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    output, reason = blocked_folder(pytester, blocked)
    result = pytester.runpytest_subprocess(
        "suites", "-p", "no:cacheprovider", "--bench-output", output, "--bench-html", "off", "--bench-concurrency", "1"
    )
    assert_clean_stop(result, output, reason)
    result.stdout.fnmatch_lines(["*nothing was written*", "*Interrupted: bench: cannot write*"])
    assert result.parseoutcomes() == {"passed": 1}  # the run stopped after the case that found out


def test_a_full_disk_keeps_the_whole_lines_written_before(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = store_module.write_all
    calls = []

    def filling_up(file: BinaryIO, data: bytes) -> None:
        calls.append(data)
        if len(calls) <= 3:
            real_write(file, data)
            return
        file.write(data[: len(data) // 2])  # the disk takes half of the fourth line, then is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module, "write_all", filling_up)
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-concurrency", "1", "--bench-html", "off")
    assert_clean_stop(result, "bench-results/results.jsonl", "No space left on device")
    result.stdout.fnmatch_lines(["*results.jsonl keeps the 3 cases written before, each a whole line*"])
    records = lines_of(pytester.path / "bench-results" / "results.jsonl")
    assert [record["task"] for record in records] == ["t1", "t2", "t3"]
    assert len(calls) == 4 and not (pytester.path / "bench-results" / "report.md").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full, a device that is always full")
def test_a_results_jsonl_linked_to_dev_full_is_refused_and_the_run_stops_cleanly(pytester: pytest.Pytester) -> None:
    """A link in the output folder is not followed (``test_planted_links.py``); the full disk is simulated above."""
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    (pytester.path / "bench-results").mkdir()
    (pytester.path / "bench-results" / "results.jsonl").symlink_to("/dev/full")
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    assert_clean_stop(result, "bench-results/results.jsonl", "is a symbolic link bench_plugin did not make*")


def test_a_failed_rewrite_at_the_end_keeps_results_jsonl_whole(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module.os, "fsync", full)  # every atomic rewrite fails, appending still works
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    assert_clean_stop(result, "bench-results/results.jsonl", "No space left on device")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*results.jsonl keeps its 6 cases, each a whole line, in the order they finished*"])
    assert len(lines_of(pytester.path / "bench-results" / "results.jsonl")) == 6
    assert not list((pytester.path / "bench-results").glob(".*.tmp"))  # no temp file left behind


def test_a_report_that_cannot_be_written_is_named(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    real = report_write.write_atomically

    def no_room_for_report_md(path: Path, text: str) -> None:
        if path.name == "report.md":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, text)

    monkeypatch.setattr(report_write, "write_atomically", no_room_for_report_md)
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    assert_clean_stop(result, "bench-results/report.md", "No space left on device")
    result.stdout.fnmatch_lines(["*results.jsonl holds every case; some reports were not written*"])
    assert len(lines_of(pytester.path / "bench-results" / "results.jsonl")) == 6


def test_a_leaderboard_dir_linked_out_of_the_output_folder_is_refused(pytester: pytest.Pytester) -> None:
    """A ``dir:`` such as ``../escaped`` stops collection (tests/test_leaderboard_dir.py); a link is caught at write."""
    suite = SUITE.replace("  parrot: {provider: echo}", "  a: {provider: echo}\n  b: {provider: echo}")
    suite += "leaderboard: {of: contains, sessions: cases, dir: board}\n"
    pytester.makefile(".yaml", **{"suites/disk": suite})
    escaped = pytester.mkdir("escaped")
    pytester.mkdir("bench-results").joinpath("board").symlink_to(escaped, target_is_directory=True)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-html", "off")
    assert_clean_stop(result, "board", "is a symbolic link bench_plugin did not make")  # refused by name
    assert list(escaped.iterdir()) == []


def test_a_full_disk_under_pytest_html_is_no_internal_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_html import basereport

    def full(self: basereport.BaseReport, rendered: str) -> None:
        self._report_path.write_text(rendered[:100])  # type: ignore[attr-defined]  # the page cut off
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a failed write says it: no file named

    monkeypatch.setattr(basereport.BaseReport, "_write_report", full)
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    assert_clean_stop(result, "bench-results/report.html", "No space left on device")  # the page named
    result.stdout.no_fnmatch_line("*Generated html report*")  # one true thing: the page is cut off
    # ours were written
    result.stdout.fnmatch_lines(["*results: *(results.jsonl, report.md, summary.json, dashboard.html)"])
    assert len(lines_of(pytester.path / "bench-results" / "results.jsonl")) == 6


def test_a_full_disk_leaves_the_last_whole_report_html_and_no_cut_off_page(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-html opened report.html for writing in place: a full disk left a page cut off at 100 bytes."""
    from pytest_html import basereport

    def full(self: basereport.BaseReport, rendered: str) -> None:
        self._report_path.write_text(rendered[:100])  # type: ignore[attr-defined]  # the page cut off
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    assert pytester.runpytest("suites", "-p", "no:cacheprovider").ret == 0
    page = pytester.path / "bench-results" / "report.html"
    whole = page.read_text(encoding="utf-8")
    from bench_plugin.results.store import new_file_mode

    assert whole.rstrip().endswith("</html>") and page.stat().st_mode & 0o777 == new_file_mode()  # as open() makes
    monkeypatch.setattr(basereport.BaseReport, "_write_report", full)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    assert_clean_stop(result, "report.html", "No space left on device")
    assert page.read_text(encoding="utf-8") == whole  # the last whole page, not a cut-off one
    assert not [p.name for p in page.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_planted_report_html_link_is_replaced_not_written_through(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/disk": SUITE})
    target = pytester.path / "victim.txt"
    target.write_text("the user's own file\n", encoding="utf-8")
    pytester.mkdir("bench-results").joinpath("report.html").symlink_to(target)
    assert pytester.runpytest("suites", "-p", "no:cacheprovider").ret == 0
    assert target.read_text(encoding="utf-8") == "the user's own file\n"
    page = pytester.path / "bench-results" / "report.html"
    assert not page.is_symlink() and page.read_text(encoding="utf-8").rstrip().endswith("</html>")


def test_resuming_a_disk_full_named_run_on_a_still_full_disk_records_each_case_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal's cases were appended again, and on a full disk no rewrite took the copies out (436 for 400).

    The message said each case was one whole line.
    """
    real_write = store_module.write_all
    room = {"lines": 3}

    def filling_up(file: BinaryIO, data: bytes) -> None:
        if room["lines"] > 0:
            room["lines"] -= 1
            real_write(file, data)
            return
        file.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_room_for_a_copy(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module, "write_all", filling_up)
    suite = SUITE.replace("[1, 2, 3, 4, 5, 6]", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")
    pytester.makefile(".yaml", **{"suites/disk": suite})
    run = ("suites", "-p", "no:cacheprovider", "--bench-html", "off", "--bench-run", "n", "--bench-concurrency", "1")
    assert_clean_stop(pytester.runpytest(*run), "results.jsonl", "No space left on device")
    folder = pytester.path / "bench-results" / "runs" / "n"
    (journal,) = folder.glob("*.journal")  # the killed session's: its process id in the name
    journal.rename(folder / "results.jsonl.1.journal")
    monkeypatch.setattr(store_module, "write_atomically", no_room_for_a_copy)  # no room to rewrite the file
    room["lines"] = 4
    result = pytester.runpytest(*run)
    assert_clean_stop(result, "results.jsonl", "No space left on device")
    tasks = [record["task"] for record in lines_of(folder / "results.jsonl")]
    assert len(tasks) == len(set(tasks)) == 9, tasks  # each case once: the 5 the first session finished, 4 more
    result.stdout.fnmatch_lines(["*results.jsonl keeps the 9 cases written before, each a whole line*"])
    assert not (folder / "results.jsonl.1.journal").exists()  # folded in
