"""results.jsonl: flushed per case, reordered atomically at the end, readable back."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.results import store as store_module
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import ResultsStore, read_results, write_atomically


def make_record(nodeid: str, **overrides: Any) -> dict[str, Any]:
    task = nodeid.split("::")[-1].split("[")[0]
    fields: dict[str, Any] = {
        "nodeid": nodeid,
        "suite": "qa",
        "path": "suites/qa.yaml",
        "task": task,
        "model": "gpt-4o",
        "model_id": "gpt-4o-2024-08-06",
        "model_label": "GPT-4o",
        "provider": "openai",
        "run": 1,
        "status": "passed",
        "response": "Paris, évidemment",
        "composite": 1.0,
    }
    fields.update(overrides)
    return CaseRecord(**fields).to_dict()


def ids(path: Path) -> list[str]:
    return [json.loads(line)["nodeid"] for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def results_path(tmp_path: Path) -> Path:
    return tmp_path / "out" / "nested" / "results.jsonl"


def test_appended_record_is_on_disk_before_close(results_path: Path) -> None:
    store = ResultsStore(results_path)
    store.open()
    store.append(make_record("suites/qa.yaml::a[gpt-4o-run1]"))

    # read through a separate handle while the store still holds the file open
    lines = results_path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["nodeid"] == "suites/qa.yaml::a[gpt-4o-run1]"
    store.close()


def test_lines_are_sorted_json_with_unicode_kept(results_path: Path) -> None:
    store = ResultsStore(results_path)
    store.open()
    store.append(make_record("suites/qa.yaml::a[gpt-4o-run1]"))
    store.close()

    line = results_path.read_text(encoding="utf-8").splitlines()[0]
    assert "évidemment" in line
    keys = list(json.loads(line))
    assert keys == sorted(keys)


def test_open_starts_a_new_file_for_each_session(results_path: Path) -> None:
    first = ResultsStore(results_path)
    first.open()
    first.append(make_record("suites/qa.yaml::old[gpt-4o-run1]"))
    first.finalize(None)

    second = ResultsStore(results_path)
    second.open()
    assert results_path.read_text(encoding="utf-8") == ""
    second.append(make_record("suites/qa.yaml::new[gpt-4o-run1]"))
    second.finalize(None)
    assert ids(results_path) == ["suites/qa.yaml::new[gpt-4o-run1]"]


def test_append_before_open_is_refused(results_path: Path) -> None:
    with pytest.raises(RuntimeError, match="open"):
        ResultsStore(results_path).append(make_record("suites/qa.yaml::a[gpt-4o-run1]"))


def test_finalize_sorts_into_collection_order_with_unknown_ids_last(results_path: Path) -> None:
    store = ResultsStore(results_path)
    store.open()
    for nodeid in ("c", "x-unknown", "a", "y-unknown", "b"):
        store.append(make_record(f"suites/qa.yaml::{nodeid}[gpt-4o-run1]"))

    store.finalize([f"suites/qa.yaml::{name}[gpt-4o-run1]" for name in ("a", "b", "c", "deselected")])

    expected = [f"suites/qa.yaml::{name}[gpt-4o-run1]" for name in ("a", "b", "c", "x-unknown", "y-unknown")]
    assert ids(results_path) == expected
    assert [record.nodeid for record in store.report_records()] == expected


def test_arrival_order_does_not_change_the_finalized_file(tmp_path: Path) -> None:
    order = [f"suites/qa.yaml::t{i}[gpt-4o-run1]" for i in range(6)]
    files = []
    for name, arrival in (("serial", order), ("xdist", [order[i] for i in (3, 0, 5, 1, 4, 2)])):
        store = ResultsStore(tmp_path / name / "results.jsonl")
        store.open()
        for nodeid in arrival:
            store.append(make_record(nodeid))
        store.finalize(order)
        files.append(store.path.read_bytes())
    assert files[0] == files[1]


def test_a_failed_rewrite_leaves_the_appended_file_intact(
    results_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultsStore(results_path)
    store.open()
    store.append(make_record("suites/qa.yaml::b[gpt-4o-run1]"))
    store.append(make_record("suites/qa.yaml::a[gpt-4o-run1]"))
    before = results_path.read_bytes()

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        store.finalize(["suites/qa.yaml::a[gpt-4o-run1]", "suites/qa.yaml::b[gpt-4o-run1]"])

    assert results_path.read_bytes() == before
    assert sorted(p.name for p in results_path.parent.iterdir()) == ["results.jsonl"]


def test_finalize_leaves_no_temporary_file(results_path: Path) -> None:
    store = ResultsStore(results_path)
    store.open()
    store.append(make_record("suites/qa.yaml::a[gpt-4o-run1]"))
    store.finalize([])
    assert sorted(p.name for p in results_path.parent.iterdir()) == ["results.jsonl"]


def test_records_read_back_equal_the_records_written(results_path: Path) -> None:
    written = [
        make_record("suites/qa.yaml::a[gpt-4o-run1]"),
        make_record(
            "suites/qa.yaml::b[gpt-4o-run1]",
            status="error",
            composite=None,
            error={"kind": "timeout", "type": "TransientProviderError", "message": "timed out"},
        ),
    ]
    store = ResultsStore(results_path)
    store.open()
    for record in written:
        store.append(record)
    store.finalize(None)

    assert read_results(results_path) == [CaseRecord.from_dict(record) for record in written]
    assert store.report_records() == [CaseRecord.for_reports(record) for record in written]


def test_a_torn_last_line_is_ignored_when_reading(results_path: Path) -> None:
    store = ResultsStore(results_path)
    store.open()
    store.append(make_record("suites/qa.yaml::a[gpt-4o-run1]"))
    store.close()
    with results_path.open("a", encoding="utf-8") as file:
        file.write('{"nodeid": "suites/qa.yaml::b[gpt-4o-ru')

    assert [record.nodeid for record in read_results(results_path)] == ["suites/qa.yaml::a[gpt-4o-run1]"]


def test_a_bad_line_in_the_middle_names_file_and_line(results_path: Path) -> None:
    results_path.parent.mkdir(parents=True)
    good = json.dumps(make_record("suites/qa.yaml::a[gpt-4o-run1]"))
    results_path.write_text(f"{good}\nnot json\n{good}\n", encoding="utf-8")

    with pytest.raises(ValueError, match=r"results\.jsonl:2: not valid JSON"):
        read_results(results_path)


def test_report_records_are_the_same_whether_their_values_are_shared_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small runs skip compression and the value pool (time), large ones use both (memory): the records read alike."""
    unpacked = []
    for shared_from in (1, 10_000):
        monkeypatch.setattr(store_module, "_LARGE_FROM", shared_from)
        store = ResultsStore(tmp_path / str(shared_from) / "results.jsonl")
        store.open()
        for nodeid in ("suites/qa.yaml::a[gpt-4o-run1]", "suites/qa.yaml::b[gpt-4o-run1]"):
            store.append(make_record(nodeid))
        unpacked.append(store.report_records())
        store.close()
    shared, copied = unpacked
    assert shared == copied and len(shared) == 2
    assert shared[0].model is shared[1].model  # one string through the pool


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_file_written_atomically_gets_the_mode_open_gives_a_new_file(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        reference = tmp_path / "reference.txt"
        reference.write_text("x", encoding="utf-8")
        written = tmp_path / "report.md"
        write_atomically(written, "# report\n")
    finally:
        os.umask(mask)
    assert written.read_text(encoding="utf-8") == "# report\n"
    assert stat.S_IMODE(reference.stat().st_mode) == 0o644
    assert stat.S_IMODE(written.stat().st_mode) == 0o644  # mkstemp alone made it 0600


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="no file modes here")
def test_a_file_system_that_refuses_modes_still_gets_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(fd: int, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)
    written = tmp_path / "report.md"
    write_atomically(written, "# report\n")
    assert written.read_text(encoding="utf-8") == "# report\n"
