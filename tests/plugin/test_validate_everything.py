"""``bench validate`` finds what a pytest run would find before any call; a suite typo is never infrastructure."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench_plugin.cli import main

BOT = """\
models:
  bot:
    provider: scripted
    script:
{rules}
      - {{reply: "Paris"}}
judges:
  grader: {{provider: scripted, script: [{{reply: "Rating: [[9]]"}}]}}
variables:
  city: Paris
tasks:
  - id: fine
    prompt: Capital of France?
    scorers: [{{name: C, type: contains, value: "{{{{ city }}}}"}}]
{tasks}"""


def suite(tasks: str = "", rules: str = "") -> str:
    return BOT.format(tasks=tasks, rules=rules)


def validate(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str]:
    pytester.makefile(".yaml", **{"suites/demo": text})
    code = main(["validate", str(pytester.path / "suites")])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def glob(text: str) -> str:
    """``text`` for fnmatch_lines: brackets are a glob's character classes."""
    return "".join({"[": "[[]", "]": "[]]"}.get(char, char) for char in text)


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {record["task"]: record for record in map(json.loads, lines)}


def assert_not_infrastructure(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "infrastructure failure" not in text and "internal error" not in text and "Traceback" not in text


SCORER_TYPO = """\
  - id: typo
    prompt: Capital of France?
    scorers: [{name: C, type: contains, value: "{{ cty }}"}]
"""
JUDGE_TYPO = """\
  - id: judged
    prompt: Capital of France?
    scorers: [{name: J, type: llm_judge, judge: grader, prompt: "Rate [[N]]: {{ answr }}"}]
"""
JUDGE_FILE_MISSING = """\
  - id: judged-file
    prompt: Capital of France?
    scorers: [{name: J, type: llm_judge, judge: grader, prompt_file: nowhere.md}]
"""


@pytest.mark.parametrize(
    ("tasks", "task", "expected"),
    [
        (SCORER_TYPO, "typo", "demo.yaml:17: tasks[1].scorers[0].value: template error: 'cty' is undefined"),
        (JUDGE_TYPO, "judged", "demo.yaml:17: tasks[1].scorers[0].prompt: template error: 'answr' is undefined"),
        (JUDGE_FILE_MISSING, "judged-file",
         "demo.yaml:17: tasks[1].scorers[0].prompt_file: template file 'nowhere.md' not found"),
    ],
)
def test_template_typo_in_a_scorer_is_found_by_validate_and_fails_the_case_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], tasks: str, task: str, expected: str
) -> None:
    code, output = validate(pytester, capsys, suite(tasks))
    assert code == 1
    assert expected in output and "1 with problems" in output
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*{glob(expected)}*"])
    record = records(pytester)[task]
    assert record["status"] == "invalid" and record["error"]["kind"] == "suite"
    assert record["response"] is None and record["usage"]["calls"] == 0  # found before the model was called
    assert_not_infrastructure(result)


def test_did_you_mean_for_a_judge_prompt_names_the_judge_variable(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _, output = validate(pytester, capsys, suite(JUDGE_TYPO))
    assert "hint: did you mean 'answer'?" in output


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ('      - {regex: "([a-z", reply: "x"}',
         "demo.yaml:5: models.bot.script[0].regex: regex '([a-z' does not compile: unterminated character set"),
        ('      - {contains: x, reply: "{{ groups[0] }"}',
         "demo.yaml:5: models.bot.script[0].reply: template error: unexpected '}'"),
        ('      - {tool_result: "(unclosed", reply: "x"}',
         "demo.yaml:5: models.bot.script[0].tool_result: tool_result '(unclosed' does not compile"),
    ],
)
def test_a_broken_scripted_rule_is_a_collection_error_with_its_line_not_an_infrastructure_error(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], rules: str, expected: str
) -> None:
    code, output = validate(pytester, capsys, suite(rules=rules))
    assert code == 1 and expected in output
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{glob(expected)}*"])
    assert_not_infrastructure(result)


