"""``cluster:``: which cases are one unit for the statistics, rendered per case, kept on the case and its record."""

from __future__ import annotations

from pathlib import Path

from suite_expansion import expand  # type: ignore[import-not-found]

from bench_plugin.results import record as rec
from bench_plugin.run.case import build_record

PROMPTS = """\
models:
  a: {provider: echo}
prompts: [{id: terse, prompt: "{{ q }}?"}, {id: polite, prompt: "Please: {{ q }}?"}]
tasks:
  - id: "q-{{ n }}"
    matrix: {n: [1, 2]}
    vars: {q: "question {{ n }}"}
    runs: 2
"""


def clusters(text: str, tmp_path: Path, files: dict[str, str] | None = None) -> dict[str, str]:
    return {f"{case.task}-run{case.run}": case.cluster for case in expand(text, tmp_path, files)}


def test_runs_and_prompt_variants_of_one_row_are_one_cluster_by_default(tmp_path: Path) -> None:
    assert clusters(PROMPTS, tmp_path) == {
        "q-1-terse-run1": "q-1", "q-1-terse-run2": "q-1", "q-1-polite-run1": "q-1", "q-1-polite-run2": "q-1",
        "q-2-terse-run1": "q-2", "q-2-terse-run2": "q-2", "q-2-polite-run1": "q-2", "q-2-polite-run2": "q-2",
    }


def test_a_task_names_its_cluster_with_a_template(tmp_path: Path) -> None:
    text = PROMPTS.replace("    runs: 2\n", "    cluster: \"{{ 'odd' if n % 2 else 'even' }}\"\n")
    assert set(clusters(text, tmp_path).values()) == {"odd"} | {"even"}


DATASET = """\
models:
  a: {provider: echo}
CLUSTER_TOP
tasks:
  - id: "row-{{ id }}"
    dataset: {file: rows.jsonl, CLUSTER_DATASET}
    prompt: "{{ text }}"
"""
ROWS = {"rows.jsonl": '{"id": 1, "qid": "x", "text": "a"}\n{"id": 2, "qid": "x", "text": "b"}\n'
                      '{"id": 3, "qid": "y", "text": "c"}\n'}


def test_a_dataset_or_the_suite_names_the_cluster_and_the_task_wins(tmp_path: Path) -> None:
    by_dataset = DATASET.replace("CLUSTER_TOP", "").replace("CLUSTER_DATASET", 'cluster: "{{ qid }}"')
    assert clusters(by_dataset, tmp_path, ROWS) == {"row-1-run1": "x", "row-2-run1": "x", "row-3-run1": "y"}
    by_suite = DATASET.replace("CLUSTER_TOP", 'cluster: "s-{{ qid }}"').replace(", CLUSTER_DATASET", "")
    assert set(clusters(by_suite, tmp_path, ROWS).values()) == {"s-x", "s-y"}
    both = DATASET.replace("CLUSTER_TOP", 'cluster: "s-{{ qid }}"').replace("CLUSTER_DATASET", 'cluster: "{{ qid }}"')
    assert set(clusters(both, tmp_path, ROWS).values()) == {"x", "y"}


def test_a_cluster_that_does_not_render_fails_its_cases_alone(tmp_path: Path) -> None:
    text = PROMPTS.replace("    runs: 2\n", "    cluster: \"{{ missing }}\"\n")
    cases = expand(text, tmp_path)
    assert cases and all(case.problem is not None and "missing" in str(case.problem) for case in cases)


def test_the_record_keeps_the_cluster(tmp_path: Path) -> None:
    case = expand(PROMPTS, tmp_path)[2]
    record = build_record(case, "suites/demo.yaml::x", rec.PASSED, "")
    assert (record.task, record.cluster, record.to_dict()["cluster"]) == ("q-1-polite", "q-1", "q-1")
    assert rec.CaseRecord.for_reports(record.to_dict()).cluster == "q-1"
