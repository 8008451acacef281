"""Model-to-model conversations end to end: who is sent what in each mode, order, stop, folding, logs."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    path = pytester.path / "bench-results" / "results.jsonl"
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r for line in path.read_text().splitlines()}


def mock_models(server: MockServer, count: int) -> tuple[list[str], str]:
    """``count`` model ids of their own on the mock server (it echoes), and the providers: block."""
    ids = [f"nw-{uuid.uuid4().hex[:8]}" for _ in range(count)]
    return ids, f"providers:\n  local: {{type: openai_compatible, base_url: '{server.openai_base_url}'}}\n"


def sent(server: MockServer, model_id: str) -> list[list[dict[str, Any]]]:
    return [r["body"]["messages"] for r in server.requests if r["model"] == model_id]


def speakers(record: dict[str, Any]) -> list[str]:
    return [e["speaker"] for e in record["conversation"]["entries"] if e["kind"] == "message"]


def test_shared_mode_maps_roles_for_each_of_three_speakers_in_turn(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    (m1, m2, m3), providers = mock_models(mock_server, 3)
    suite = providers + (
        f"models:\n  one: {{provider: local, id: {m1}}}\n  two: {{provider: local, id: {m2}, default: false}}\n"
        f"  three: {{provider: local, id: {m3}, default: false}}\n"
        "tasks:\n"
        "  - id: room\n"
        "    system: 'You are {{ me.name }}.'\n"
        "    conversation:\n"
        "      mode: shared\n"
        "      seed: Hello\n"
        "      participants:\n"
        "        - {name: AI-1}\n"
        "        - {name: AI-2, model: two}\n"
        "        - {name: AI-3, model: three}\n"
        "      max_turns: 2\n"
    )
    pytester.makefile(".yaml", **{"suites/room": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    order = [r["model"] for r in mock_server.requests if r["model"] in (m1, m2, m3)]
    assert order == [m1, m2, m3, m1, m2, m3]
    a1 = "echo: [User]: Hello"
    a2 = f"echo: [AI-1]: {a1}"
    a3 = f"echo: [AI-2]: {a2}"
    first_of_1, second_of_1 = sent(mock_server, m1)
    assert first_of_1 == [{"role": "system", "content": "You are AI-1."}, {"role": "user", "content": "[User]: Hello"}]
    assert sent(mock_server, m2)[0] == [
        {"role": "system", "content": "You are AI-2."},
        {"role": "user", "content": "[User]: Hello"},
        {"role": "user", "content": f"[AI-1]: {a1}"},
    ]
    assert second_of_1 == [
        {"role": "system", "content": "You are AI-1."},
        {"role": "user", "content": "[User]: Hello"},
        {"role": "assistant", "content": a1},
        {"role": "user", "content": f"[AI-2]: {a2}"},
        {"role": "user", "content": f"[AI-3]: {a3}"},
    ]
    third = sent(mock_server, m3)[1]
    assert [m["role"] for m in third] == ["system", "user", "user", "user", "assistant", "user", "user"]
    record = records(pytester)["room[one-run1]"]
    assert speakers(record) == ["AI-1", "AI-2", "AI-3"] * 2
    assert record["usage"]["calls"] == 2  # the model under test's calls; each seat's are in the log
    assert [p["calls"] for p in record["conversation"]["participants"]] == [2, 2, 2]
    assert record["conversation"]["ended"]["reason"] == "max_turns"
    assert record["response"].startswith("Participants: AI-1 (one), AI-2 (two), AI-3 (three)\n\nUser: Hello\n\nAI-1: ")


def test_broadcast_mode_keeps_private_histories_and_broadcasts_each_reply(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    (m1, m2, m3), providers = mock_models(mock_server, 3)
    suite = providers + (
        f"models:\n  one: {{provider: local, id: {m1}}}\n  two: {{provider: local, id: {m2}, default: false}}\n"
        f"  three: {{provider: local, id: {m3}, default: false}}\n"
        "tasks:\n"
        "  - id: private\n"
        "    conversation:\n"
        "      mode: broadcast\n"
        "      participants:\n"
        "        - {system: First., context: [{role: user, content: start}]}\n"
        "        - {model: two}\n"
        "        - {model: three, context: [{role: assistant, content: I was here}]}\n"
        "      max_turns: 2\n"
    )
    pytester.makefile(".yaml", **{"suites/private": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    r1 = "echo: start"
    r2 = f"echo: {r1}"
    r3 = f"echo: {r2}"
    first_of_1, second_of_1 = sent(mock_server, m1)
    assert first_of_1 == [{"role": "system", "content": "First."}, {"role": "user", "content": "start"}]
    assert sent(mock_server, m2)[0] == [{"role": "user", "content": r1}]  # no speaker prefix in broadcast
    assert sent(mock_server, m3)[0] == [
        {"role": "assistant", "content": "I was here"},
        {"role": "user", "content": r1},
        {"role": "user", "content": r2},
    ]
    assert second_of_1 == [
        {"role": "system", "content": "First."},
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": r1},
        {"role": "user", "content": r2},
        {"role": "user", "content": r3},
    ]
    assert sent(mock_server, m2)[1][:3] == [
        {"role": "user", "content": r1}, {"role": "assistant", "content": r2}, {"role": "user", "content": r3}
    ]
    record = records(pytester)["private[one-run1]"]
    assert speakers(record) == ["AI-1", "AI-2", "AI-3"] * 2


ORDERED = """\
models:
  a: {provider: scripted, script: [{reply: "a{{ turn }}"}]}
  b: {provider: scripted, default: false, script: [{reply: "b{{ turn }}"}]}
  c: {provider: scripted, default: false, script: [{reply: "c{{ turn }}"}]}
