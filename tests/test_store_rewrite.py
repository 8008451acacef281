from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_plugin.store import ResultsStore


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
