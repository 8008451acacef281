"""``prompts:`` makes one variant of a task per prompt: in the case id, the ``prompt`` tag and ``prompt_id``."""

from __future__ import annotations

from pathlib import Path

from suite_expansion import build_error, expand

from bench_plugin.report.breakdowns import find_dimensions
from bench_plugin.report.case_table import build_case_table
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.prompts import split_prompts

MODELS = "models:\n  a: {provider: echo}\n  b: {provider: echo}\n"

SUITE = MODELS + """\
prompts:
  - id: terse
    prompt: "Capital of {{ country }}?"
  - "Tell me about the capital of {{ country }}, please."
  - {id: chat, messages: [{role: system, content: Be kind.}, {role: user, content: "{{ country }}?"}]}
system: Answer well.
tasks:
  - id: "cap-{{ country | lower }}"
    vars: {country: France}
  - id: own
    prompt: "Own prompt for {{ model.name }}"
"""


def test_each_prompt_is_a_variant_of_every_task_without_its_own_prompt(tmp_path: Path) -> None:
    ids = [case.case_id for case in expand(SUITE, tmp_path)]
    assert ids == [
        "cap-france-terse[a-run1]", "cap-france-terse[b-run1]",
        "cap-france-prompt2[a-run1]", "cap-france-prompt2[b-run1]",
        "cap-france-chat[a-run1]", "cap-france-chat[b-run1]",
        "own[a-run1]", "own[b-run1]",
    ]


def test_prompt_variant_sends_its_prompt_with_the_task_system(tmp_path: Path) -> None:
    cases = {case.case_id: case for case in expand(SUITE, tmp_path)}
    terse = cases["cap-france-terse[a-run1]"]
    assert [(m.role, m.content) for m in terse.messages] == [("system", "Answer well."), ("user", "Capital of France?")]
    chat = cases["cap-france-chat[a-run1]"]  # messages are sent as written: no suite system
    assert [(m.role, m.content) for m in chat.messages] == [("system", "Be kind."), ("user", "France?")]
    assert cases["own[a-run1]"].messages[-1].content == "Own prompt for a"


def test_prompt_id_is_a_variable_and_a_tag(tmp_path: Path) -> None:
    cases = {case.case_id: case for case in expand(SUITE, tmp_path)}
    case = cases["cap-france-prompt2[b-run1]"]
    assert case.variables["prompt_id"] == "prompt2"
    assert case.tags == ("prompt=prompt2",)
    assert "prompt_id" not in cases["own[a-run1]"].variables
    assert cases["own[a-run1]"].tags == ()


def test_id_template_that_names_the_prompt_is_used_as_is(tmp_path: Path) -> None:
    text = MODELS + """\
prompts: [{id: x, prompt: one}, {id: y, prompt: two}]
tasks:
  - id: "{{ prompt_id }}-first"
"""
    assert [case.task for case in expand(text, tmp_path)][::2] == ["x-first", "y-first"]


def test_task_prompts_replace_the_suite_prompts(tmp_path: Path) -> None:
    text = MODELS + """\
prompts: [{id: x, prompt: one}]
tasks:
  - id: t
    prompts: [{id: p, prompt: "mine {{ prompt_id }}"}, {id: q, prompt: theirs}]
"""
    cases = expand(text, tmp_path)
    assert [case.case_id for case in cases][::2] == ["t-p[a-run1]", "t-q[a-run1]"]
    assert cases[0].messages[-1].content == "mine p"


def test_prompt_file_split_at_separator_lines(tmp_path: Path) -> None:
    text = MODELS + """\
prompts:
  - {prompt_file: prompts/styles.txt, split: "---"}
  - {id: long, prompt_file: prompts/long.j2, system: "Be thorough."}
tasks:
  - {id: q, vars: {topic: tides}}
"""
    files = {"prompts/styles.txt": "Briefly: {{ topic }}\n---\n\n---\nIn detail: {{ topic }}\n",
             "prompts/long.j2": "Everything about {{ topic }}\n"}
    cases = [case for case in expand(text, tmp_path, files) if case.model_name == "a"]
    assert [case.task for case in cases] == ["q-styles-1", "q-styles-2", "q-long"]
    assert [case.messages[-1].content for case in cases] == [
        "Briefly: tides", "In detail: tides", "Everything about tides\n"]
    assert cases[2].messages[0].content == "Be thorough."


def test_split_keeps_text_and_drops_empty_parts() -> None:
    assert split_prompts("a\n  ---  \nb\n---\n---\n", "---") == ["a", "b"]
    assert split_prompts("one line", "===") == ["one line"]


