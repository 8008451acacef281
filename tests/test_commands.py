"""Finding ``!commands`` in a reply, their arguments, and the text the others see once hidden ones go."""

from __future__ import annotations

from bench_plugin.engines.conversation.commands import find_commands, remove_spans
from bench_plugin.suite.conversation.spec import CommandSpec

COMMANDS = (
    CommandSpec("temperature", "set_temperature", hide=True, notice=None),
    CommandSpec("prompt", "append_system", hide=True, notice=None),
    CommandSpec("mute_self", "mute", hide=False, notice=None),
    CommandSpec("add_ai", "invite", hide=False, notice=None),
)


def parsed(text: str) -> list[tuple[str, object, object, object]]:
    return [(f.spec.name, f.value, f.persona, f.error) for f in find_commands(text, COMMANDS)]


def test_arguments_are_read_the_way_each_action_needs_them() -> None:
    text = 'go !temperature 1.5. then !prompt "be brief" and !add_ai "Grok 4" \'a poet\' !mute_self'
    assert parsed(text) == [
        ("temperature", 1.5, None, None),
        ("prompt", "be brief", None, None),
        ("add_ai", "Grok 4", "a poet", None),
        ("mute_self", None, None, None),
    ]


def test_an_unquoted_prompt_takes_the_rest_of_the_line_and_an_unquoted_model_one_word() -> None:
    assert parsed("!prompt stay curious, always\nnext line !add_ai delta, please") == [
        ("prompt", "stay curious, always", None, None),
        ("add_ai", "delta", None, None),
    ]


def test_bad_arguments_are_errors_not_exceptions() -> None:
    assert parsed("!temperature hot !temperature\n!add_ai") == [
        ("temperature", None, None, "expected a number, got 'hot'"),
        ("temperature", None, None, "expected a number"),
        ("add_ai", None, None, "expected the model to invite"),
    ]


def test_only_declared_names_standing_alone_are_commands() -> None:
    assert parsed("!temperatures 1 x!temperature 1 !!temperature 1 !unknown 2 `!temperature-x`") == []


def test_removing_hidden_commands_leaves_tidy_text() -> None:
    text = "Hello !temperature 1.5 there\n!prompt \"x y z\"\n\n\nBye"
    spans = [(f.start, f.end) for f in find_commands(text, COMMANDS)]
    assert remove_spans(text, spans) == "Hello there\n\nBye"
    assert remove_spans("!temperature 1", [(0, 14)]) == ""