tasks:
  - id: ordered
    conversation:
      mode: shared
      participants: [{name: Ann}, {name: Bob, model: b}, {name: Cy, model: c}]
      order: [Cy, 1, Cy]
      max_turns: 2
"""


def test_order_names_the_speakers_of_a_round_by_name_or_position(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/ordered": ORDERED})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    record = records(pytester)["ordered[a-run1]"]
    assert speakers(record) == ["Cy", "Ann", "Cy"] * 2
    contents = [e["content"] for e in record["conversation"]["entries"] if e["kind"] == "message"]
    assert contents == ["c1", "a1", "c2", "c3", "a2", "c4"]


STOPPING = """\
models:
  talker: {provider: scripted, script: [{reply: "talk {{ me.name }} {{ round }}"}]}
  quitter:
    provider: scripted
    default: false
    script:
      - {turn: 2, reply: "enough. ^C^C"}
      - {reply: "fine"}
tasks:
  - id: stop
    conversation:
      mode: MODE
      participants: [{}, {model: quitter}, {}]
      max_turns: 5
      stop_sequences: ["^C^C"]
    scorers:
      - {type: contains, value: "[event] AI-2 has ended the conversation with ^C^C."}
"""


@pytest.mark.parametrize("mode", ["broadcast", "shared"])
def test_a_stop_sequence_ends_the_conversation_at_once_mid_round(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makefile(".yaml", **{"suites/stop": STOPPING.replace("MODE", mode)})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    record = records(pytester)["stop[talker-run1]"]
    assert speakers(record) == ["AI-1", "AI-2", "AI-3", "AI-1", "AI-2"]  # AI-3 never speaks in round 2
    assert record["conversation"]["ended"] == {
        "reason": "stop_sequence", "by": "AI-2", "round": 2, "detail": "AI-2 has ended the conversation with ^C^C."
    }
    assert record["conversation"]["rounds"] == 2
    assert [t["answer"] for t in record["turns"]] == ["talk AI-1 1", "talk AI-3 1", "talk AI-1 2"]


def test_each_participant_folds_its_system_prompt_by_its_own_policy(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    (m1, m2, m3), providers = mock_models(mock_server, 3)
    suite = providers + (
        f"models:\n  native: {{provider: local, id: {m1}}}\n"
        f"  folded: {{provider: local, id: {m2}, system_prompt: fold, default: false}}\n"
        f"  plain: {{provider: local, id: {m3}, default: false}}\n"
        "tasks:\n"
        "  - id: fold\n"
        "    conversation:\n"
        "      mode: broadcast\n"
        "      participants:\n"
        "        - {system: S1, context: [{role: user, content: go}]}\n"
        "        - {model: folded, system: S2}\n"
        "        - model: plain\n"
        "          system: S3\n"
        "          system_prompt: fold\n"
        "          system_fold_template: \"<SYSTEM>{{ system }}</SYSTEM>\\n\\n\"\n"
        "      max_turns: 1\n"
    )
    pytester.makefile(".yaml", **{"suites/fold": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    assert sent(mock_server, m1)[0] == [{"role": "system", "content": "S1"}, {"role": "user", "content": "go"}]
    assert sent(mock_server, m2)[0] == [{"role": "user", "content": "S2\n\necho: go"}]
    assert sent(mock_server, m3)[0] == [
        {"role": "user", "content": "<SYSTEM>S3</SYSTEM>\n\necho: go"},
        {"role": "user", "content": "echo: S2\n\necho: go"},
    ]


@pytest.mark.parametrize(
    ("policy", "last"),
    [
        ("repeat_other", {"role": "user", "content": "[User]: hi"}),
        ("continue", {"role": "user", "content": "Your move."}),
        ("leave", {"role": "assistant", "content": "echo: [User]: hi"}),
    ],
)
def test_own_last_decides_what_a_speaker_answers_after_its_own_message(
    pytester: pytest.Pytester, mock_server: MockServer, policy: str, last: dict[str, str]
) -> None:
    (m1, m2), providers = mock_models(mock_server, 2)
    suite = providers + (
        f"models:\n  me: {{provider: local, id: {m1}}}\n  you: {{provider: local, id: {m2}, default: false}}\n"
        "tasks:\n"
        "  - id: twice\n"
        "    conversation:\n"
        "      mode: shared\n"
        "      seed: hi\n"
        "      participants: [{}, {model: you}]\n"
        "      order: [1, 1]\n"
        "      max_turns: 1\n"
        f"      own_last: {policy}\n"
        "      continue_text: Your move.\n"
    )
    pytester.makefile(".yaml", **{"suites/twice": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    second = sent(mock_server, m1)[1]
    assert second[-1] == last
    assert sent(mock_server, m2) == []  # the order never names AI-2


ROTATION = """\
models:
  alpha: {provider: scripted, script: [{reply: "I am {{ me.name }}"}]}
  beta: {provider: scripted, script: [{reply: "beta speaks"}]}
  gamma: {provider: scripted, script: [{reply: "gamma speaks"}]}