def test_missing_split_file_fails_its_own_cases_alone(tmp_path: Path) -> None:
    """One split file that could not be read made each task one failing case: its good prompts never ran."""
    text = MODELS + ("prompts:\n  - {id: terse, prompt: 'One word'}\n  - {prompt_file: gone.txt, split: '---'}\n"
                     "  - {id: own, prompt_file: empty.txt, split: '---'}\n"
                     "tasks:\n  - {id: t}\n  - {id: u, prompt: hi}\n")
    cases = {case.case_id: case for case in expand(text, tmp_path, {"empty.txt": "---\n"}) if case.model_name == "a"}
    assert list(cases) == ["t-terse[a-run1]", "t-gone[a-run1]", "t-own[a-run1]", "u[a-run1]"]
    assert cases["t-terse[a-run1]"].problem is None and cases["u[a-run1]"].problem is None
    assert "prompts[1].prompt_file: template file 'gone.txt' not found" in str(cases["t-gone[a-run1]"].problem)
    assert "'empty.txt' holds no prompt between the separators '---'" in str(cases["t-own[a-run1]"].problem)


def test_template_error_in_one_prompt_fails_its_cases_only(tmp_path: Path) -> None:
    text = MODELS + "prompts: ['ok', 'broken {{ nme }}']\ntasks:\n  - {id: t}\n"
    problems = {case.case_id: case.problem for case in expand(text, tmp_path)}
    assert problems["t-prompt1[a-run1]"] is None
    assert "prompts[1]: template error: 'nme' is undefined" in str(problems["t-prompt2[a-run1]"])


def test_duplicate_prompt_ids_are_an_error(tmp_path: Path) -> None:
    message = build_error(MODELS + "prompts: [{id: x, prompt: a}, {id: x, prompt: b}]\ntasks:\n  - {id: t}\n",
                          tmp_path)
    assert "suites/demo.yaml:4: prompts[1]: prompt id 'x' is used twice (first at prompts[0], line 4)" in message


def test_prompt_with_messages_refuses_a_system(tmp_path: Path) -> None:
    text = MODELS + ("prompts:\n  - id: x\n    system: s\n    messages: [{role: user, content: hi}]\n"
                     "tasks:\n  - {id: t}\n")
    assert "prompts[0].system: a prompt with messages gives its system message among them" in build_error(
        text, tmp_path)


def test_task_without_prompt_needs_suite_prompts(tmp_path: Path) -> None:
    message = build_error(MODELS + "tasks:\n  - {id: t}\n", tmp_path)
    assert ("tasks[0]: expected exactly one of prompt, prompt_file, messages, turns, phases, conversation, prompts; "
            "found none") in message


def test_prompt_ids_are_checked_by_the_schema(tmp_path: Path) -> None:
    message = build_error(MODELS + "prompts: [{id: 'a b', prompt: x}]\ntasks:\n  - {id: t}\n", tmp_path)
    assert "prompts[0].id: 'a b' does not match the pattern" in message


def test_split_needs_a_prompt_file(tmp_path: Path) -> None:
    message = build_error(MODELS + "prompts: [{prompt: x, split: '---'}]\ntasks:\n  - {id: t}\n", tmp_path)
    assert "prompts[0]" in message and "prompt_file" in message


def _record(task: str, score: float, **variables: object) -> CaseRecord:
    prompt = variables.get("prompt_id")
    return CaseRecord(
        nodeid=f"suites/demo.yaml::{task}[a-run1]", suite="demo", path="suites/demo.yaml", task=task, model="a",
        model_id="a", model_label="a", provider="echo", run=1, status="passed", composite=score, threshold=0.5,
        scores={"components": [], "composite": score, "passed": True, "threshold": 0.5, "composite_detail": "",
                "unscored_reason": None},
        tags=[f"prompt={prompt}"] if prompt else [], variables=dict(variables),
    )


def test_breakdowns_count_the_prompt_variants_of_one_row_as_one_task() -> None:
    records = [
        _record(f"q{qid}-{prompt}", 1.0, qid=qid, row_index=qid, prompt_id=prompt, level="easy" if qid < 2 else "hard")
        for qid in range(4) for prompt in ("terse", "polite")
    ]
    dimensions = find_dimensions(build_case_table("suites/demo.yaml", records))
    # qid and row_index name rows (each shared only by one row's prompt variants): not dimensions;
    # prompt_id splits the cases as the prompt tag does, so it is shown once
    assert [(d.name, d.source, d.groups) for d in dimensions] == [
        ("prompt", "tag", ("terse", "polite")), ("level", "variable", ("easy", "hard"))]


def test_row_index_is_never_a_dimension() -> None:
    # a matrix repeats the rows: row_index values are shared by two tasks, and still name rows
    records = [_record(f"{country}-{row}", 1.0, row_index=row, country=country)
               for country in ("fr", "jp") for row in range(3)]
    dimensions = find_dimensions(build_case_table("suites/demo.yaml", records))
    assert [d.name for d in dimensions] == ["country"]
