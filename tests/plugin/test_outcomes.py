"""What each kind of result looks like to pytest and in results.jsonl."""

from __future__ import annotations

import json
from typing import Any

import pytest

from suites import CAPITALS  # type: ignore[import-not-found]


def records(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    path = pytester.path / "bench-results" / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_unparseable_judge_leaves_the_case_unscored_not_failed(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  a: {provider: echo}\n"
        "judges:\n  vague:\n    provider: scripted\n    script:\n      - {reply: 'It is fine I guess.'}\n"
        "tasks:\n  - {id: t, prompt: hello}\n"
        "scorers:\n  - {name: J, type: llm_judge, judge: vague, prompt: 'Rate: {{ answer }}'}\n"
    )
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.runpytest("suites", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] suites/demo.yaml:9: unscored*could not read a score from the judge reply*"]
    )
    (record,) = records(pytester)
    assert record["status"] == "unscored"
    assert record["composite"] is None
    assert record["scores"]["components"][0]["judge_output"] == "It is fine I guess."
    assert "unscored" in (pytester.path / "bench-results" / "report.md").read_text().lower()


def test_record_keeps_prompt_transcript_judge_output_and_components(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.runpytest("suites", "-k", "france and atlas").assert_outcomes(passed=1)
    (record,) = records(pytester)
    assert record["nodeid"] == "suites/capitals.yaml::capital-france[atlas-run1]"
    assert record["messages"] == [{"role": "user", "content": "What is the capital of France?"}]
    assert record["transcript"][-1]["content"] == "The capital of France is Paris."
    components = {c["name"]: c for c in record["scores"]["components"]}
    assert components["C"]["value"] == 1.0
    assert components["J"]["raw"] == 9 and components["J"]["judge_output"].endswith("Rating: [[9]]")
    assert record["composite"] == pytest.approx(0.7 + 0.3 * 8 / 9, abs=1e-6)
    assert record["variables"]["capital"] == "Paris"
    assert record["tags"] == ["geography"]


def test_replay_serves_recorded_answers_and_skips_missing_ones(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".jsonl",
        **{"suites/data/answers": "\n".join([
            json.dumps({"model_id": "gpt-x", "question_id": 1, "turns": ["Paris"]}),
            json.dumps({"model_id": "gpt-x", "question_id": 2, "turns": ["Lyon"]}),
        ])},
    )
    suite = (
        "models:\n  gpt-x:\n    provider: replay\n    replay:\n      file: data/answers.jsonl\n"
        "      task_key: '{{ qid }}'\n      fields: {model: model_id, task: question_id, response: turns}\n"
        "matrix:\n  qid: [1, 2, 3]\n"
        "tasks:\n  - {id: 'q{{ qid }}', prompt: 'Capital of France?'}\n"
        "scorers:\n  - {type: contains, value: Paris}\n"
    )
    pytester.makefile(".yaml", **{"suites/replayed": suite})
    result = pytester.runpytest("suites", "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no recorded answer for model 'gpt-x', task '3'*"])


def test_dataset_rows_with_mapping_filter_and_limit(pytester: pytest.Pytester) -> None:
    pytester.makefile(".csv", **{
        "suites/data/qa": "qid,question,answer,level\n1,2+2?,4,easy\n2,3*3?,9,easy\n3,12*12?,144,hard\n4,1+1?,2,easy\n",
    })
    suite = (
        "models:\n  m:\n    provider: scripted\n    script:\n      - {reply: 'The answer is {{ expected }}.'}\n"
        "tasks:\n  - id: 'sum-{{ qid }}'\n    dataset:\n      file: data/qa.csv\n"
        "      fields: {expected: answer}\n      filter: \"level == 'easy'\"\n      limit: 2\n"
        "    prompt: '{{ question }}'\n"
        "scorers:\n  - {type: numeric, value: '{{ expected }}'}\n"
    )
    pytester.makefile(".yaml", **{"suites/math": suite})
    result = pytester.runpytest("suites", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*sum-1[[]m-run1[]] PASSED*", "*sum-2[[]m-run1[]] PASSED*"])


def test_task_scorer_with_suite_scorer_name_replaces_it(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  a: {provider: echo}\n"
        "tasks:\n  - {id: plain, prompt: hello}\n"
        "  - id: special\n    prompt: goodbye\n    scorers:\n      - {name: C, type: contains, value: goodbye}\n"
        "scorers:\n  - {name: C, type: contains, value: hello}\n"
    )
    pytester.makefile(".yaml", **{"suites/demo": suite})
    pytester.runpytest("suites").assert_outcomes(passed=2)


def test_xdist_gives_the_same_results_as_one_process(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    volatile = ("latency_s", "duration_s", "started_at")  # timing, at any depth (judge usage too)

    def without_timing(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_timing(v) for k, v in value.items() if k not in volatile}
        if isinstance(value, list):
            return [without_timing(v) for v in value]
        return value

    def stable_results() -> list[str]:
        return [json.dumps(without_timing(record), sort_keys=True) for record in records(pytester)]

    pytester.runpytest("suites", "--bench-runs", "3", "-p", "no:randomly").assert_outcomes(passed=6, failed=6)
    single = stable_results()
    result = pytester.runpytest_subprocess("suites", "--bench-runs", "3", "-n", "2")
    result.assert_outcomes(passed=6, failed=6)
    assert stable_results() == single
    assert len(single) == 12 and len({json.loads(line)["nodeid"] for line in single}) == 12


def test_html_report_is_written_by_default_with_bench_columns(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.runpytest("suites")
    html = (pytester.path / "bench-results" / "report.html").read_text()
    assert "capital-france" in html and "col-score" in html


def test_html_report_can_be_turned_off(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.runpytest("suites", "--bench-html", "off")
    assert not (pytester.path / "bench-results" / "report.html").exists()
    assert (pytester.path / "bench-results" / "report.md").exists()


def test_markdown_report_has_leaderboard_tasks_and_failures(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.runpytest("suites")
    report = (pytester.path / "bench-results" / "report.md").read_text()
    assert "| atlas | 2 | 100.0% | 0.9667 |" in report
    assert "capital-japan" in report
    assert "suites/capitals.yaml::capital-france[parrot-run1]" in report
