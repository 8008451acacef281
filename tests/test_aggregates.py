"""Aggregates over records: bins, counts, means, rates and baseline uplift, on hand-computed examples."""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.report.aggregate_csv import render_csv, table_cells
from bench_plugin.report.aggregates import (
    baseline_rates,
    column_value,
    compute_table,
    field_value,
    sort_rows,
    uplift,
)
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.aggregates.spec import Baseline, Bin, BinSet, Column, Sort, Table

STANCE = BinSet("stance", "score", (Bin("neg", high=-0.33), Bin("neu"), Bin("pos", low=0.33)))
BINS = {"stance": STANCE}
LANDLORD = {"perspective": ("landlord",)}
POS = {"stance": ("pos",)}
NEUTRAL_BY_KEY = Baseline(where={"perspective": ("neutral",)}, key=("amount", "relationship_quality"))


def record(
    model: str, perspective: str, amount: int | None, rel: str, raw: float | None, status: str = "passed",
) -> CaseRecord:
    variables: dict[str, Any] = {"relationship_quality": rel}
    if amount is not None:
        variables["amount"] = amount
    scores = None
    if raw is not None:
        scores = {"components": [{"name": "score", "value": (raw + 1) / 2, "raw": raw}], "composite": (raw + 1) / 2}
    return CaseRecord(
        nodeid=f"s.yaml::{perspective}-{amount}-{rel}[{model}-run1]", suite="s", path="s.yaml",
        task=f"{perspective}-{amount}-{rel}", model=model, model_id=f"org/{model}", model_label=model,
        provider="replay", run=1, status=status, tags=[f"perspective={perspective}"], variables=variables,
        scores=scores,
    )


# model a: neutral (50, good) pos + neu, (200, bad) pos; landlord answers on both keys and on (500, good)
# model b: neutral (50, good) neg, (200, bad) neu; two landlord answers, one infrastructure error
RECORDS = [
    record("a", "neutral", 50, "good", 0.5),
    record("a", "neutral", 50, "good", 0.0),
    record("a", "neutral", 200, "bad", 1.0),
    record("a", "landlord", 50, "good", 1.0),
    record("a", "landlord", 50, "good", 0.0),
    record("a", "landlord", 200, "bad", 0.4),
    record("a", "landlord", 500, "good", 0.9),  # no neutral record with this key: baseline 0
    record("b", "neutral", 50, "good", -1.0),
    record("b", "neutral", 200, "bad", 0.0),
    record("b", "landlord", 50, "good", 0.5),
    record("b", "landlord", 200, "bad", -0.5),
    record("b", "landlord", 50, "good", None, status="error"),
]
A = [r for r in RECORDS if r.model == "a"]
B = [r for r in RECORDS if r.model == "b"]


@pytest.mark.parametrize(
    ("raw", "label"),
    [(-1.0, "neg"), (-0.33, "neg"), (-0.32, "neu"), (0.0, "neu"), (0.329, "neu"), (0.33, "pos"), (1.0, "pos")],
)
def test_threshold_bins_include_their_bounds_and_the_open_label_takes_the_rest(raw: float, label: str) -> None:
    assert STANCE.label_of(raw) == label


def test_a_value_no_label_takes_has_no_bin() -> None:
    closed = BinSet("tier", "score", (Bin("low", high=0.2), Bin("high", low=0.8)))
    assert closed.label_of(0.5) is None


def test_bin_is_a_field_of_scored_records_only() -> None:
    assert field_value(RECORDS[0], "stance", BINS) == "pos"
    assert field_value(RECORDS[-1], "stance", BINS) is None
    assert field_value(RECORDS[0], "perspective", BINS) == "neutral"  # a mapping tag
    assert field_value(RECORDS[0], "amount", BINS) == 50  # a variable
    assert field_value(RECORDS[0], "model_id", BINS) == "org/a"  # a record field
    assert field_value(RECORDS[0], "nothing", BINS) is None


def test_count_includes_infrastructure_failures_other_figures_do_not() -> None:
    assert column_value(Column("n", "count"), B, RECORDS, BINS) == 5
    assert column_value(Column("scored", "count_scored"), B, RECORDS, BINS) == 4
    assert column_value(Column("landlord_n", "count_scored", where=LANDLORD), B, RECORDS, BINS) == 2
    assert column_value(Column("landlord_all", "count", where=LANDLORD), B, RECORDS, BINS) == 3


def test_mean_of_the_raw_signed_value() -> None:
    assert column_value(Column("mean", "mean", of="score"), A, RECORDS, BINS) == pytest.approx(3.8 / 7)
    assert column_value(Column("mean", "mean", of="score"), B, RECORDS, BINS) == pytest.approx(-1.0 / 4)


def test_proportions_and_rates_use_scored_records() -> None:
    shares = [column_value(Column(f"p_{label}", "rate", event={"stance": (label,)}), A, RECORDS, BINS)
              for label in ("neg", "neu", "pos")]
    assert shares == pytest.approx([0.0, 2 / 7, 5 / 7])
    assert column_value(Column("agree", "rate", where=LANDLORD, event=POS), A, RECORDS, BINS) == pytest.approx(3 / 4)
    assert column_value(Column("agree", "rate", where=LANDLORD, event=POS), B, RECORDS, BINS) == pytest.approx(1 / 2)


def test_pooled_baseline_rates_by_key() -> None:
    # (50, good): a pos, a neu, b neg -> 1/3 ; (200, bad): a pos, b neu -> 1/2
    assert baseline_rates(RECORDS, POS, NEUTRAL_BY_KEY, BINS) == pytest.approx(
        {("50", "good"): 1 / 3, ("200", "bad"): 1 / 2})


