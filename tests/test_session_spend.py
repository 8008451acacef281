"""What a session spent against its budget, and the costs that leave cases out, from records alone."""

from __future__ import annotations

from typing import Any

from bench_plugin.report.spend import SessionSpend
from bench_plugin.report.summary import describe_missing_cost, describe_spend, missing_cost, summarize_model
from bench_plugin.results.record import CaseRecord


def record(usage: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"nodeid": f"suites/s.yaml::m::t{len(str(usage))}", "suite": "s", "path": "suites/s.yaml", "model": "m",
            "task": "t", "status": "passed", "composite": 1.0, "usage": usage, "model_id": "m-1", "model_label": "m",
            "provider": "p", "run": 0, **fields}


PRICED = {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.25, "judge": {"input_tokens": 4, "output_tokens": 1,
                                                                                   "cost_usd": 0.5}}
UNPRICED_JUDGE = {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.25,
                  "judge": {"input_tokens": 4, "output_tokens": 1, "cost_usd": None, "cost_note": "no judge price"}}


CALLS = [{"purpose": "candidate", "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.25, "cache": "miss"},
         {"purpose": "judge", "input_tokens": 4, "output_tokens": 1, "cost_usd": 0.5, "cache": "miss"}]


def test_the_session_counts_both_calls_of_a_case_and_only_the_judges_of_a_rejudged_one() -> None:
    spend = SessionSpend()
    spend.add(record(PRICED, call_log=CALLS))
    spend.add(record(PRICED, rejudged=True, call_log=CALLS))
    assert (spend.usd, spend.tokens, spend.unpriced) == (1.25, 25, 0)  # 20 + the judges' 5 again
    assert spend.describe(2.0, 100) == ["budget: $1.2500 of $2 spent (--bench-budget-usd)",
                                        "budget: 25 of 100 tokens used (--bench-budget-tokens)"]
    assert spend.describe(None, None) == []


def test_answers_from_the_cache_use_no_token_of_the_budget() -> None:
    """A replayed run said "budget: 42 of 10 tokens used", every hit counted as spent."""
    spend = SessionSpend()
    hits = [{**call, "cache": "hit", "cost_usd": 0} for call in CALLS]
    spend.add(record({**PRICED, "cost_usd": 0, "judge": {**PRICED["judge"], "cost_usd": 0}}, call_log=hits))
    assert (spend.usd, spend.tokens) == (0, 0)
    assert spend.describe(None, 10) == ["budget: 0 of 10 tokens used (--bench-budget-tokens)"]


def test_a_case_with_a_judge_without_a_price_is_named_once() -> None:
    spend = SessionSpend()
    spend.add(record(UNPRICED_JUDGE))
    spend.add(record({"input_tokens": 1, "output_tokens": 1, "cost_usd": None, "cost_note": "no model price",
                      "judge": {"cost_usd": None, "cost_note": "no judge price"}}))
    assert (spend.usd, spend.unpriced, spend.note) == (0.25, 2, "no judge price")
    assert spend.describe(1.0, None) == [
        "budget: $0.2500 of $1 spent (--bench-budget-usd); 2 cases had calls without a price, not counted: "
        "no judge price"]


def test_a_partial_cost_says_how_many_cases_it_leaves_out() -> None:
    records = [CaseRecord.from_dict(record(PRICED)),
               CaseRecord.from_dict(record({**PRICED, "cost_usd": None, "cost_note": "no model price"}, task="u"))]
    row = summarize_model("m", records, [])
    assert row["cost_usd"] == 0.25 and row["cost_known_cases"] == 1
    assert row["cost_missing"] == {"cases": 1, "note": "no model price"} and row["judge_cost_missing"] is None
    assert describe_missing_cost(row) == ["Cost of m leaves out 1 of 2 cases, whose calls have no price: "
                                          "no model price."]
    assert describe_spend(records) == ("cost at least $0.2500 + judges $1.0000 (1 of 2 cases without a price: "
                                       "no model price)")


def test_a_model_without_a_price_reads_the_same_fresh_and_resumed_with_cache_hits() -> None:
    """A resumed run said "cost $0.0000 (200 cases without a price...)": the answers from the cache cost nothing."""
    unpriced = {"input_tokens": 3, "output_tokens": 2, "cost_usd": None, "cost_note": "no model price",
                "judge": {"cost_usd": None}}
    cache_hit = {"input_tokens": 3, "output_tokens": 2, "cost_usd": 0.0, "judge": {"cost_usd": None}}
    fresh = [CaseRecord.from_dict(record(unpriced, task=task)) for task in ("t", "u")]
    resumed = [*fresh, CaseRecord.from_dict(record(cache_hit, task="v"))]
    assert describe_spend(fresh) == "cost unknown (2 of 2 cases without a price: no model price)"
    assert describe_spend(resumed) == "cost unknown (2 of 3 cases without a price: no model price)"


def test_offline_calls_cost_nothing_and_say_nothing() -> None:
    offline = [CaseRecord.from_dict(record({"input_tokens": 3, "output_tokens": 2, "cost_usd": None}))]
    assert describe_spend(offline) == "" and missing_cost(r.usage for r in offline) is None


def test_the_cache_line_counts_this_sessions_calls_only() -> None:
    spend = SessionSpend()
    assert spend.cache_use() is None  # no call looked up: the terminal prints no cache line
    calls = [{"purpose": "candidate", "cache": "hit"}, {"purpose": "judge", "cache": "miss"}]
    spend.add(record(PRICED, call_log=calls))
    # re-judged: the stored candidate call is not this session's, its judge's is
    spend.add(record(PRICED, call_log=[{"purpose": "candidate", "cache": "miss"},
                                       {"purpose": "judge", "cache": "refresh"}], rejudged={"at": "now"}))
    spend.add(record(PRICED, call_log=[{"purpose": "candidate"}]))  # an offline provider: no lookup
    assert spend.cache_use() == {"hits": 1, "misses": 1, "refreshed": 1}
