"""Continuing earlier results: the store keeps them, the history decides per case, re-judging rebuilds transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import ResultsStore, encode_record
from bench_plugin.run.rejudge import derive_contexts, judged_again, rejudge_problem, transcript_from_record
from bench_plugin.run.run_history import REJUDGE, REUSE, RUN, RunHistory, RunSettings
from bench_plugin.suite.spec import CaseSpec, CompositeSpec


def record(nodeid: str, **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "nodeid": nodeid, "suite": "qa", "path": "suites/qa.yaml", "task": nodeid.split("::")[-1].split("[")[0],
        "model": "m", "model_id": "m-1", "model_label": "M", "provider": "mock", "run": 1, "status": "passed",
        "messages": [{"role": "user", "content": "hi"}],
        "transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "name": "M"}],
        "response": "hello", "composite": 1.0,
    }
    fields.update(overrides)
    return CaseRecord(**fields).to_dict()


def line(data: dict[str, Any]) -> str:
    return encode_record(data) + "\n"


def case(task: str, prompt: str = "hi", model_id: str = "m-1") -> CaseSpec:
    model = ModelSpec(name="m", id=model_id, label="M", provider=ProviderSpec(name="mock", type="echo"))
    return CaseSpec(suite="qa", path="suites/qa.yaml", task=task, model_name="m", model=model, run=1,
                    messages=(Message("user", prompt),), scorers=(), composite=CompositeSpec(), pass_threshold=None,
                    variables={})


def test_keeping_earlier_results_cuts_a_torn_line_and_appends_after_it(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line(record("s::a")) + line(record("s::b")) + '{"nodeid": "s::c", "sta')
    store = ResultsStore(path)
    store.open(keep_earlier=True)
    assert [r.nodeid for r in store.report_records()] == ["s::a", "s::b"] and store.earlier == 2
    store.append(record("s::c"))
    store.append(record("s::a", status="failed"))  # a case run again: its newest record wins
    store.close()
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    assert [r["nodeid"] for r in lines] == ["s::a", "s::b", "s::c", "s::a"]  # appended, each line whole
    store.finalize(["s::a", "s::b", "s::c"])
    final = [json.loads(text) for text in path.read_text().splitlines()]
    assert [(r["nodeid"], r["status"]) for r in final] == [("s::a", "failed"), ("s::b", "passed"), ("s::c", "passed")]


def test_a_session_that_does_not_keep_earlier_results_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line(record("s::a")))
    store = ResultsStore(path)
    store.open()
    store.append(record("s::b"))
    store.finalize()
    assert [json.loads(text)["nodeid"] for text in path.read_text().splitlines()] == ["s::b"]


def history(path: Path, **settings: Any) -> RunHistory:
    return RunHistory.load(RunSettings(name="r", results=path, keep_earlier=True, **settings))


def test_history_reuses_finished_cases_only(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    budget = {"kind": "budget", "type": "BudgetExhausted", "message": "spent"}
    path.write_text(
        line(record("s::done", status="error", error={"kind": "http_500"}))
        + line(record("s::done"))  # resumed later: the newest line is the case's record
        + line(record("s::error", status="error", error={"kind": "http_500"}, transcript=[]))
        + line(record("s::invalid", status="invalid"))
        + line(record("s::budget", status="skipped", error=budget))
        + line(record("s::changed"))
        + '{"nodeid": "s::torn"'
    )
    found = history(path)
    assert len(found) == 5  # each case once; the torn line is not one
    assert found.decide("s::done", case("done")) == REUSE
    assert found.record("s::done").status == "passed"
    assert found.decide("s::error", case("error")) == REUSE  # infrastructure errors count as finished
    assert found.decide("s::invalid", case("invalid")) == RUN
    assert found.decide("s::budget", case("budget")) == RUN
    assert found.decide("s::changed", case("changed", prompt="hi again")) == RUN
    assert found.decide("s::torn", case("torn")) == RUN
    assert found.decide("s::new", case("new")) == RUN
    assert history(path, retry_errors=True).decide("s::error", case("error")) == RUN
    assert history(path, fresh=True).decide("s::done", case("done")) == RUN
    assert history(path, rejudge=True).decide("s::done", case("done")) == REJUDGE
    rejudging = history(path, rejudge=True)
    assert rejudging.decide("s::error", case("error")) != REJUDGE
    assert "no transcript" in rejudging.rejudge_problem("s::error")


def test_only_a_finished_transcript_can_be_judged_again() -> None:
    assert rejudge_problem(CaseRecord.from_dict(record("s::a"))) is None
    judge_failed = record("s::a", status="error", error={"kind": "http_500", "call": {"purpose": "judge"}})
    assert rejudge_problem(CaseRecord.from_dict(judge_failed)) is None
    partial = record("s::a", status="error", error={"kind": "http_500", "partial": True})
    assert "partial" in str(rejudge_problem(CaseRecord.from_dict(partial)))


def test_turn_contexts_are_read_off_a_phased_transcript() -> None:
    messages = [Message("system", "S1"), Message("user", "q1"), Message("assistant", "a1", name="M"),
                Message("user", "q2"), Message("assistant", "a2", name="M"),
                Message("system", "S2"), Message("user", "q3"), Message("assistant", "a3", name="M")]
    turns = [{"index": 1, "phase": 1, "answer": "a1"}, {"index": 2, "phase": 1, "answer": "a2"},
             {"index": 3, "phase": 2, "skipped": True, "skip_reason": "gate"},
             {"index": 4, "phase": 2, "answer": "a3"}]
    contexts = derive_contexts(messages, turns, "M", [], phased=True)
    assert contexts[1] == (Message("system", "S1"), Message("user", "q1"))
    assert contexts[2] == (Message("system", "S1"), Message("user", "q1"), Message("assistant", "a1"),
                           Message("user", "q2"))
    assert contexts[4] == (Message("system", "S2"), Message("user", "q3"))
    assert 3 not in contexts


def test_a_rejudged_record_keeps_what_the_model_did_and_the_earlier_judgment() -> None:
    calls = [{"purpose": "candidate", "model": "m"}, {"purpose": "judge", "model": "old-judge"}]
    stored = CaseRecord.from_dict(record("s::a", started_at="T0", call_log=calls, scores={"composite": 1.0},
                                         usage={"calls": 1, "judge": {"calls": 1}},
                                         turns=[{"index": 1, "answer": "hello", "scores": {"J": 1.0}}]))
    fresh = CaseRecord.from_dict(record("s::a", status="failed", composite=0.2, scores={"composite": 0.2},
                                        call_log=[{"purpose": "judge", "model": "new-judge"}],
                                        usage={"calls": 0, "judge": {"calls": 2}},
                                        turns=[{"index": 1, "answer": "hello", "scores": {"J": 0.2}}]))
    again = judged_again(stored, fresh, at="T1", notes=["n"])
    assert (again.status, again.composite, again.rejudged) == ("failed", 0.2, {"at": "T1", "notes": ["n"]})
    assert [c["model"] for c in again.call_log] == ["m", "new-judge"]
    assert again.usage == {"calls": 1, "judge": {"calls": 2}}
    assert again.turns == [{"index": 1, "answer": "hello", "scores": {"J": 0.2}}]
    (earlier,) = again.judgments
    assert earlier["judged_at"] == "T0" and earlier["composite"] == 1.0 and earlier["judge_usage"] == {"calls": 1}
    twice = judged_again(again, fresh, at="T2", notes=[])
    assert [j["judged_at"] for j in twice.judgments] == ["T0", "T1"] and twice.judgments[1]["notes"] == ["n"]


def test_a_stored_single_turn_transcript_comes_back_as_the_scorers_saw_it() -> None:
    stored = CaseRecord.from_dict(record("s::a", turns=[{"index": 1, "phase": 1, "call": 1, "raw": "hello",
                                                         "answer": "hello", "skipped": False}]))
    transcript = transcript_from_record(stored, phased=False, need_contexts=True)
    assert transcript.messages == (Message("user", "hi"), Message("assistant", "hello", name="M"))
    assert transcript.response == "hello" and transcript.text is None and transcript.agent is None
    (turn,) = transcript.turns
    assert turn.context == (Message("user", "hi"),) and turn.answered


def test_records_that_were_never_rejudged_do_not_carry_the_history_keys() -> None:
    assert "judgments" not in record("s::a") and "rejudged" not in record("s::a")