def test_the_bundled_style_of_judge_prompts_passes_validation(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = """\
  - id: judged
    prompt: Capital of France?
    vars: {answer_key: Paris}
    scorers:
      - name: J
        type: llm_judge
        judge: grader
        reference: "{{ answer_key }}"
        system: "You grade {{ model.name }} on {{ task }}."
        prompt: "{% set q = question %}{{ q }} {{ answer }} {{ reference }} {{ vars.city }} {{ range(2) | list }}"
"""
    code, output = validate(pytester, capsys, suite(tasks))
    assert code == 0, output
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("scorer", "expected"),
    [
        ('{name: P, type: llm_judge_panel, judges: [grader, grader2], prompt: "{{ judge.name }} {{ answr }}"}',
         "tasks[1].scorers[0].prompt: template error: 'answr' is undefined"),
        ('{name: W, type: llm_judge_pairwise, judge: grader, against: {answer: Lyon},'
         ' prompt: "{{ answer_a }} {{ answer_b }} {{ answerc }}"}',
         "tasks[1].scorers[0].prompt: template error: 'answerc' is undefined"),
    ],
)
def test_panel_and_pairwise_prompts_are_checked_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], scorer: str, expected: str
) -> None:
    tasks = f"  - id: judged\n    prompt: Capital of France?\n    scorers: [{scorer}]\n"
    text = suite(tasks).replace("judges:\n", "judges:\n  grader2: {provider: scripted, script: [{reply: '[[9]]'}]}\n")
    code, output = validate(pytester, capsys, text)
    assert code == 1 and expected in output, output


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ('  - id: judged\n    prompt: Capital of France?\n    scorers: [{name: W, type: llm_judge_pairwise,'
         ' judge: grader, prompt: "{{ answer_a }} {{ answer_b }}", against: {answer: "{{ baselin }}"}}]\n',
         "tasks[1].scorers[0].against.answer: template error: 'baselin' is undefined"),
        ("  - id: judged\n    turns: ['Capital of France?', 'And of Spain?']\n    scorers: [{name: W,"
         " type: llm_judge_pairwise, judge: grader, prompt: '{{ answer_a }}', against: {model: bot}}]\n",
         "tasks[1].scorers[0].against: against: {model: ...} answers a single prompt"),
    ],
)
def test_a_pairwise_against_that_cannot_work_is_found_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], task: str, expected: str
) -> None:
    code, output = validate(pytester, capsys, suite(task))
    assert code == 1 and expected in output, output


def test_optional_names_in_a_judge_prompt_pass_validation(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``| default(...)`` and ``is defined`` make a name optional, as they do when the prompt renders."""
    tasks = """\
  - id: judged
    prompt: Capital of France?
    scorers:
      - name: J
        type: llm_judge
        judge: grader
        prompt: "{{ answer }} {{ extra | default('') }}{% if notes is defined %}{{ notes }}{% endif %}"
"""
    code, output = validate(pytester, capsys, suite(tasks))
    assert code == 0, output
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=2)


# ----------------------------------------------------------------------------- messages at run time


def test_collection_error_mentions_continue_on_collection_errors_unless_given(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/broken": "models: {a: {provider: echo}}\ntasks:\n  - {id: t, promt: x}\n",
                                  "suites/good": "models: {a: {provider: echo}}\ntasks:\n  - {id: t, prompt: x}\n"})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fix it, or pass --continue-on-collection-errors to run the other suites*",
                                 "*Interrupted: 1 error during collection*"])
    result = pytester.runpytest("suites", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    assert "pass --continue-on-collection-errors" not in result.stdout.str()


def test_unknown_engine_names_the_tasks_engine_key(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": "models: {a: {provider: echo}}\ntasks:\n  - {id: t, prompt: x}\n"
                                                "  - {id: u, prompt: x, engine: nope}\n"})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*demo.yaml:4: tasks[[]1[]].engine: unknown engine 'nope'*"])


def test_failure_reason_says_a_component_was_dropped_by_its_gate(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": """\
models:
  wrong: {provider: scripted, script: [{reply: "Lyon"}]}
judges:
  grader: {provider: scripted, script: [{reply: "Rating: [[5]]"}]}
tasks:
  - {id: capital, prompt: "Capital of France?"}
scorers:
  - {name: C, type: contains, value: Paris}
  - {name: J, type: llm_judge, judge: grader, prompt: "Rate as [[N]]: {{ answer }}"}
composite:
  formula: "0.6*C + 0.4*J"
  gates: [{component: J, when: "C == 1"}]
pass_threshold: 0.9
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*score 0.0000 < threshold 0.9 (C=0: *; J not counted: gate C == 1 not met)*"])
    assert "J=0.5" not in result.stdout.str()


def test_formula_typo_reaches_the_user_in_words(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": """\
models: {a: {provider: echo}}
tasks: [{id: t, prompt: x}]
scorers: [{name: C, type: contains, value: x}, {name: T, type: contains, value: y}]
composite: "0.4*C + 0.3 T"
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*demo.yaml:4: composite: formula '0.4*C + 0.3 T': no operator between '0.3' "
                                 "and 'T' (write 0.3*T)", "    0.4*C + 0.3 T", "                ^"])
    assert "invalid syntax" not in result.stdout.str()


