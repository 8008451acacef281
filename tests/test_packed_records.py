"""The records kept for the reports: packed small during the run, unpacked at the end as ``for_reports`` gives them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.results.packed_records import PackedRecords, ValuePool, pack_for_reports, unpack_for_reports
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import ResultsStore


def whole_record(nodeid: str = "suites/qa.yaml::t1[m-run1]", **overrides: Any) -> dict[str, Any]:
    """A record with every part the reports read, and the parts they do not."""
    fields: dict[str, Any] = {
        "nodeid": nodeid, "suite": "qa", "path": "suites/qa.yaml", "task": "t1", "model": "m", "model_id": "m-1",
        "model_label": "M", "provider": "local", "run": 1, "status": "passed", "reason": "score 1.0000",
        # not alphabetical: the order is the suite's, and the breakdowns show it
        "variables": {"zone": "north", "apple": 1, "mid": True},
        "tags": ["geo", "lang=fr"],
        "messages": [{"role": "user", "content": "Say hi"}],
        "transcript": [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "hi"}],
        "response": "hi",
        "turns": [{"index": 1, "answer": "hi", "raw": "<think>x</think>hi", "user": "Say hi", "thinking": "x",
                   "format_valid": True, "latency_s": 0.1},
                  {"index": 2, "answer": "bye", "format_valid": None}],
        "scores": {
            "components": [
                {"name": "J", "value": 0.75, "raw": 7.5, "judge_output": "Rating: [[7.5]] because...",
                 "detail": "long reasoning", "usage": {"input_tokens": 10},
                 "panel": {"judges": [{"label": "b", "categories": {"tone": 2, "accuracy": 3}}]}},
                {"name": "C", "value": -0.0, "raw": None, "passed": False, "detail": "expected — found"},
            ],
            "composite": 0.5, "passed": True, "threshold": 0.5, "composite_detail": "mean(J, C) = 0.5",
            "pass_detail": "score 0.5000; passed", "unscored_reason": None,
        },
        "composite": 0.5,
        "threshold": 0.5,
        "usage": {"input_tokens": 3, "output_tokens": 4, "cost_usd": None, "calls": 1, "attempts": 1,
                  "cost_note": "no known price", "judge": {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.5,
                                                           "calls": 1}},
        "call_log": [{"purpose": "candidate", "cache": "miss", "latency_s": 0.1}, {"purpose": "judge"}],
        "agent": {"sandbox": "none", "tool_calls": [{"name": "read_file"}], "files": {"a.txt": "x"}},
        "latency_s": 0.25,
        "started_at": "2026-01-01T00:00:00+00:00",
        "case_index": 3,
    }
    fields.update(overrides)
    return CaseRecord(**fields).to_dict()


def test_an_unpacked_record_is_what_for_reports_keeps() -> None:
    data = whole_record()
    assert unpack_for_reports(pack_for_reports(data)) == CaseRecord.for_reports(data)
    assert unpack_for_reports(pack_for_reports(data), ValuePool()) == CaseRecord.for_reports(data)


def test_the_reports_part_leaves_out_texts_and_what_no_report_reads() -> None:
    kept = CaseRecord.for_reports(whole_record())
    assert kept.transcript == [] and kept.messages == [] and kept.response is None
    assert kept.turns == [{"index": 1, "format_valid": True}]  # no texts, and no turn without a format verdict
    # why a cost is unknown stays: the reports say which cases their cost leaves out (``report.summary``)
    assert kept.usage == {"input_tokens": 3, "output_tokens": 4, "cost_usd": None, "cost_note": "no known price",
                          "judge": {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.5}}
    assert kept.call_log == [{"cache": "miss"}]
    assert kept.agent == {"sandbox": "none"}
    assert kept.scores is not None and set(kept.scores) == {"components", "composite_detail", "unscored_reason"}
    assert kept.components["J"]["judge_output"] == "Rating: [[7.5]] because..."  # components stay whole


def test_dict_order_and_exact_values_survive_packing() -> None:
    """results.jsonl sorts keys: read back from it, the breakdowns' and panels' order would change."""
    record = unpack_for_reports(pack_for_reports(whole_record()), ValuePool())
    assert list(record.variables) == ["zone", "apple", "mid"]
    judges = record.components["J"]["panel"]["judges"]
    assert list(judges[0]["categories"]) == ["tone", "accuracy"]
    value = record.components["C"]["value"]
    assert value == 0.0 and math.copysign(1.0, value) == -1.0  # -0.0 stays -0.0
    assert record.variables["mid"] is True and record.variables["apple"] == 1 and type(record.variables["apple"]) is int


def test_records_unpacked_through_one_pool_share_equal_values_only() -> None:
    pool = ValuePool()
    first, second = (unpack_for_reports(pack_for_reports(whole_record(f"suites/qa.yaml::t{n}[m-run1]")), pool)
                     for n in (1, 2))
    assert first.model_id is second.model_id and first.reason is second.reason
    assert first.call_log is second.call_log and first.tags is second.tags  # small containers of plain values
    assert first.usage["judge"] is second.usage["judge"]
    assert first.scores is not second.scores  # a container holding an unshared one is never shared
    # equal for ==, but not the same value: 1 and True, 0.0 and -0.0 stay apart
    ones = [pool.share({"v": 1}), pool.share({"v": True}), pool.share({"v": 1.0})]
    assert [type(one["v"]) for one in ones] == [int, bool, float]
    zeros = [pool.share([0.0]), pool.share([-0.0])]
    assert [math.copysign(1.0, zero[0]) for zero in zeros] == [1.0, -1.0]


def test_a_missing_field_takes_its_default_and_a_required_one_is_named() -> None:
    data = whole_record()
    del data["tags"], data["variables"]
    record = unpack_for_reports(pack_for_reports(data))
    assert record.tags == [] and record.variables == {}
    del data["status"]
    with pytest.raises(TypeError, match="'status'"):
        pack_for_reports(data)


def test_a_value_marshal_cannot_write_is_kept_as_results_jsonl_writes_it() -> None:
    data = whole_record()
    data["variables"] = {"where": Path("a/b")}
    record = unpack_for_reports(pack_for_reports(data))
    assert record.variables == json.loads(json.dumps({"where": Path("a/b")}, default=str))


def test_the_store_gives_each_case_once_newest_first_kept_and_in_finalized_order(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    earlier = [whole_record(f"suites/qa.yaml::t{n}[m-run1]", case_index=n) for n in (3, 1)]
    path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in earlier), encoding="utf-8")
    store = ResultsStore(path)
    store.open(keep_earlier=True)
    store.append(whole_record("suites/qa.yaml::t2[m-run1]", case_index=2))
    store.append(whole_record("suites/qa.yaml::t3[m-run1]", case_index=3, status="failed"))  # run again
    assert [(r.nodeid[-10:], r.status) for r in store.report_records()] == [
        ("t1[m-run1]", "passed"), ("t2[m-run1]", "passed"), ("t3[m-run1]", "failed")]
    store.finalize([f"suites/qa.yaml::t{n}[m-run1]" for n in (1, 2, 3)])
    assert [r.case_index for r in store.report_records()] == [1, 2, 3]
    # the earlier lines come from the file (sorted keys); the appended ones keep the order the case made
    assert [list(r.variables) for r in store.report_records()] == [
        ["apple", "mid", "zone"], ["zone", "apple", "mid"], ["zone", "apple", "mid"]]


def test_an_incomplete_earlier_line_is_named_when_the_store_opens(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    line = whole_record()
    del line["model"]
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"results\.jsonl:1: incomplete case record: missing field 'model'"):
        ResultsStore(path).open(keep_earlier=True)


def test_kept_records_are_compressed_against_the_first_and_come_back_whole() -> None:
    kept = PackedRecords()
    datas = {f"suites/qa.yaml::t{n}[m-run1]": whole_record(f"suites/qa.yaml::t{n}[m-run1]", task=f"t{n}",
                                                           reason=f"score 0.{n}", case_index=n)
             for n in range(5)}
    for nodeid, data in datas.items():
        kept.add(nodeid, pack_for_reports(data))
    # a newer record of a case replaces the older; the order is the one asked for
    datas["suites/qa.yaml::t2[m-run1]"] = whole_record("suites/qa.yaml::t2[m-run1]", status="failed")
    kept.add("suites/qa.yaml::t2[m-run1]", pack_for_reports(datas["suites/qa.yaml::t2[m-run1]"]))
    order = list(reversed(datas))
    assert kept.unpack(order) == [CaseRecord.for_reports(datas[nodeid]) for nodeid in order]
    assert kept.unpack(order, ValuePool()) == kept.unpack(order)
    # a record like the first is a small part of its packed size
    packed = pack_for_reports(datas["suites/qa.yaml::t4[m-run1]"])
    assert len(kept._packed["suites/qa.yaml::t4[m-run1]"]) < len(packed) / 4
    # after clear, the next record starts a new dictionary: a record unlike the old first one still comes back
    kept.clear()
    other = whole_record("suites/other.yaml::x[n-run1]", suite="other", variables={}, scores={"components": []})
    kept.add("suites/other.yaml::x[n-run1]", pack_for_reports(other))
    assert kept.unpack(["suites/other.yaml::x[n-run1]"]) == [CaseRecord.for_reports(other)]
    with pytest.raises(KeyError):
        kept.unpack(["suites/qa.yaml::t1[m-run1]"])


def test_records_kept_before_a_run_is_large_stay_plain_and_all_come_back() -> None:
    kept = PackedRecords(squeeze_from=2)
    datas = {f"suites/qa.yaml::t{n}[m-run1]": whole_record(f"suites/qa.yaml::t{n}[m-run1]", case_index=n)
             for n in range(4)}
    for nodeid, data in datas.items():
        kept.add(nodeid, pack_for_reports(data))
    sizes = [len(kept._packed[nodeid]) for nodeid in datas]
    assert sizes[0] == sizes[1] == len(pack_for_reports(datas["suites/qa.yaml::t0[m-run1]"]))
    assert sizes[2] < sizes[0] / 4 and sizes[3] < sizes[0] / 4
    assert kept.unpack(datas) == [CaseRecord.for_reports(data) for data in datas.values()]
