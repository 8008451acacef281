"""Agent tasks end to end.

The tool-call loop over HTTP (OpenAI and Anthropic), isolated workspaces, failed calls as record entries,
budgets, gated follow-ups, the ClawBench composite per case, and mistakes in the YAML.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer


def literal(text: str) -> str:
    """``*text*`` for fnmatch, its brackets matching themselves."""
    return "*" + re.sub(r"([][*?])", r"[\1]", text) + "*"


def run(pytester: pytest.Pytester, suite: str, *args: str, **outcomes: int) -> dict[str, dict[str, Any]]:
    pytester.makefile(".yaml", **{"suites/agent": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(**outcomes)
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r for line in lines}


@pytest.mark.parametrize("wire", ["openai_compatible", "anthropic"])
def test_tool_call_loop_over_http_function_calling(
    pytester: pytest.Pytester, mock_server: MockServer, wire: str,
) -> None:
    model = f"agent-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model, "tool_result": "^wrote", "reply": "Done: note.md written."})
    mock_server.add_rule({"model": model, "tool_result": "outside", "reply": "Writing inside instead.",
                          "tool_calls": [{"name": "write_file", "arguments": {"path": "note.md", "content": "hi"}}]})
    mock_server.add_rule({"model": model, "reply": "I'll write it.",
                          "tool_calls": [{"name": "write_file", "arguments": {"path": "../note.md", "content": "hi"}}]})
    base_url = mock_server.openai_base_url if wire == "openai_compatible" else mock_server.url
    found = run(pytester, f"""
providers:
  mock: {{type: {wire}, base_url: '{base_url}'}}
models:
  agent: {{provider: mock, id: {model}}}
tasks:
  - id: note
    prompt: Write note.md saying hi.
    tools: [write_file]
    scorers:
      - {{name: C, type: completion, checks: [{{file: note.md, contains: hi}}, {{answer: true, contains: Done}}]}}
""", passed=1)
    record = found["note[agent-run1]"]
    calls = record["agent"]["tool_calls"]
    assert [(c["step"], c["ok"], c["arguments"]["path"]) for c in calls] == [
        (1, False, "../note.md"), (2, True, "note.md"),
    ]
    assert calls[0]["error"].startswith("path '../note.md' is outside the workspace")
    assert [m["role"] for m in record["transcript"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert record["usage"]["calls"] == 3 and record["response"] == "Done: note.md written."
    bodies = [r["body"] for r in mock_server.requests if r["model"] == model]
    assert len(bodies) == 3 and all(body["tools"][0]["name" if wire == "anthropic" else "function"] for body in bodies)
    last = bodies[-1]["messages"][-1]
    if wire == "anthropic":
        assert last["role"] == "user" and last["content"][0]["type"] == "tool_result"
        assert last["content"][0]["content"] == "wrote 2 bytes to note.md"
    else:
        assert last == {"role": "tool", "tool_call_id": calls[1]["id"], "content": "wrote 2 bytes to note.md"}


def command_agent(mock_server: MockServer, command: str, cases: int, budget: str = "") -> str:
    """A suite of ``cases`` agent tasks whose model (one call at a time) runs ``command`` once, then answers done."""
    model = f"agent-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model, "tool_result": ".", "reply": "done", "delay": 0.05})
    mock_server.add_rule({"model": model, "delay": 0.05,
                          "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]})
    return f"""
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', max_retries: 0}}
models:
  agent: {{provider: mock, id: {model}, concurrency: 1}}
matrix:
  n: {list(range(1, cases + 1))}
tasks:
  - id: 'job-{{{{ n }}}}'
    prompt: Run it.
    {budget}
    tools: [{{type: command, allow: [python3], timeout: 30}}]
    scorers:
      - {{name: C, type: completion, checks: [{{answer: true, contains: done}}]}}