judges:
  reader:
    provider: scripted
    script:
      - {regex: "Participants: AI-1 \\\\((\\\\w+)\\\\), AI-2 [\\\\s\\\\S]*\\\\nAI-1: I am AI-1\\\\n", reply: "[[10]]"}
      - {reply: "[[1]]"}
tasks:
  - id: trio
    conversation:
      mode: shared
      participants:
        - {}
        - {model: "{{ others[0] }}"}
        - {model: "{{ others[1] }}"}
      max_turns: 1
    scorers:
      - {name: J, type: llm_judge, judge: reader, prompt: "{{ transcript }}", threshold: 1}
"""


def test_the_model_under_test_takes_the_seats_without_a_model_and_ids_keep_the_usual_form(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", **{"suites/trio": ROTATION})
    result = pytester.runpytest("suites", "-v")
    result.assert_outcomes(passed=1, failed=2)  # only alpha says "I am AI-1" as AI-1
    result.stdout.fnmatch_lines(["*trio?alpha-run1? PASSED*", "*trio?beta-run1? FAILED*", "*trio?gamma-run1? FAILED*"])
    found = records(pytester)
    seats = {name: [p["model"] for p in r["conversation"]["participants"]] for name, r in found.items()}
    assert seats == {
        "trio[alpha-run1]": ["alpha", "beta", "gamma"],
        "trio[beta-run1]": ["beta", "alpha", "gamma"],
        "trio[gamma-run1]": ["gamma", "alpha", "beta"],
    }
    assert [p["candidate"] for p in found["trio[beta-run1]"]["conversation"]["participants"]] == [True, False, False]


def test_each_conversation_is_saved_as_markdown_and_json(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/stop": STOPPING.replace("MODE", "shared")})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["results: *(results.jsonl, report.md, summary.json, dashboard.html, conversations/)"])
    folder = pytester.path / "bench-results" / "conversations" / "stop"
    markdown = (folder / "stop[talker-run1].md").read_text()
    data = json.loads((folder / "stop[talker-run1].json").read_text())
    assert data["nodeid"] == "suites/stop.yaml::stop[talker-run1]" and data["status"] == "passed"
    assert data["conversation"] == records(pytester)["stop[talker-run1]"]["conversation"]
    assert markdown.startswith("# stop · stop[talker-run1]\n")
    for text in ("- ended: AI-2 has ended the conversation with ^C^C.", "| 2 | AI-2 | quitter | partner |",
                 "### Round 2", "**AI-2**", "enough. ^C^C", "> *event:* AI-2 has ended the conversation with ^C^C."):
        assert text in markdown
    # a second run replaces the logs of the first
    pytester.makefile(".yaml", **{"suites/stop": STOPPING.replace("MODE", "shared").replace("id: stop", "id: halt")})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    assert sorted(p.name for p in folder.iterdir()) == ["halt[talker-run1].json", "halt[talker-run1].md"]


def test_xdist_workers_give_the_same_conversation_logs(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/trio": ROTATION})
    pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "-n", "2").assert_outcomes(passed=1, failed=2)
    folder = pytester.path / "bench-results" / "conversations" / "trio"
    parallel = {p.name: p.read_text() for p in folder.iterdir()}
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=1, failed=2)
    assert {p.name: p.read_text() for p in folder.iterdir()} == parallel and len(parallel) == 6


def test_per_turn_scorers_score_the_turns_of_the_model_under_test(pytester: pytest.Pytester) -> None:
    suite = STOPPING.replace("MODE", "shared").replace(
        "    scorers:\n", "    scorers:\n      - {name: P, type: regex, pattern: 'AI-3', per_turn: true}\n"
    )
    pytester.makefile(".yaml", **{"suites/stop": suite})
    pytester.runpytest("suites").assert_outcomes(failed=1)
    record = records(pytester)["stop[talker-run1]"]
    assert [t["scores"] for t in record["turns"]] == [{"P": 0.0}, {"P": 1.0}, {"P": 0.0}]
    assert record["scores"]["components"][0]["detail"] == "mean of 3 turns: t1=0, t2=1, t3=0"


def test_a_partner_whose_call_fails_makes_the_case_an_infrastructure_error(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    (m1, m2), providers = mock_models(mock_server, 2)
    mock_server.add_rule({"model": m2, "status": 500})
    suite = providers.replace("}\n", ", max_retries: 0}\n") + (
        f"models:\n  me: {{provider: local, id: {m1}}}\n  broken: {{provider: local, id: {m2}, default: false}}\n"
        "tasks:\n"
        "  - id: fails\n"
        "    conversation: {mode: shared, seed: hi, participants: [{}, {model: broken}], max_turns: 1}\n"
    )
    pytester.makefile(".yaml", **{"suites/fails": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*http_500: HTTP 500 from*"])