@pytest.mark.parametrize(("url", "why"), [
    ("http://127.0.0.1:99999/v1", "Port out of range"),
    ("http://[::1:18302/v1", "Invalid IPv6 URL"),
    ("http://127.0.0.1:0/v1", "port 0"),
    ("http://[::1]]:18408/v1", "Invalid IPv6 address"),
    ("http://[::1]x:18408/v1", "Invalid port"),
])
def test_an_unusable_base_url_is_found_by_validate_and_fails_its_cases_in_words(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], url: str, why: str
) -> None:
    """It used to pass validation and end each case with an internal error (an IndexError from asyncio)."""
    text = (f"providers:\n  local: {{type: openai_compatible, base_url: '{url}'}}\n"
            "models:\n  m: {provider: local, id: x}\ntasks:\n  - {id: t, prompt: hi}\n")
    code, out = validate(pytester, capsys, text)
    assert code == 1 and "providers.local.base_url" in out and why in out and "Traceback" not in out
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert why in result.stdout.str() and "internal error" not in result.stdout.str()


def test_an_unusable_base_url_on_the_command_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": suite()})
    result = pytester.runpytest("suites", "--bench-base-url", "local=http://127.0.0.1:70000/v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-base-url local=http://127.0.0.1:70000/v1: not a usable URL*"])


@pytest.mark.parametrize(("headers", "message"), [
    ('{"Bad Header": x}', "providers.local.headers: expected an HTTP header name (letters, digits and"),
    ('{"X-Title": "a\\nb"}', "providers.local.headers.X-Title: expected a header value on one line"),
    ('{"X-Title": "café"}', "providers.local.headers.X-Title: expected a header value on one line"),
])
def test_a_header_no_request_can_carry_is_a_suite_error_not_an_infrastructure_failure(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], headers: str, message: str
) -> None:
    """It passed validation; every call then failed, retried three times as a connection failure."""
    text = ("providers:\n  local: {type: openai_compatible, base_url: 'http://127.0.0.1:9/v1', "
            f"headers: {headers}}}\nmodels:\n  m: {{provider: local, id: x}}\ntasks:\n  - {{id: t, prompt: hi}}\n")
    code, out = validate(pytester, capsys, text)
    assert code == 1 and message in out


