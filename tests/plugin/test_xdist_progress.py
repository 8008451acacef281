"""Under pytest -n 2 the controller shows the workers' progress, waits included, though it runs no case itself."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench_plugin.calls.run_status import RunStatus, StatusSnapshot, Wait, combine
from bench_plugin.mock.server import MockServer
from bench_plugin.plugin.xdist_progress import FOLDER_KEY, WorkersStatus, WorkerStatusSender


def test_a_snapshot_crosses_as_plain_data_and_snapshots_add_up():
    status = RunStatus()
    for _ in range(3):
        status.case_started()
    status.case_finished("error")
    with status.waiting("openai", "HTTP 429, server asked 30 s", 30), status.calling():
        sent = json.loads(json.dumps(status.snapshot().to_dict()))
    other = StatusSnapshot(started=2, finished=2, errors=0, not_run=1, waits=(Wait("openai", "rpm limit 15/min", 0),))
    both = combine([StatusSnapshot.from_dict(sent), other])
    assert (both.started, both.finished, both.errors, both.not_run) == (5, 3, 1, 1)
    now = sent["waits"][0][2] - 30  # the moment the first snapshot was taken
    assert both.line(10, now=now) == ("bench: 3/10 cases done, 2 started, 1 call in flight, 1 error, 1 not run; "
                                      "waiting: openai (1 call) 30 s: HTTP 429, server asked 30 s; openai (1 call) 0 "
                                      "s: rpm limit 15/min")
    with pytest.raises(ValueError, match="not a status snapshot"):
        StatusSnapshot.from_dict({"started": 1})


def test_the_cases_waiting_for_a_place_cross_from_the_workers_and_add_up():
    status = RunStatus()
    status.case_started()
    with status.waiting_for_place():
        sent = json.loads(json.dumps(status.snapshot().to_dict()))
    other = StatusSnapshot(started=3, place_waits=2)
    assert combine([StatusSnapshot.from_dict(sent), other]).line(8) == (
        "bench: 0/8 cases done, 4 started, 0 calls in flight, 0 errors, 3 waiting for a place to run a command")


def message(worker: str, seq: int, started: int, finished: int, waits: list[Any] | None = None) -> dict[str, Any]:
    return {"worker": worker, "seq": seq, "collected": 8, "started": started, "finished": finished, "errors": 0,
            "not_run": 0, "waits": waits or []}


def test_the_controller_keeps_each_workers_newest_counters(pytester: pytest.Pytester, tmp_path: Path) -> None:
    board = WorkersStatus(pytester.parseconfig())
    board.folder = tmp_path
    until = time.time() + 60
    board.take(message("gw0", 2, started=4, finished=3))
    board.take(message("gw0", 1, started=1, finished=0))  # older, came late: ignored
    board.take({"worker": "gw1", "seq": "x"})  # malformed: ignored
    (tmp_path / "gw1.json").write_text(json.dumps(message("gw1", 5, 2, 0, [["mock", "paused after HTTP 429", until]])))
    board.read_files()
    assert board.line(None).startswith("bench: 3/8 cases done, 3 started, 0 calls in flight, 0 errors; waiting: mock "
                                       "(1 call) ")
    assert board.line(None).endswith(" s: paused after HTTP 429")
    board.take({**message("gw0", 3, started=4, finished=3), "place_waits": 1})
    assert board.line(None).startswith("bench: 3/8 cases done, 3 started, 0 calls in flight, 0 errors, 1 waiting for "
                                       "a place to run a command; waiting: mock (1 call) ")
    board.pytest_testnodedown(SimpleNamespace(gateway=SimpleNamespace(id="gw1")), None)  # gone: nothing in flight
    assert board.line(None) == ("bench: 3/8 cases done, 1 started, 0 calls in flight, 0 errors, 1 waiting for a place "
                                "to run a command")
    board.pytest_testnodedown(SimpleNamespace(gateway=SimpleNamespace(id="gw0")), None)  # nor waits for a place
    assert board.line(None) == "bench: 3/8 cases done, 0 started, 0 calls in flight, 0 errors"
    board.close()
    assert board.folder is None and not tmp_path.exists()


def test_a_worker_writes_its_counters_where_the_controller_reads_them(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    config = pytester.parseconfig()
    config.workerinput = {"workerid": "gw3", FOLDER_KEY: str(tmp_path)}  # type: ignore[attr-defined]
    status = RunStatus()
    status.case_started()
    sender = WorkerStatusSender(config, status)
    sender.tick(0.25)
    first = json.loads((tmp_path / "gw3.json").read_text())
    assert (first["worker"], first["started"], first["finished"]) == ("gw3", 1, 0)
    status.case_finished("passed")
    sender.tick(0.5)  # too soon after the last write: the file waits
    assert json.loads((tmp_path / "gw3.json").read_text())["seq"] == first["seq"]
    sender.write()
    assert json.loads((tmp_path / "gw3.json").read_text())["finished"] == 1
    assert [path.name for path in tmp_path.iterdir()] == ["gw3.json"]  # replaced whole, no partial file left


def held_suite(server: MockServer, model_id: str) -> str:
    return f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: 10}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: greet, prompt: 'Say hello to Ada'}}
  - {{id: welcome, prompt: 'Welcome Ada'}}
scorers:
  - {{type: contains, value: Ada}}
"""


@pytest.mark.slow
def test_the_controller_shows_which_provider_waits_while_every_case_is_held(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = f"held-{uuid.uuid4().hex[:8]}"
    # each case's first two attempts get a 429 asking for 2 s: no report reaches the controller for ~4 s
    mock_server.add_rule({"model": model_id, "status": 429, "retry_after": "2", "times": 4})
    pytester.makefile(".yaml", **{"suites/held": held_suite(mock_server, model_id)})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2",
                                           "--bench-html", "off")
    result.assert_outcomes(passed=2)
    progress = [line for line in result.outlines if line.startswith("bench: ")]
    assert progress, result.outlines  # the workers' counters, drawn by the controller
    assert all(line.startswith(("bench: 0/2 cases done, ", "bench: 1/2 cases done, ")) for line in progress)
    waits = [line for line in progress if f"waiting: mock/{model_id} (" in line]
    assert waits and "HTTP 429" in waits[0] and re.search(r"\(\d calls?\) \d+ s: ", waits[0]), progress


@pytest.mark.slow
def test_quiet_xdist_runs_show_no_progress(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = f"quiet-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "status": 429, "retry_after": "2", "times": 2})
    pytester.makefile(".yaml", **{"suites/held": held_suite(mock_server, model_id)})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "-n", "2", "-q", "--bench-html", "off")
    result.assert_outcomes(passed=2)
    assert not [line for line in result.outlines if line.startswith("bench: ")]