"""


def test_agents_run_as_many_programs_at_once_as_cases_may_work(
    pytester: pytest.Pytester, mock_server: MockServer,
) -> None:
    """Cases whose calls waited for their model's one slot gave their places up and ran their commands anyway.

    Eight 0.4 s commands ran at once under ``--bench-concurrency 2``: a command's wall-clock timeout measured the
    crowd. A case now takes a place again to run a program.
    """
    command = 'python3 -c "import time; print(time.time()); time.sleep(0.4); print(time.time())"'
    found = run(pytester, command_agent(mock_server, command, 10), "--bench-sandbox", "none",
                "--bench-concurrency", "2", passed=10)
    spans = []
    for record in found.values():
        (call,) = record["agent"]["tool_calls"]
        start, end = (float(t) for t in re.findall(r"^\d+\.\d+$", call["output"], re.M))
        spans.append((start, end))
    at_once = max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)
    assert at_once <= 2, sorted(spans)


def test_waiting_for_a_place_to_run_a_command_counts_against_the_agents_time_budget(
    pytester: pytest.Pytester, mock_server: MockServer,
) -> None:
    """A command given the budget's time left before it waited for a place ran the case 3.6 s past max_seconds: 2."""
    suite = command_agent(mock_server, 'python3 -c "import time; time.sleep(30)"', 6, "budget: {max_seconds: 1.5}")
    found = run(pytester, suite, "--bench-sandbox", "none", "--bench-concurrency", "2", "--bench-cache", "off",
                failed=6)
    for record in found.values():
        assert record["duration_s"] < 2.5, (record["nodeid"], record["duration_s"])
        (call,) = record["agent"]["tool_calls"]
        assert "timed out" in call["output"] or "waited for a place" in call["output"], call["output"]
    outputs = [record["agent"]["tool_calls"][0]["output"] for record in found.values()]
    assert any("waited for a place" in output for output in outputs), outputs


ISOLATION = """
models:
  agent:
    provider: scripted
    script:
      - {turn: 1, tool_calls: [{name: list_files}]}
      - {turn: 2, tool_calls: [{name: write_file, arguments: {path: "marker-{{ run }}.txt", content: "x"}}]}
      - {reply: "done"}
tasks:
  - id: a
    prompt: go
    tools: [list_files, write_file]
    workspace: {files: {seed.txt: "seed"}}
    scorers:
      - {name: C, type: completion, checks: [{file: seed.txt, contains: seed}]}
  - id: b
    prompt: go
    tools: [list_files, write_file]
    workspace: {files: {seed.txt: "seed"}}
"""


def test_every_case_starts_from_a_fresh_workspace(pytester: pytest.Pytester) -> None:
    found = run(pytester, ISOLATION, "--bench-runs", "2", passed=4)
    for record in found.values():
        listing, write = record["agent"]["tool_calls"]
        assert listing["output"] == "seed.txt"  # nothing another case (or run) wrote
        assert write["target"] == f"marker-{record['run']}.txt"
        assert [f["path"] for f in record["agent"]["files"]] == [f"marker-{record['run']}.txt", "seed.txt"]


FAILING_TOOLS = """
models:
  agent:
    provider: scripted
    script:
      - turn: 1
        reply: Trying things.
        tool_calls:
          - {name: read_file, arguments: {path: /etc/passwd}}
          - {name: run_command, arguments: {command: "rm -rf ."}}
          - {name: run_command, arguments: {command: "python3 -c \\"import time; time.sleep(20)\\""}}
          - {name: run_command, arguments: {command: "python3 -c \\"raise SystemExit(2)\\""}}
          - {name: deploy, arguments: {}}
          - {name: read_file, arguments: {}}
      - {reply: "I cannot do more."}
tasks:
  - id: failing
    prompt: go
    tools: [read_file, {type: command, allow: [python3], timeout: 0.5}]
    scorers:
      - {name: T, type: trajectory}
      - {name: B, type: behavior}
    pass_threshold: 0
"""