def test_validate_takes_the_runs_options_after_the_paths(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its own hint said to allow a key with --bench-allow-key-env, which validate refused as unrecognized."""
    pytester.makefile(".yaml", **{"suites/demo": (
        "providers:\n  local: {type: openai_compatible, base_url: 'http://127.0.0.1:9/v1', api_key_env: MY_KEY}\n"
        "models:\n  m: {provider: local, id: x}\ntasks:\n  - {id: t, prompt: hi}\n")})
    suites = str(pytester.path / "suites")
    assert main(["validate", suites]) == 1
    assert "allow it with --bench-allow-key-env MY_KEY" in capsys.readouterr().err
    assert main(["validate", suites, "--bench-allow-key-env", "MY_KEY"]) == 0
    assert main(["validate", suites, "--bench-models", "nosuch"]) == 2
    assert "--bench-models: unknown model(s) nosuch" in capsys.readouterr().err


@pytest.mark.parametrize(("recordings", "expected"), [
    (None, "models.rec.replay.file: cannot read the recordings file answers.jsonl: No such file or directory"),
    ('{"model": "m", "task": "a", "response": "x"}\nnot json\n',
     "models.rec.replay.file: recordings file answers.jsonl, line 2: not JSON (Expecting value at column 1)"),
    ('{"model": "m", "task": "a", "answer": "x"}\n',
     "models.rec.replay.file: recordings file answers.jsonl, line 1: the record has no field 'response'"),
])
def test_a_replay_file_that_cannot_be_read_is_found_before_any_call_with_its_line(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], recordings: str | None, expected: str
) -> None:
    """Validate said OK; the run then failed each case with '<suite>: cannot read replay file ...'."""
    if recordings is not None:
        pytester.makefile(".jsonl", **{"suites/answers": recordings})
    text = ("models:\n  ok: {provider: echo}\n  rec: {provider: replay, id: m, replay: {file: answers.jsonl}}\n"
            "tasks: [{id: a, prompt: x}]\n")
    code, out = validate(pytester, capsys, text)
    assert code == 1 and f"suites/demo.yaml:3: {expected}" in out, out
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*{glob(expected)}*"])


def test_a_later_turn_or_phase_reading_an_undefined_name_is_found_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Validate said OK; the run paid for the first turn, then failed the case on 'answrs'."""
    text = ("models:\n  bot: {provider: echo}\n"
            "tasks:\n"
            "  - {id: fine, turns: [hi, 'again {{ answers[0] }} {{ extra | default(1) }}']}\n"
            "  - {id: typo, turns: [hi, 'again {{ answrs[0] }}']}\n"
            "  - id: phased\n    phases:\n      - turns: [hi]\n      - {system: '{{ nosuch }}', turns: [again]}\n")
    code, out = validate(pytester, capsys, text)
    assert code == 1, out
    assert "suites/demo.yaml:5: tasks[1].turns[1]: template error: 'answrs' is undefined" in out
    assert "hint: did you mean 'answers'? it can read: answers, model, phase, raw_answers, task_id, turn" in out
    assert "suites/demo.yaml:9: tasks[2].phases[1].system: template error: 'nosuch' is undefined" in out
    assert "fine[" not in out


# ----------------------------------------------------------------------------- templates rendered during the run

CONVERSATION = """\
models:
  bot: {{provider: echo}}
tasks:
  - id: chat
    vars: {{tone: calm}}
    conversation:
      mode: shared
      max_turns: 1
      speaker_prefix: "{prefix}"
      seed: hello
      participants: [{{name: A}}, {{name: B}}]
"""
REPLAY = """\
models:
  rec:
    provider: replay
    id: m
    replay: {{file: answers.jsonl, model_key: "{{{{ model.name }}}}", task_key: "{key}"}}
tasks:
  - {{id: a, prompt: x, vars: {{qid: a}}}}
"""
SCRIPTED = """\
models:
  bot:
    provider: scripted
    script:
      - {{task: "capital-*", regex: "(\\\\w+)\\\\?", reply: "{reply}"}}
      - {{reply: "{{{{ last_user }}}} {{{{ task }}}} {{{{ run }}}} {{{{ turn }}}} {{{{ note | default('') }}}}"}}
tasks:
  - {{id: capital-fr, prompt: "France?", vars: {{city: Paris}}}}
  - {{id: other, prompt: hello}}
"""
AGENT = """\
models:
  bot: {{provider: scripted, script: [{{reply: "done"}}]}}
tasks:
  - id: a
    prompt: do it
    vars: {{fname: note.md}}
    tools: [read_file]
    workspace: {{files: {{note.md: hi}}}}
    scorers:
      - name: C
        type: completion
        vars: {{word: hi}}
        checks: [{{file: "{file}", contains: "{{{{ word }}}}"}}]
"""


def offline_suite(template: str, value: str, pytester: pytest.Pytester) -> str:
    if template is REPLAY:
        pytester.makefile(".jsonl", **{"suites/answers": '{"model": "rec", "task": "a", "response": "x"}\n'})
    return template.format(prefix=value, key=value, reply=value, file=value)


@pytest.mark.parametrize(("template", "value", "expected", "outcome"), [
    (CONVERSATION, "[{{ speker }}]: ",
     "demo.yaml:9: tasks[0].conversation.speaker_prefix: template error: 'speker' is undefined", {"failed": 1}),
    (REPLAY, "{{ qdi }}", "demo.yaml:5: models.rec.replay.task_key: template error: 'qdi' is undefined",
     {"errors": 1}),
    (REPLAY, "{{ qid }", "demo.yaml:5: models.rec.replay.task_key: template error: unexpected '}'", {"errors": 1}),
    (SCRIPTED, "{{ groups[1] }} is {{ cty }}",
     "demo.yaml:5: models.bot.script[0].reply: template error: 'cty' is undefined", {"errors": 1}),
    (AGENT, "{{ nofile }}", "demo.yaml:10: tasks[0].scorers[0].checks[0].file: template error: 'nofile' is undefined",
     {"failed": 1}),
])
def test_a_template_rendered_during_the_run_that_reads_an_undefined_name_is_found_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], template: str, value: str, expected: str,
    outcome: dict[str, int],
) -> None:
    """Validate said OK; the run failed the case (a replay key or reply with '<suite>:' and no line) after calls."""
    code, out = validate(pytester, capsys, offline_suite(template, value, pytester))
    assert code == 1 and f"suites/{expected}" in out, out
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines([f"*{glob(expected)}*"])
    assert_not_infrastructure(result)
    if "failed" in outcome:  # the case alone fails, before its model is called
        record = next(iter(records(pytester).values()))
        assert record["status"] == "invalid" and record["usage"]["calls"] == 0


