"""The pure parts of ``type: application``: rendering a request, reading an answer, the stand-in world."""

from __future__ import annotations

import json

import pytest

from bench_plugin.core.errors import CaseError, TransientProviderError
from bench_plugin.mock.world import world_reply
from bench_plugin.providers.application import read_answer, render_request
from bench_plugin.providers.http_request import Answer
from bench_plugin.suite.application import ApplicationRequest, ApplicationResponse

SCOPE = {"prompt": "Hi there", "messages": [{"role": "user", "content": "Hi there"}], "vars": {"n": 3, "p": "/x"},
         "env": {}, "params": {"temperature": 0.5}}


def test_a_json_body_keeps_the_types_of_single_expressions_and_empty_headers_are_dropped() -> None:
    spec = ApplicationRequest(path="/ask", headers=(("X-Empty", ""), ("X-N", "{{ vars.n }}")),
                              body={"q": "{{ prompt }}!", "n": "{{ vars.n }}", "t": "{{ params.temperature }}",
                                    "all": "{{ messages }}", "fixed": [1, True]}, body_kind="json",
                              query=(("k", "{{ vars.n }}"),))
    outgoing = render_request(spec, "http://127.0.0.1:9", SCOPE)
    assert outgoing.url == "http://127.0.0.1:9/ask" and outgoing.params == (("k", "3"),)
    assert outgoing.headers == {"x-n": "3", "content-type": "application/json"}
    assert json.loads(outgoing.content) == {"q": "Hi there!", "n": 3, "t": 0.5, "all": SCOPE["messages"],
                                            "fixed": [1, True]}


def test_a_text_body_is_sent_as_text_unless_the_headers_say_otherwise() -> None:
    plain = render_request(ApplicationRequest(body="say {{ prompt }}", body_kind="text"), "http://h", SCOPE)
    assert plain.content == b"say Hi there" and plain.headers["content-type"].startswith("text/plain")
    form = ApplicationRequest(headers=(("Content-Type", "application/x-www-form-urlencoded"),),
                              body="q={{ prompt | urlencode }}", body_kind="text")
    assert render_request(form, "http://h", SCOPE).headers == {"content-type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ApplicationRequest(path="{{ '@evil.example/steal' }}"), "does not start with /: it would leave"),
        (ApplicationRequest(headers=(("X-Note", "{{ 'a\\r\\nX-Injected: 1' }}"),)), "header X-Note rendered a value"),
    ],
    ids=["path-leaves-the-host", "header-line-break"],
)
def test_a_rendered_value_that_would_change_the_request_is_refused(spec: ApplicationRequest, message: str) -> None:
    with pytest.raises(CaseError, match=message):
        render_request(spec, "http://127.0.0.1:9", SCOPE)


def test_the_answer_is_read_by_path_by_template_or_whole() -> None:
    body = json.dumps({"a": {"b": [{"t": "first"}, {"t": "last"}]}, "n": 7, "obj": {"x": 1}})
    answer = Answer(200, body, 0.1)
    assert read_answer(ApplicationResponse(output=("a", "b", -1, "t")), answer).text == "last"
    assert read_answer(ApplicationResponse(output=("obj",)), answer).text == '{"x": 1}'
    templated = ApplicationResponse(template="{{ json.n }} from {{ status }}", input_tokens=("n",))
    completion = read_answer(templated, answer)
    assert (completion.text, completion.usage.input_tokens, completion.usage.output_tokens) == ("7 from 200", 7, None)
    assert read_answer(ApplicationResponse(), Answer(200, "plain words", 0.1)).text == "plain words"
    assert read_answer(ApplicationResponse(template="[{{ text }}] {{ json }}"), Answer(200, "x", 0)).text == "[x] None"


def test_a_path_over_a_body_that_is_not_json_is_malformed() -> None:
    with pytest.raises(TransientProviderError, match="not JSON") as caught:
        read_answer(ApplicationResponse(output=("a",)), Answer(200, "<html>\x1b[31mno</html>", 0.1))
    assert caught.value.kind == "malformed" and "\x1b" not in caught.value.message


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls", "README.txt\njournal/\nmap.txt"),
        ("```\n$ ls journal\n```", "day-1.txt\nday-2.txt"),
        ("cat ~/map.txt", "+------+------+\n| hall | 7?   |\n+------+------+"),
        ("cat nowhere", "cat: /home/explorer/nowhere: No such file or directory"),
        ('exo create_note "room 7" "gone"', 'Note created: note-'),
        ("rm -rf /", "exOS: command not found: rm"),
        ("", "exOS: type a command (help lists them)"),
    ],
)
def test_the_stand_in_world_answers_each_command_alike(command: str, expected: str) -> None:
    assert world_reply(command).startswith(expected)
    assert world_reply(command) == world_reply(command)