def test_failed_tool_calls_are_results_and_record_entries_never_crashes(pytester: pytest.Pytester) -> None:
    record = run(pytester, FAILING_TOOLS, passed=1)["failing[agent-run1]"]
    errors = [(c["name"], c["ok"], c["error"]) for c in record["agent"]["tool_calls"]]
    assert [e[:2] for e in errors] == [("read_file", False), ("run_command", False), ("run_command", False),
                                       ("run_command", False), ("deploy", False), ("read_file", False)]
    messages = [e[2] for e in errors]
    assert messages[0].startswith("path '/etc/passwd' is outside the workspace")
    assert messages[1] == "'rm' is not allowed; programs you may run: python3"
    assert messages[2].startswith("'python3' timed out after 0.5 s")
    assert messages[3] == "exit code 2"
    assert messages[4] == "there is no tool named 'deploy'; tools: read_file, run_command"
    assert messages[5] == "bad arguments for read_file: 'path' is a required property"
    results = [m["content"] for m in record["transcript"] if m["role"] == "tool"]
    assert results == [f"error: {m}" for m in messages[:3]] + [results[3]] + [f"error: {m}" for m in messages[4:]]
    components = {c["name"]: c for c in record["scores"]["components"]}
    assert "destructive command 'rm -rf .'" in components["T"]["detail"]
    assert components["B"]["evidence"]["failed"][0]["rule"] == "no_destructive_commands"


BUDGET = """
models:
  looper:
    provider: scripted
    script: [{reply: "Looking again.", tool_calls: [{name: list_files}]}]
tasks:
  - id: loop
    tools: [list_files]
    budget: {max_steps: 3}
    turns:
      - Find the file.
      - Anything else?
    scorers:
      - {name: C, type: completion, checks: [{answer: true, contains: found}]}
    pass_threshold: 0
"""


def test_max_steps_stops_the_loop_and_later_turns_are_not_sent(pytester: pytest.Pytester) -> None:
    record = run(pytester, BUDGET, passed=1)["loop[looper-run1]"]
    budget = record["agent"]["budget"]
    assert (budget["steps"], budget["stopped"]) == (3, "max_steps: stopped after 3 model calls")
    assert len(record["agent"]["tool_calls"]) == 3 and record["usage"]["calls"] == 3
    first, second = record["turns"]
    assert not first["skipped"] and first["call"] == 3
    assert second["skipped"] and second["skip_reason"] == "not sent: max_steps: stopped after 3 model calls"
    assert record["scores"]["components"][0]["value"] == 0.0  # what was done is still scored


