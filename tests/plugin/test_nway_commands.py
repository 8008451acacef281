"""In-conversation commands end to end: each one's effect on what is sent next, and each limit as an event."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer


def record_of(pytester: pytest.Pytester) -> dict[str, Any]:
    (line,) = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return json.loads(line)  # type: ignore[no-any-return]


def events(record: dict[str, Any]) -> list[tuple[str, bool, str]]:
    return [(e["event"], e["ok"], e["content"]) for e in record["conversation"]["entries"] if e["kind"] == "event"]


def bodies(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests if r["model"] == model_id]


COMMANDS = """\
commands:
        temp: {action: set_temperature, range: [0, 2]}
        note: {action: append_system, heading: "Your notes:"}
        hush: {action: mute}
        invite: {action: invite, models: [guest], max_participants: 3}
"""


def test_commands_change_the_speakers_next_call_and_hidden_ones_never_reach_the_others(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    actor, listener, guest = (f"cmd-{uuid.uuid4().hex[:8]}" for _ in range(3))
    mock_server.add_rule({"model": actor, "match": r"^\[User\]", "reply": 'Hello !temp 1.25 !note "Be terse."'})
    mock_server.add_rule({"model": actor, "reply": "!hush listening now !invite guest"})
    suite = (
        f"providers:\n  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
        f"models:\n  actor: {{provider: local, id: {actor}, temperature: 0.5}}\n"
        f"  listener: {{provider: local, id: {listener}, default: false}}\n"
        f"  guest: {{provider: local, id: {guest}, default: false}}\n"
        "tasks:\n"
        "  - id: commands\n"
        "    system: 'You are {{ me.name }}.'\n"
        "    conversation:\n"
        "      mode: shared\n"
        "      seed: start\n"
        "      participants: [{}, {model: listener}]\n"
        "      max_turns: 3\n"
        f"      {COMMANDS}"
    )
    pytester.makefile(".yaml", **{"suites/commands": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    first, second = bodies(mock_server, actor)  # round 3: muted
    assert first["temperature"] == 0.5 and second["temperature"] == 1.25
    assert second["messages"][0] == {"role": "system", "content": "You are AI-1.\n\nYour notes:\n- Be terse."}
    assert second["messages"][2] == {"role": "assistant", "content": 'Hello !temp 1.25 !note "Be terse."'}
    heard = bodies(mock_server, listener)[0]["messages"]
    assert heard[2:] == [
        {"role": "user", "content": "[AI-1]: Hello"},
        {"role": "user", "content": "[AI-1 changed its temperature]"},
        {"role": "user", "content": "[AI-1 added to its own instructions]"},
    ]
    # mute and invite stay visible, so the others can learn them
    assert (
        {"role": "user", "content": "[AI-1]: !hush listening now !invite guest"}
        in bodies(mock_server, listener)[1]["messages"]
    )
    guest_calls = bodies(mock_server, guest)
    assert len(guest_calls) == 2  # joins at the end of round 2, then speaks in round 3
    assert guest_calls[0]["messages"][0] == {
        "role": "system",
        "content": "You are AI-3.\n\nYou have just been invited into a conversation between AI models. "
        "Take part in your own voice.",
    }
    record = record_of(pytester)
    assert [(e[0], e[1]) for e in events(record)] == [
        ("temp", True), ("note", True), ("hush", True), ("invite", True), ("join", True), ("skip", True), ("end", True)
    ]
    rounds = [(e["round"], e["speaker"]) for e in record["conversation"]["entries"] if e["kind"] == "message"]
    assert rounds == [(1, "AI-1"), (1, "AI-2"), (2, "AI-1"), (2, "AI-2"), (2, "AI-3"), (3, "AI-2"), (3, "AI-3")]
    actor_seat, _, guest_seat = record["conversation"]["participants"]
    assert (actor_seat["temperature"], actor_seat["prompt_additions"]) == (1.25, ["Be terse."])
    assert (guest_seat["joined_round"], guest_seat["invited_by"], guest_seat["candidate"]) == (2, "AI-1", False)


LIMITS = """\
models:
  tester:
    provider: scripted
    script:
      - {turn: 1, reply: "!temp 2.5 !temp warm !temp"}
      - {turn: 2, reply: "!note \\"ok\\" !note and this one is long enough"}
      - {turn: 3, reply: "!temp 1 !temp 0.5"}
      - {turn: 4, reply: "!invite nobody !invite e !invite other !invite 'Echo Two'"}
      - {reply: "!invite echo2 !hush !hush"}
  other: {provider: scripted, default: false, script: [{reply: "noted"}]}
  echo2: {provider: scripted, label: Echo Two, default: false, script: [{reply: "hello"}]}
  echo3: {provider: scripted, label: Echo Three, default: false, script: [{reply: "hi"}]}
tasks:
  - id: limits
    conversation:
      mode: broadcast
      participants: [{context: [{role: user, content: go}]}, {model: other}]
      max_turns: 5
      commands:
        temp: {action: set_temperature, range: [0, 2], max_uses: 1}
        note: {action: append_system, min_length: 5}
        hush: {action: mute}
        invite: {action: invite, models: [other, echo2, echo3], max_participants: 3}
    scorers:
      - {type: contains, value: "[event] AI-1: !temp 2.5 failed"}
"""


def test_every_limit_gives_a_failed_event_and_the_conversation_goes_on(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/limits": LIMITS})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    record = record_of(pytester)
    found = [(name, ok, detail) for name, ok, detail in events(record) if name not in ("end", "join", "skip")]
    assert found == [
        ("temp", False, "AI-1: !temp 2.5 failed: 2.5 is outside the allowed range [0, 2]"),
        ("temp", False, "AI-1: !temp warm failed: expected a number, got 'warm'"),
        ("temp", False, "AI-1: !temp failed: expected a number"),
        ("note", False, 'AI-1: !note "ok" failed: the text must have at least 5 characters, got 2'),
        ("note", True, "AI-1 added to its system prompt: 'and this one is long enough'"),
        ("temp", True, "AI-1 set its temperature to 1"),
        ("temp", False, "AI-1: !temp 0.5 failed: AI-1 has used !temp 1 time, the limit"),
        ("invite", False, "AI-1: !invite nobody failed: unknown model 'nobody'; can invite: other, echo2, echo3"),
        ("invite", False, ("AI-1: !invite e failed: 'e' matches several models (other, echo2, echo3); "
                           "can invite: other, echo2, echo3")),
        ("invite", False, "AI-1: !invite other failed: other is already taking part (as AI-2)"),
        ("invite", True, "AI-1 invited echo2; it joins as AI-3 at the end of round 4"),
        ("invite", False, "AI-1: !invite echo2 failed: the conversation is full: 3 participants, at most 3"),
        ("hush", True, "AI-1 muted itself for its next turn"),
        ("hush", False, "AI-1: !hush failed: AI-1 is already muted for its next turn"),
    ]
    assert record["status"] == "passed"
    # failed commands stay in what the others saw; the successful hidden one is gone
    seen = [
        e["content"] for e in record["conversation"]["entries"] if e["kind"] == "message" and e["speaker"] == "AI-1"
    ]
    assert seen[0] == "!temp 2.5 !temp warm !temp"
    assert seen[1] == '!note "ok"'
    assert seen[2] == "!temp 0.5"