@pytest.mark.parametrize(("template", "value", "hint"), [
    (CONVERSATION, "[{{ speker }}]: ", "hint: did you mean 'speaker'? it can read: model, speaker, task_id, tone"),
    (REPLAY, "{{ qdi }}", "hint: did you mean 'qid'? no case of this suite defines it"),
    (SCRIPTED, "{{ cty }}", "hint: did you mean 'city'? no case of this suite defines it; a reply sees the case "
                            "variables (and a scorer's vars:), groups, last_user, run, task, turn"),
])
def test_an_undefined_name_in_a_template_rendered_during_the_run_gets_a_did_you_mean(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], template: str, value: str, hint: str
) -> None:
    _, out = validate(pytester, capsys, offline_suite(template, value, pytester))
    assert hint in out, out


@pytest.mark.parametrize(("template", "value"), [
    (CONVERSATION, "[{{ speaker }} to {{ model.name }} on {{ task_id }}, {{ tone }}{{ extra | default('') }}]: "),
    (REPLAY, "{{ task_id if task_id == qid else qid }}"),
    (SCRIPTED, "{{ groups[1] }}: {{ city }} ({{ range(2) | list | length }})"),  # city: only capital-* tasks have it
    (AGENT, "{{ fname }}"),
])
def test_templates_rendered_during_the_run_may_read_what_they_are_rendered_with(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], template: str, value: str
) -> None:
    """The case's variables, the names the run adds (speaker, task_id, groups...) and optional names all pass."""
    code, out = validate(pytester, capsys, offline_suite(template, value, pytester))
    assert code == 0, out
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    assert result.parseoutcomes().get("failed", 0) == 0 and result.parseoutcomes().get("errors", 0) == 0, \
        result.stdout.str()
    assert_not_infrastructure(result)


# ------------------------------------------------------- a conversation command's templates, rendered when it applies