def test_max_seconds_cuts_a_slow_model_call_and_the_case_is_still_scored(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model = f"slow-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model, "delay": 3, "reply": "late"})
    record = run(pytester, f"""
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', timeout: 10}}
models:
  slow: {{provider: mock, id: {model}}}
tasks:
  - id: slow
    prompt: go
    tools: [list_files]
    budget: {{max_seconds: 0.5}}
    scorers:
      - {{name: B, type: behavior}}
""", passed=1)["slow[slow-run1]"]
    assert record["agent"]["budget"]["stopped"] == "max_seconds: the 0.5 s budget ran out during a model call"
    assert record["turns"][0]["skipped"] and record["status"] == "passed"


GATED = """
models:
  agent:
    provider: scripted
    script:
      - {turn: 1, tool_calls: [{name: write_file, arguments: {path: a.txt, content: "1"}}]}
      - {turn: 2, reply: "Fixed it."}
      - {turn: 3, tool_calls: [{name: read_file, arguments: {path: a.txt}}]}
      - {reply: "It says 1."}
tasks:
  - id: gated
    tools: [read_file, write_file]
    turns:
      - Write a.txt.
      - content: "What does it say? (you said: {{ answers[0] }})"
        when: {contains: Fixed}
      - content: Why not?
        when: {regex: "(?i)cannot"}
    scorers:
      - {name: C, type: completion, checks: [{answer: true, contains: "says 1"}]}
"""


def test_gated_follow_up_turns_each_start_an_agent_loop(pytester: pytest.Pytester) -> None:
    record = run(pytester, GATED, passed=1)["gated[agent-run1]"]
    turns = [(t["index"], t["skipped"], t["call"], t["answer"]) for t in record["turns"]]
    assert turns == [(1, False, 2, "Fixed it."), (2, False, 4, "It says 1."), (3, True, None, None)]
    assert [c["turn"] for c in record["agent"]["tool_calls"]] == [1, 2]
    users = [m["content"] for m in record["transcript"] if m["role"] == "user"]
    assert users == ["Write a.txt.", "What does it say? (you said: Fixed it.)"]


COMPOSITE = """
models:
  right: {provider: scripted, script: [{reply: "42"}]}
  wrong: {provider: scripted, script: [{reply: "41"}]}
  mumbled: {provider: scripted, script: [{reply: "42, I think"}]}
judges:
  grader:
    provider: scripted
    script:
      - {contains: "I think", reply: "no idea"}
      - {reply: '{"score": 0.5}'}
tasks:
  - id: answer
    prompt: What is 6 * 7?
    tools: [list_files]
scorers:
  - {name: C, type: completion, checks: [{answer: true, contains: "42"}]}
  - {name: T, type: trajectory}
  - {name: B, type: behavior}
  - {name: J, type: llm_judge, judge: grader, prompt: "{{ checks }} {{ answer }}", scale: [0, 1],
     parse: {json_field: score}}
composite:
  formula: "0.4*C + 0.3*T + 0.2*B + 0.1*J"
  gates: [{component: J, when: "C >= 0.9999"}]
  on_missing: renormalize
pass_threshold: 0
"""


def test_clawbench_run_score_is_shown_per_case(pytester: pytest.Pytester) -> None:
    found = run(pytester, COMPOSITE, passed=3)
    details = {r["model"]: (r["composite"], r["scores"]["composite_detail"]) for r in found.values()}
    assert details["right"] == (pytest.approx(0.95), "0.4*C + 0.3*T + 0.2*B + 0.1*J = 0.95")
    assert details["wrong"] == (pytest.approx(0.5 / 0.9, abs=1e-6),
                                "(0.4*C + 0.3*T + 0.2*B) / 0.9 = 0.5556; J dropped: gate C >= 0.9999 not met")
    assert details["mumbled"] == (pytest.approx(1.0), "(0.4*C + 0.3*T + 0.2*B) / 0.9 = 1; J dropped: unscored")


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("    tools: [{type: command}]\n", "agent.yaml:6: tasks[0].tools[0]: missing required key 'allow'"),
        ("    tools: [read_file]\n    budget: {max_step: 3}\n", "tasks[0].budget.max_step: unknown key 'max_step'"),
        ("    tools: [{type: scripted, name: x, result: 1, allow: [ls]}]\n",
         "agent.yaml:6: tasks[0].tools[0].allow: 'allow' applies only to type: command"),
        ("    tools: [reed_file]\n",
         "tasks[0].tools[0]: expected one of read_file, write_file, list_files, search, got 'reed_file'"),
    ],
)
def test_schema_mistakes_in_tools_stop_collection_with_the_line(
    pytester: pytest.Pytester, task: str, expected: str,
) -> None:
    pytester.makefile(
        ".yaml", **{"suites/agent": "models:\n  m: {provider: echo}\ntasks:\n  - id: t\n    prompt: go\n" + task},
    )
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([literal(expected)])


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("    prompt: go\n    tools: [read_file, {type: read_file}]\n",
         "tasks[0].tools[1]: tool name 'read_file' is used twice"),
        ("    prompt: go\n    tools: [read_file]\n    workspace: {copy: [nowhere]}\n",
         "tasks[0].workspace.copy[0]: 'nowhere' does not exist under the suite's folder"),
        ("    prompt: go\n    tools: [read_file]\n    workspace: {files: {../x: y}}\n",
         "'../x' is not a file path inside the workspace"),
        ("    prompt: go\n    scorers: [{name: C, type: completion, checks: []}]\n",
         "scorers[0]: completion scores agent tasks: give the task tools:"),
        ("    prompt: go\n    tools: [{type: scripted, name: x, result: '{{ args.a'}]\n",
         "tasks[0].tools[0].result: template error"),
    ],
)
def test_case_mistakes_fail_that_case_alone_with_the_line(pytester: pytest.Pytester, task: str, expected: str) -> None:
    pytester.makefile(".yaml", **{"suites/agent": "models:\n  m: {provider: echo}\ntasks:\n  - id: t\n" + task})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([literal(expected)])
