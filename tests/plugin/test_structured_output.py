"""output_schema: and function tools end to end: YAML, collection errors, both wire formats, model failures."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

SCHEMA = """
    output_schema:
      type: object
      properties:
        city: {type: string}
        population: {type: integer, minimum: 0}
      required: [city, population]
      additionalProperties: false
"""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {record["model"]: record for record in map(json.loads, lines)}


def offline_suite(replies: dict[str, str], schema: str = SCHEMA) -> str:
    models = "".join(f"  {name}:\n    provider: scripted\n    script:\n      - {rule}\n"
                     for name, rule in replies.items())
    return ("models:\n" + models + "tasks:\n  - id: city\n    prompt: Largest city of Peru, with its population?\n"
            + schema + "    scorers:\n      - {name: city, type: json_path, path: $.city, equals: Lima}\n")


def test_a_matching_answer_is_parsed_into_the_record_and_checks_read_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": offline_suite({
        "good": """{json: {city: Lima, population: 10000000}}""",
        "words": "{reply: 'The largest city is Lima.'}",
        "short": "{reply: '{\"city\": \"Lima\"}'}",
        "shy": "{refusal: I cannot help with that.}",
    })})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines([
        "*demo::city?words-run1?*", "*the answer is not JSON (Expecting value at line 1 column 1): "
                                    "\"The largest city is Lima.\"*",
        "*demo::city?short-run1?*",
        "*the answer does not match output_schema at $: 'population' is a required property*",
        "*demo::city?shy-run1?*", "*the model refused to answer: I cannot help with that.*",
    ])
    found = records(pytester)
    assert found["good"]["structured_output"] == {"schema": "answer", "value": {"city": "Lima", "population": 10000000},
                                                  "valid": True, "problem": None, "refusal": None}
    assert found["good"]["response"] == '{"city": "Lima", "population": 10000000}'
    assert found["short"]["status"] == "failed" and found["short"]["error"] is None  # the model's failure, no error
    assert found["short"]["composite"] == 1.0  # its city is right: the components keep what they found
    assert found["shy"]["structured_output"]["refusal"] == "I cannot help with that."


def test_a_task_without_output_schema_keeps_its_records_as_they_were(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": offline_suite({"good": "{reply: Lima}"}, schema="")})
    pytester.runpytest("suites").assert_outcomes(failed=1)
    assert "structured_output" not in records(pytester)["good"]


def test_a_schema_in_a_file_of_the_suites_folder(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "city.schema.json").write_text(json.dumps(
        {"type": "object", "properties": {"city": {"const": "Lima"}}, "required": ["city"]}))
    schema = "    output_schema: {file: city.schema.json, name: city_answer, strict: true}\n"
    pytester.makefile(".yaml", **{"suites/demo": offline_suite({"good": "{json: {city: Lima}}",
                                                                "bad": "{json: {city: Cusco}}"}, schema)})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*does not match output_schema at $.city: 'Lima' was expected*"])
    assert records(pytester)["good"]["structured_output"]["schema"] == "city_answer"


@pytest.mark.parametrize(("schema", "expected"), [
    ("    output_schema:\n      type: object\n      properties:\n        city: {type: town}\n",
     "*demo.yaml:12: tasks?0?.output_schema.properties.city.type: not a valid JSON Schema (2020-12) at "
     "properties.city.type: 'town' is not valid under any of the given schemas*"),
    ("    output_schema: ../outside.json\n", "*demo.yaml:9: tasks?0?.output_schema*outside*"),
    ("    output_schema: bad.yaml\n", "*demo.yaml:9: tasks?0?.output_schema: schema file 'bad.yaml' cannot be read "
                                      "as JSON or YAML*"),
    ("    output_schema: missing.json\n",
     "*demo.yaml:9: tasks?0?.output_schema: schema file 'missing.json' does not exist under the suite's folder*"),
    ("    output_schema: {schema: {type: object}, file: x.json}\n",
     "*demo.yaml:9: tasks?0?.output_schema: give schema: or file:, not both*"),
    ("    output_schema: {schema: {type: object}, name: 'a b'}\n",
     "*demo.yaml:9: tasks?0?.output_schema.name: name 'a b' is not a schema name*"),
])
def test_a_schema_that_is_not_one_fails_at_its_line_before_any_call(
    pytester: pytest.Pytester, schema: str, expected: str
) -> None:
    (pytester.path / "outside.json").write_text("{}")
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "bad.yaml").write_text("a: &x [1]\nb: {c: *x\n")
    pytester.makefile(".yaml", **{"suites/demo": offline_suite({"good": "{json: {city: Lima}}"}, schema)})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([expected])
    assert records(pytester)["good"]["status"] == "invalid"


FUNCTIONS = """
    tools:
      - type: function
        name: get_weather
        description: The weather in a city.
        parameters: {type: object, properties: {city: {type: string}}, required: [city]}
