"""Splitting cases across CI machines (--bench-shard) and xdist workers: pure functions."""

from __future__ import annotations

import random

import pytest

from bench_plugin.run.shards import (
    SHARE_KEY,
    Shard,
    is_suite_nodeid,
    parse_shard,
    shard_of,
    share_from_workerinput,
    split_shard,
    worker_share,
)

IDS = [f"suites/s{s}.yaml::task-{t}[m{m}-run{r}]"
       for s in range(2) for t in range(40) for m in range(3) for r in (1, 2)]


def split(ids: list[str], shard: Shard) -> tuple[list[str], list[str]]:
    return split_shard(ids, shard, lambda i: i, is_suite_nodeid)


@pytest.mark.parametrize(("text", "expected"), [("1/3", Shard(1, 3)), (" 3/3 ", Shard(3, 3)), ("1/1", Shard(1, 1))])
def test_parse_shard_reads_i_of_n(text: str, expected: Shard) -> None:
    assert parse_shard(text) == expected
    assert str(expected) == text.strip()


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/2/3", ""])
def test_parse_shard_refuses_what_is_not_i_of_n(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected I/N with 1 <= I <= N"):
        parse_shard(text)


def test_shards_partition_the_cases_each_once() -> None:
    kept = [split(IDS, Shard(i, 3))[0] for i in (1, 2, 3)]
    assert sorted(nodeid for part in kept for nodeid in part) == sorted(IDS)
    assert all(len(part) > len(IDS) / 3 * 0.7 for part in kept)  # roughly even
    for i, part in enumerate(kept, start=1):
        kept_here, deselected = split(IDS, Shard(i, 3))
        assert kept_here == part and sorted(deselected + part) == sorted(IDS)


def test_a_case_keeps_its_shard_whatever_the_order_or_the_selection() -> None:
    shuffled = IDS[:]
    random.Random(7).shuffle(shuffled)
    selected = [nodeid for nodeid in IDS if "m1" in nodeid]  # as -k m1 leaves them
    for i in (1, 2, 3):
        whole = set(split(IDS, Shard(i, 3))[0])
        assert set(split(shuffled, Shard(i, 3))[0]) == whole
        assert set(split(selected, Shard(i, 3))[0]) == whole & set(selected)  # -k before or after: the same


def test_shard_of_is_fixed_for_a_node_id() -> None:
    # a hash of the id's bytes, not Python's hash(): the same on every machine and Python version
    assert shard_of("suites/capitals.yaml::capital-france[atlas-run1]", 3) == 3
    assert {shard_of(nodeid, 1) for nodeid in IDS} == {1}


def test_ordinary_tests_are_kept_on_every_shard() -> None:
    ids = ["tests/test_x.py::test_a", *IDS[:10], "tests/test_x.py::test_b"]
    for i in (1, 2, 3):
        kept, _ = split(ids, Shard(i, 3))
        assert kept[0] == "tests/test_x.py::test_a" and kept[-1] == "tests/test_x.py::test_b"


def test_worker_shares_partition_the_suite_items_round_robin() -> None:
    ids = ["tests/test_x.py::test_a", *IDS, "tests/test_y.py::test_b"]
    shares = [worker_share(ids, k, 2) for k in range(2)]
    assert shares[0][:3] == [1, 3, 5] and shares[1][:3] == [2, 4, 6]
    assert sorted(shares[0] + shares[1]) == list(range(1, len(IDS) + 1))  # ordinary tests: in no share
    assert abs(len(shares[0]) - len(shares[1])) <= 1


def test_each_workers_share_holds_as_many_cases_of_each_model() -> None:
    """Dealt over all cases, two models alternating in the collection gave each of two workers one model."""
    ids = [f"suites/s.yaml::t{n}[{model}-run1]" for n in range(10) for model in ("a", "b")]
    shares = [[ids[index] for index in worker_share(ids, k, 2)] for k in range(2)]
    for share in shares:
        assert sum("[a-" in nodeid for nodeid in share) == 5 and sum("[b-" in nodeid for nodeid in share) == 5
        assert share == sorted(share, key=ids.index)  # in collection order
    assert sorted(shares[0] + shares[1]) == sorted(ids)


def test_share_from_workerinput() -> None:
    assert share_from_workerinput({SHARE_KEY: [1, 4], "workerid": "gw1"}) == (1, 4)
    assert share_from_workerinput({"workerid": "gw5"}) is None


def test_suite_node_ids() -> None:
    assert is_suite_nodeid("suites/a.yaml::t[m-run1]") and is_suite_nodeid("x/b.yml::t")
    assert not is_suite_nodeid("tests/test_a.py::test_yaml") and not is_suite_nodeid("tests/a.py::t[x.yaml]")