COMMANDS = """\
models:
  bot:
    provider: scripted
    script:
      - {{turn: 1, reply: "!temp 1.5 and !add_ai guest \\"a poet\\""}}
      - {{reply: "fine"}}
  guest: {{provider: echo, label: Guest, default: false}}
tasks:
  - id: chat
    vars: {{tone: calm}}
    conversation:
      mode: shared
      max_turns: 1
      seed: hello
      participants: [{{name: A}}, {{name: B}}]
      commands:
        temp: {{action: set_temperature, notice: "{notice}"}}
        add_ai:
          action: invite
          models: [guest]
          name: "{name}"
          system: "{system}"
"""
NOTICE = "[{{ speaker }} set {{ value }}]"
NAME = "{{ persona }}-{{ me.index }}"
SYSTEM = "You are {{ me.name }}, invited by {{ inviter }}."


def commands_suite(notice: str = NOTICE, name: str = NAME, system: str = SYSTEM) -> str:
    return COMMANDS.format(notice=notice, name=name, system=system)


@pytest.mark.parametrize(("templates", "expected", "hint"), [
    ({"notice": "[{{ speker }} set {{ value }}]"},
     "demo.yaml:17: tasks[0].conversation.commands.temp.notice: template error: 'speker' is undefined",
     "hint: did you mean 'speaker'? it can read: model, speaker, task_id, tone, value"),
    ({"name": "{{ persna }}-{{ me.index }}"},
     "demo.yaml:21: tasks[0].conversation.commands.add_ai.name: template error: 'persna' is undefined",
     "hint: did you mean 'persona'? it can read: inviter, me, model, persona, task_id, tone"),
    ({"system": "You are {{ me.name }}, invited by {{ invter }}."},
     "demo.yaml:22: tasks[0].conversation.commands.add_ai.system: template error: 'invter' is undefined",
     "hint: did you mean 'inviter'? it can read: inviter, me, model, persona, task_id, tone"),
    ({"notice": "[{{ speaker }} as {{ me.name }}]"},  # me: an invite's name and system see it, a notice does not
     "demo.yaml:17: tasks[0].conversation.commands.temp.notice: template error: 'me' is undefined",
     "it can read: model, speaker, task_id, tone, value"),
], ids=["notice", "invite-name", "invite-system", "me-in-a-notice"])
def test_a_command_template_that_reads_an_undefined_name_is_found_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], templates: dict[str, str], expected: str,
    hint: str,
) -> None:
    """Validate said OK; the run called the models, then failed the case when the command applied."""
    code, out = validate(pytester, capsys, commands_suite(**templates))
    assert code == 1 and f"suites/{expected}" in out and hint in out, out
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{glob(expected)}*"])
    assert_not_infrastructure(result)
    record = records(pytester)["chat"]
    assert record["status"] == "invalid" and not record["call_log"] and record["usage"]["calls"] == 0


def test_command_templates_may_read_every_name_they_are_rendered_with(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case's variables, model and task_id; a notice's speaker and value; an invite's me, persona, inviter."""
    case = "{{ model.name }} {{ task_id }} {{ tone }} {{ extra | default('') }}"
    text = commands_suite(
        notice=f"[{{{{ speaker }}}} set {{{{ value }}}}; {case}]",
        name="{{ persona | replace(' ', '-') }}-{{ inviter }}-{{ me.index }}-{{ me.company }}-{{ me.model.label }}"
             "-{{ model.name }}-{{ task_id }}-{{ tone }}",
        system=f"You are {{{{ me.name }}}} ({{{{ me.model.name }}}}), invited by {{{{ inviter }}}} as "
               f"{{{{ persona }}}}; {case}",
    )
    code, out = validate(pytester, capsys, text)
    assert code == 0, out
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert_not_infrastructure(result)
    conversation = records(pytester)["chat"]["conversation"]
    name = "a-poet-A-3-echo-Guest-bot-chat-calm"
    guest = conversation["participants"][2]
    assert guest["name"] == name, conversation["participants"]
    assert guest["system"] == f"You are {name} (guest), invited by A as a poet; bot chat calm ", guest
    notices = [e["content"] for e in conversation["entries"] if e["kind"] == "notice"]
    assert "[A set 1.5; bot chat calm ]" in notices, notices