"""


def tools_suite(models: str, expected: str, tools: str = FUNCTIONS, extra: str = "") -> str:
    return (models + "tasks:\n  - id: weather\n    prompt: Weather in Lima?\n" + tools + extra +
            "    scorers:\n      - name: calls\n        type: tool_calls\n        expected: " + expected + "\n")


SCRIPTED = ("models:\n  bot:\n    provider: scripted\n    script:\n"
            "      - tool_calls: [{name: get_weather, arguments: {city: Lima}}]\n")


def test_function_tools_run_one_turn_and_the_calls_are_the_answer(pytester: pytest.Pytester) -> None:
    suite = tools_suite(SCRIPTED, "[{name: get_weather, arguments: {city: Lima}}]")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    record = records(pytester)["bot"]
    assert record["agent"] is None and record["finish_reason"] == "tool_calls"
    assert record["transcript"][-1]["tool_calls"] == [{"id": "call_1_1", "name": "get_weather",
                                                       "arguments": '{"city": "Lima"}'}]
    (component,) = record["scores"]["components"]
    assert component["tool_calls"]["f1"] == 1.0
    assert component["tool_calls"]["expected"][0]["arguments"]["city"]["passed"] is True


@pytest.mark.parametrize(("tools", "extra", "expected"), [
    (FUNCTIONS, "", "*demo.yaml:16: tasks?0?.scorers?0?.expected?0?.name: expected?0? calls 'get_wether', which "
                    "the task does not declare (tools: get_weather)*"),
    (FUNCTIONS + "      - {type: scripted, name: lookup, result: x}\n", "",
     "*demo.yaml:15: tasks?0?.tools?1?: function tools are declared, never run*"),
    (FUNCTIONS, "    budget: {max_steps: 3}\n", "*demo.yaml:15: tasks?0?.budget: budget: is not for a task with "
                                                  "function tools*"),
    (FUNCTIONS.replace("{type: string}", "{type: text}"), "",
     "*demo.yaml:14: tasks?0?.tools?0?.parameters.properties.city.type: not a valid JSON Schema (2020-12)*"),
])
def test_tool_problems_fail_at_their_line_before_any_call(
    pytester: pytest.Pytester, tools: str, extra: str, expected: str
) -> None:
    suite = tools_suite(SCRIPTED, "[{name: get_wether, arguments: {city: Lima}}]" if not extra and tools == FUNCTIONS
                        else "[]", tools, extra)
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([expected])
    assert records(pytester)["bot"]["status"] == "invalid"
    validate = pytester.run("bench", "validate", "suites")
    assert validate.ret == 1


def http_models(server: MockServer, openai: str, claude: str) -> str:
    return ("providers:\n"
            f"  local: {{type: openai_compatible, base_url: '{server.openai_base_url}'}}\n"
            f"  claude: {{type: anthropic, base_url: '{server.url}'}}\n"
            f"models:\n  gpt: {{provider: local, id: {openai}}}\n  claude: {{provider: claude, id: {claude}}}\n")


def requests_for(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests if r["model"] == model_id]


def test_output_schema_goes_as_response_format_and_as_a_forced_tool(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    openai, claude = unique("so-gpt"), unique("so-claude")
    for model in (openai, claude):
        mock_server.add_rule({"model": model, "json": {"city": "Lima", "population": 10000000}})
    suite = http_models(mock_server, openai, claude) + offline_suite({}).removeprefix("models:\n")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    pytester.runpytest("suites").assert_outcomes(passed=2)
    (sent,) = requests_for(mock_server, openai)
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "answer", "strict": False, "schema": {
            "type": "object", "properties": {"city": {"type": "string"},
                                             "population": {"type": "integer", "minimum": 0}},
            "required": ["city", "population"], "additionalProperties": False}}}
    (sent,) = requests_for(mock_server, claude)
    assert sent["tool_choice"] == {"type": "tool", "name": "answer"}
    assert sent["tools"][0]["name"] == "answer"
    assert sent["tools"][0]["input_schema"]["required"] == ["city", "population"]
    found = records(pytester)
    for name in ("gpt", "claude"):
        assert found[name]["structured_output"]["value"] == {"city": "Lima", "population": 10000000}
    assert json.loads(found["claude"]["response"]) == {"city": "Lima", "population": 10000000}


def test_refusals_and_mismatches_over_http_are_model_failures(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    openai, claude = unique("so-gpt"), unique("so-claude")
    mock_server.add_rule({"model": openai, "refusal": "I can't help with that."})
    mock_server.add_rule({"model": claude, "json": {"city": "Lima"}})
    suite = http_models(mock_server, openai, claude) + offline_suite({}).removeprefix("models:\n")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=2)
    found = records(pytester)
    assert found["gpt"]["structured_output"]["refusal"] == "I can't help with that."
    assert found["gpt"]["reason"] == "the model refused to answer: I can't help with that."
    assert "'population' is a required property" in found["claude"]["reason"]
    assert found["claude"]["error"] is None


def test_function_tools_over_both_wire_formats(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    openai, claude = unique("fc-gpt"), unique("fc-claude")
    calls = [{"name": "get_weather", "arguments": {"city": city}} for city in ("Lima", "Cusco")]
    for model in (openai, claude):
        mock_server.add_rule({"model": model, "tool_calls": calls})
    expected = "[{name: get_weather, arguments: {city: Cusco}}, {name: get_weather, arguments: {city: Lima}}]"
    pytester.makefile(".yaml", **{"suites/demo": tools_suite(http_models(mock_server, openai, claude), expected)})
    pytester.runpytest("suites").assert_outcomes(passed=2)
    (sent,) = requests_for(mock_server, openai)
    assert sent["tools"][0]["function"]["name"] == "get_weather" and "tool_choice" not in sent
    (sent,) = requests_for(mock_server, claude)
    assert sent["tools"][0]["input_schema"]["required"] == ["city"] and "tool_choice" not in sent
    for record in records(pytester).values():
        assert [call["name"] for call in record["transcript"][-1]["tool_calls"]] == ["get_weather", "get_weather"]
        assert record["scores"]["components"][0]["tool_calls"]["f1"] == 1.0


def test_bench_validate_finds_a_bad_schema_and_tools_beside_output_schema(pytester: pytest.Pytester) -> None:
    schema = "    output_schema: {type: object, required: name}\n" + FUNCTIONS
    pytester.makefile(".yaml", **{"suites/demo": offline_suite({"good": "{json: {city: Lima}}"}, schema)})
    result = pytester.run("bench", "validate", "suites")
    assert result.ret == 1
    result.stderr.fnmatch_lines(["*demo.yaml:9: tasks?0?.output_schema: output_schema: and tools: ask for two "
                                 "kinds of answer*"])


def test_rejudging_keeps_the_structured_verdict(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": offline_suite({"good": "{json: {city: Lima, population: 1}}",
                                                                "short": "{json: {city: Lima}}"})})
    pytester.runpytest("suites", "--bench-run", "r", "-p", "no:cacheprovider").assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    lines = (pytester.path / "bench-results" / "runs" / "r" / "results.jsonl").read_text().splitlines()
    found = {record["model"]: record for record in map(json.loads, lines)}
    assert found["short"]["rejudged"] and "'population' is a required property" in found["short"]["reason"]
    assert found["short"]["structured_output"]["value"] == {"city": "Lima"}


def test_expected_calls_from_a_dataset_row(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites").mkdir()
    rows = [{"city": "Lima", "calls": [{"name": "get_weather", "arguments": {"city": "Lima"}}]},
            {"city": "Oslo", "calls": []}]
    (pytester.path / "suites" / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    models = ("models:\n  bot:\n    provider: scripted\n    script:\n"
              "      - tool_calls: [{name: get_weather, arguments: {city: Lima}}]\n")
    suite = (models + "tasks:\n  - id: 'w-{{ city }}'\n    dataset: {file: rows.jsonl}\n    prompt: Weather?\n"
             + FUNCTIONS + "    scorers:\n      - {name: calls, type: tool_calls, expected: '{{ calls }}'}\n")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*no call expected, 1 made (get_weather)*"])


def test_tool_calls_scores_an_agents_calls(pytester: pytest.Pytester) -> None:
    models = ("models:\n  agent:\n    provider: scripted\n    script:\n"
              "      - {turn: 1, tool_calls: [{name: add, arguments: {x: 1, y: 2}}]}\n"
              "      - {reply: '3'}\n")
    tools = ("    tools:\n      - type: scripted\n        name: add\n"
             "        parameters: {type: object, properties: {x: {type: number}, y: {type: number}}}\n"
             "        result: '{{ args.x + args.y }}'\n")
    scorer = "    scorers:\n      - {name: calls, type: tool_calls, expected: [{name: add, arguments: {x: 1, y: 2}}]}\n"
    suite = models + "tasks:\n  - id: sum\n    prompt: 1 + 2?\n" + tools + scorer
    pytester.makefile(".yaml", **{"suites/demo": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    (record,) = records(pytester).values()
    assert record["scores"]["components"][0]["tool_calls"]["made"][0]["arguments"] == {"x": 1, "y": 2}


def test_each_model_may_ask_in_the_other_form(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    openai, claude = unique("so-gpt"), unique("so-claude")
    for model in (openai, claude):
        mock_server.add_rule({"model": model, "json": {"city": "Lima", "population": 1}})
    models = http_models(mock_server, openai, claude).replace(
        f"{{provider: local, id: {openai}}}", f"{{provider: local, id: {openai}, structured_output: tool}}").replace(
        f"{{provider: claude, id: {claude}}}", f"{{provider: claude, id: {claude}, structured_output: native}}")
    pytester.makefile(".yaml", **{"suites/demo": models + offline_suite({}).removeprefix("models:\n")})
    pytester.runpytest("suites").assert_outcomes(passed=2)
    (sent,) = requests_for(mock_server, openai)
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "answer"}}
    (sent,) = requests_for(mock_server, claude)
    assert sent["output_config"]["format"]["type"] == "json_schema" and "tool_choice" not in sent
    for record in records(pytester).values():
        assert record["structured_output"]["value"] == {"city": "Lima", "population": 1}
        assert record["transcript"][-1].get("tool_calls") is None


def test_expected_calls_from_a_row_naming_an_undeclared_tool_fail_before_any_call(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "rows.jsonl").write_text(json.dumps({"calls": [{"name": "launch"}]}) + "\n")
    suite = (SCRIPTED + "tasks:\n  - id: w\n    dataset: {file: rows.jsonl}\n    prompt: Weather?\n" + FUNCTIONS
             + "    scorers:\n      - {name: calls, type: tool_calls, expected: '{{ calls }}'}\n")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    result = pytester.run("bench", "validate", "suites")
    assert result.ret == 1
    result.stderr.fnmatch_lines(["*tasks?0?.scorers?0?.expected?0?.name: expected?0? calls 'launch', which the task "
                                 "does not declare*"])


def test_a_judge_reads_the_parsed_answer_and_the_calls(pytester: pytest.Pytester) -> None:
    judge = ("judges:\n  grader:\n    provider: scripted\n    script:\n"
             "      - {regex: 'city=Lima', reply: '[[10]]'}\n      - {regex: 'calls=get_weather', reply: '[[9]]'}\n"
             "      - {reply: '[[1]]'}\n")
    models = ("models:\n  bot:\n    provider: scripted\n    script:\n"
              "      - {task: city, json: {city: Lima, population: 1}}\n"
              "      - {task: weather, tool_calls: [{name: get_weather, arguments: {city: Lima}}]}\n")
    grade = ("      - {type: llm_judge, judge: grader, scale: [1, 10], threshold: 0.5,\n"
             "         prompt: \"{PROMPT} SCORE: N\"}\n")
    tasks = ("tasks:\n  - id: city\n    prompt: City?\n" + SCHEMA + "    scorers:\n"
             + grade.replace("{PROMPT}", "city={{ output.city }}")
             + "  - id: weather\n    prompt: Weather?\n" + FUNCTIONS + "    scorers:\n"
             + grade.replace("{PROMPT}", "calls={{ tool_calls | map(attribute='name') | join(',') }}"))
    pytester.makefile(".yaml", **{"suites/demo": judge + models + tasks})
    pytester.runpytest("suites").assert_outcomes(passed=2)
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    values = sorted(json.loads(line)["composite"] for line in lines)
    assert values == [pytest.approx(8 / 9), 1.0]
