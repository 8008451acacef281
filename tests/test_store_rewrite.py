from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_plugin.results.store import ResultsStore, keep_each_case_once


def record(nodeid: str, **fields: Any) -> dict[str, Any]:
    return {"nodeid": nodeid, "suite": "qa", "path": "suites/qa.yaml", "task": nodeid, "model": "m",
            "model_id": "m", "model_label": "M", "provider": "p", "run": 1, "status": "passed", "reason": "",
            **fields}


def lines(path: Path) -> list[tuple[str, str]]:
    return [(data["nodeid"], data["reason"]) for data in map(json.loads, path.read_text("utf-8").splitlines())]


def test_finalize_writes_each_case_newest_line_in_order_and_can_run_again(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    store = ResultsStore(path)
    store.open()
    store.append(record("s::a", reason="first try"))
    store.append(record("s::b", reason="only ✓ try"))
    store.append(record("s::a", reason="re-run"))
    store.finalize(["s::b", "s::a"])
    assert lines(path) == [("s::b", "only ✓ try"), ("s::a", "re-run")]
    store.finalize(["s::a", "s::b"])  # the rewritten file is where the lines are read from now
    assert lines(path) == [("s::a", "re-run"), ("s::b", "only ✓ try")]


def test_earlier_lines_kept_by_a_resumed_store_are_rewritten_whole(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    first = ResultsStore(path)
    first.open()
    first.append(record("s::a", reason="earlier — kept"))
    first.close()
    path.write_bytes(path.read_bytes() + b'{"nodeid": "s::torn')  # a run killed in the middle of a line
    resumed = ResultsStore(path)
    resumed.open(keep_earlier=True)
    resumed.append(record("s::b", reason="new"))
    resumed.finalize(["s::a", "s::b"])
    assert lines(path) == [("s::a", "earlier — kept"), ("s::b", "new")]


def test_a_file_already_in_order_is_left_as_it_is_and_one_out_of_order_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    store = ResultsStore(path)
    store.open()
    for name in ("a", "b", "c"):
        store.append(record(f"s::{name}", reason=name))
    written = path.stat().st_ino
    store.finalize(["s::a", "s::b", "s::c"])  # one process: the cases came in collection order
    assert path.stat().st_ino == written and lines(path) == [("s::a", "a"), ("s::b", "b"), ("s::c", "c")]
    store.finalize(["s::c", "s::a", "s::b"])  # xdist: they came in any order
    assert path.stat().st_ino != written and lines(path) == [("s::c", "c"), ("s::a", "a"), ("s::b", "b")]
    rewritten = path.stat().st_ino
    store.finalize(["s::c", "s::a", "s::b"])  # the rewritten file is in order now
    assert path.stat().st_ino == rewritten

    # a case run again leaves its older line in the file: in order or not, the file is rewritten without it
    again = ResultsStore(tmp_path / "again.jsonl")
    again.open()
    again.append(record("s::a", reason="first"))
    again.append(record("s::b", reason="b"))
    again.append(record("s::a", reason="again"))
    again.finalize(["s::b", "s::a"])
    assert lines(tmp_path / "again.jsonl") == [("s::b", "b"), ("s::a", "again")]


def test_a_kept_file_with_a_blank_line_is_rewritten_without_it(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(record("s::a", reason="kept")) + "\n\n", encoding="utf-8")
    resumed = ResultsStore(path)
    resumed.open(keep_earlier=True)
    resumed.append(record("s::b", reason="new"))
    resumed.finalize(["s::a", "s::b"])
    assert path.read_text("utf-8").count("\n") == 2 and lines(path) == [("s::a", "kept"), ("s::b", "new")]


def test_a_kept_file_holding_a_case_twice_is_rewritten_once_each_as_it_is_opened(tmp_path: Path) -> None:
    """After two SIGKILLs in a row results.jsonl held 383 lines for 255 cases until a session completed."""
    path = tmp_path / "results.jsonl"
    killed = [record("s::a", reason="first"), record("s::b", reason="b"), record("s::a", reason="again")]
    path.write_text("".join(json.dumps(data) + "\n" for data in killed) + '{"nodeid": "s::c', encoding="utf-8")
    keep_each_case_once(path)  # as a session that continues the file starts
    assert lines(path) == [("s::b", "b"), ("s::a", "again")]  # before any case of this session ends
    resumed = ResultsStore(path)
    resumed.open(keep_earlier=True)
    assert [(r.nodeid, r.reason) for r in resumed.read_earlier()] == [("s::b", "b"), ("s::a", "again")]
    resumed.append(record("s::c", reason="new"))
    assert lines(path) == [("s::b", "b"), ("s::a", "again"), ("s::c", "new")]
    resumed.finalize(["s::a", "s::b", "s::c"])
    assert lines(path) == [("s::a", "again"), ("s::b", "b"), ("s::c", "new")]
