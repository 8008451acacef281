"""A task's conversation expands into a ConversationSpec per case.

Its seats are resolved and their starts rendered.
"""

from __future__ import annotations

from pathlib import Path

from bench_plugin.core.chat import Message
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.conversation.spec import ConversationSpec
from bench_plugin.suite.expand import ExpandOptions, expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.spec import CaseSpec


def expand(text: str, tmp_path: Path, models: tuple[str, ...] | None = None) -> list[CaseSpec]:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    loaded = load_suite_text(text, path=path, display_path="suites/demo.yaml")
    return expand_suite(build_suite(loaded, BuildOptions()), ExpandOptions(models=models))


SUITE = """\
system: "Suite says hi to {{ me.name }}."
models:
  a: {provider: echo, label: Alpha}
  b: {provider: scripted, script: [{reply: x}], temperature: 0.3}
tasks:
  - id: talk
    vars: {topic: rain}
    conversation:
      mode: shared
      seed: {speaker: Host, content: "Talk about {{ topic }}."}
      participants:
        - name: "{{ me.model.label }}-{{ me.index }}"
          vars: {mood: "{{ topic }}-happy"}
          temperature: 1.2
          params: {presence_penalty: 0.5}
        - model: "{{ others[0] }}"
          system: "{{ me.name }} among {{ participants | map(attribute='name') | join(', ') }}"
          system_prompt: fold
          system_fold_template: "<S>{{ system }}</S>"
      order: [2, 1]
      max_turns: 4
      commands:
        t: {action: set_temperature}
        m: {action: mute, notice: ""}
        i: {action: invite, models: [b, "echo:other"], max_participants: 3}
"""


def conversation_of(case: CaseSpec) -> ConversationSpec:
    assert case.problem is None, case.problem
    assert case.conversation is not None and case.engine == "conversation"
    return case.conversation


def test_seats_without_a_model_are_the_case_model_and_the_others_are_resolved(tmp_path: Path) -> None:
    first, second = expand(SUITE, tmp_path)
    assert (first.case_id, second.case_id) == ("talk[a-run1]", "talk[b-run1]")
    one, two = conversation_of(first).participants
    assert (one.name, one.model.name, one.candidate) == ("Alpha-1", "a", True)
    assert (two.name, two.model.name, two.candidate) == ("AI-2", "b", False)
    swapped = conversation_of(second).participants
    assert [(p.model.name, p.candidate) for p in swapped] == [("b", True), ("a", False)]
    assert first.messages == ()


def test_each_seat_has_its_params_policy_variables_and_system(tmp_path: Path) -> None:
    spec = conversation_of(expand(SUITE, tmp_path)[0])
    one, two = spec.participants
    assert one.params == {"temperature": 1.2, "presence_penalty": 0.5}
    assert dict(one.variables) == {"index": 1, "name": "Alpha-1", "model": {"name": "a", "id": "a", "label": "Alpha"},
                                   "company": "echo", "mood": "rain-happy"}
    assert one.system == "Suite says hi to Alpha-1."
    assert two.system == "AI-2 among Alpha-1, AI-2"
    assert (two.model.system_prompt, two.model.system_fold_template) == ("fold", "<S>{{ system }}</S>")
    assert two.model.params == {"temperature": 0.3}  # the model's own parameters stay


def test_order_seed_and_commands_are_ready_for_the_engine(tmp_path: Path) -> None:
    spec = conversation_of(expand(SUITE, tmp_path)[0])
    assert spec.order == (1, 0) and spec.max_turns == 4
    assert spec.seed == (Message("user", "Talk about rain.", name="Host"),)
    assert spec.speaker_prefix is not None and spec.speaker_prefix.source == "[{{ speaker }}]: "
    temperature, mute, invite = spec.commands
    assert (temperature.hide, dict(temperature.options)) == (True, {"range": [0, 2]})
    assert temperature.notice is not None and temperature.notice.source == "[{{ speaker }} changed its temperature]"
    assert (mute.hide, mute.notice) == (False, None)
    assert list(invite.models) == ["b", "echo:other"] and invite.models["echo:other"].id == "other"
    assert invite.options["max_participants"] == 3 and invite.line == 24


def test_a_broadcast_conversation_has_no_speaker_prefix_by_default(tmp_path: Path) -> None:
    text = SUITE.replace("mode: shared", "mode: broadcast").replace(
        '      seed: {speaker: Host, content: "Talk about {{ topic }}."}\n', "")
    assert conversation_of(expand(text, tmp_path)[0]).speaker_prefix is None