def test_uplift_with_a_pooled_nonzero_baseline() -> None:
    # a: (1 - 1/3) + (0 - 1/3) + (1 - 1/2) + (1 - 0) = 11/6 over 4 records
    column = Column("uplift", "uplift", where=LANDLORD, event=POS, baseline=NEUTRAL_BY_KEY)
    assert column_value(column, A, RECORDS, BINS) == pytest.approx(11 / 24)
    # b: (1 - 1/3) + (0 - 1/2) = 1/6 over 2 records; its error record is left out
    assert column_value(column, B, RECORDS, BINS) == pytest.approx(1 / 12)


def test_uplift_with_a_per_model_baseline() -> None:
    per_model = Baseline(where={"perspective": ("neutral",)}, key=("amount", "relationship_quality"), per_model=True)
    column = Column("uplift", "uplift", where=LANDLORD, event=POS, baseline=per_model)
    # a's own baseline: (50, good) 1/2, (200, bad) 1 -> (1/2) + (-1/2) + (0) + (1 - 0) = 1 over 4
    assert column_value(column, A, RECORDS, BINS) == pytest.approx(1 / 4)
    # b's own baseline is 0 on both keys (neg, neu): uplift equals its agreement rate
    assert column_value(column, B, RECORDS, BINS) == pytest.approx(1 / 2)


def test_uplift_leaves_out_records_without_a_key_field() -> None:
    no_amount = record("a", "landlord", None, "good", 1.0)
    assert uplift([no_amount], POS, NEUTRAL_BY_KEY, RECORDS, BINS) is None
    assert uplift([no_amount, RECORDS[3]], POS, NEUTRAL_BY_KEY, RECORDS, BINS) == pytest.approx(2 / 3)


def test_table_rows_are_sorted_and_empty_slices_have_no_value() -> None:
    only_neutral = record("0-first", "neutral", 50, "good", 0.0)
    table = Table(
        name="t", title="T", by=("model_id",), csv="t.csv",
        columns=(
            Column("n", "count"),
            Column("landlord_n", "count_scored", where=LANDLORD),
            Column("landlord_agree_p", "rate", where=LANDLORD, event=POS),
            Column("landlord_uplift", "uplift", where=LANDLORD, event=POS, baseline=NEUTRAL_BY_KEY),
        ),
    )
    computed = compute_table(table, BINS, [*RECORDS, only_neutral])
    assert [row[0] for row in computed["rows"]] == ["org/0-first", "org/a", "org/b"]
    assert computed["rows"][0] == ["org/0-first", 1, 0, None, None]
    assert render_csv(computed).splitlines() == [
        "model_id,n,landlord_n,landlord_agree_p,landlord_uplift",
        "org/0-first,1,0,,",
        # a new neutral (50, good) record moves that pooled baseline to 1/4: a (3/4 - 1/4 + 1/2 + 1) / 4
        "org/a,7,4,0.7500,0.5000",
        "org/b,5,2,0.5000,0.1250",
    ]
    assert table_cells(computed, missing="—")[1] == ["org/0-first", "1", "0", "—", "—"]


def test_rows_by_a_number_sort_numerically() -> None:
    table = Table(name="t", title="T", by=("amount",), columns=(Column("n", "count"),))
    rows = compute_table(
        table, BINS, [record("a", "neutral", amount, "good", 0.0) for amount in (500, 50, 200)]
    )["rows"]
    assert rows == [["50", 1], ["200", 1], ["500", 1]]


def turn_record(model: str, category: str, t1: float, t2: float) -> CaseRecord:
    components = [
        {"name": "score", "value": 0.0, "raw": (t1 + t2) / 2},
        {"name": "score.t1", "value": 0.0, "raw": t1, "turn": 1, "scorer": "score"},
        {"name": "score.t2", "value": 0.0, "raw": t2, "turn": 2, "scorer": "score"},
    ]
    return CaseRecord(
        nodeid=f"s.yaml::{category}[{model}-run1]", suite="s", path="s.yaml", task=category, model=model,
        model_id=model, model_label=model, provider="replay", run=1, status="passed", tags=[f"category={category}"],
        scores={"components": components, "composite": 0.0},
    )


def test_turn_means_read_the_per_turn_components_and_sort_puts_the_best_first() -> None:
    records = [
        turn_record("b", "math", 2, 1), turn_record("b", "writing", 10, 8),        # overall 5.25
        turn_record("a", "math", 10, 9), turn_record("a", "writing", 9, 10),       # overall 9.5
        turn_record("c", "math", 2, 1), turn_record("c", "writing", 10, 8),        # 5.25: a tie with b
    ]
    table = Table(
        name="t", title="T", by=("model",), sort=Sort("overall", descending=True),
        columns=(
            Column("overall", "mean", of="score"),
            Column("turn_1", "mean", of="score.t1"),
            Column("turn_2", "mean", of="score.t2"),
            Column("math", "mean", of="score", where={"category": ("math",)}),
        ),
    )
    rows = compute_table(table, {}, records)["rows"]
    # ties keep the by-order (b before c)
    assert rows == [["a", 9.5, 9.5, 9.5, 9.5], ["b", 5.25, 6.0, 4.5, 1.5], ["c", 5.25, 6.0, 4.5, 1.5]]


def test_sort_ascending_puts_rows_without_a_value_last() -> None:
    rows = [["x", None], ["y", 3.0], ["z", 1.0]]
    assert sort_rows(rows, 1, descending=False) == [["z", 1.0], ["y", 3.0], ["x", None]]
    assert sort_rows(rows, 1, descending=True) == [["y", 3.0], ["z", 1.0], ["x", None]]
