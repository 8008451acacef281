"""Frozen specs of a model-to-model conversation: a task's ``conversation:`` after expansion."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.frozen import freeze_fields
from bench_plugin.suite.sources import TemplateSpec

MODES = ("broadcast", "shared")
OWN_LAST = ("repeat_other", "continue", "leave")
ACTIONS = ("set_temperature", "append_system", "mute", "invite")
# actions whose successful commands are removed from what the other participants see, by default
HIDDEN_BY_DEFAULT = ("set_temperature", "append_system")


@dataclass(frozen=True)
class ParticipantSpec:
    """One seat of the conversation, as the case starts it.

    ``model`` already carries the participant's own system-prompt policy (``system_prompt: fold``);
    ``params`` are its request parameters (temperature...) over the model's. ``candidate`` marks a
    seat played by the case's model (the model under test). ``variables`` are what templates see as
    ``me`` (``index``, ``name``, ``model``, ``company`` and the participant's ``vars``).
    """

    index: int
    name: str
    model: ModelSpec
    candidate: bool
    system: str = ""
    context: tuple[Message, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    variables: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        freeze_fields(self, "params", "variables")


@dataclass(frozen=True)
class CommandSpec:
    """An in-conversation command, written ``!NAME args`` in a reply.

    ``action`` says what it does (``ACTIONS``); ``hide`` removes a successful command from what the
    other participants see; ``notice`` is the text everyone sees after it (None: no notice);
    ``max_uses`` caps successful uses per participant. ``options`` holds the action's own keys
    (``range``, ``min_length``, ``heading``, ``max_participants``, ``name``, ``system``) and, for
    ``invite``, ``models``: the models that may be invited, by name.
    """

    name: str
    action: str
    hide: bool
    notice: TemplateSpec | None
    max_uses: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    key: str = ""
    line: int | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "options", "models")


@dataclass(frozen=True)
class ConversationSpec:
    """A model-to-model conversation (the task's ``conversation:``), ready to run.

    Everything that does not depend on the conversation's progress is rendered when the suite is expanded
    (participants' names, models, system prompts, seeded contexts); what does (notices, an invited participant's
    name and prompt, speaker prefixes) stays a template, checked but rendered by the engine
    (``engines/conversation/run.py``).

    ``mode`` is ``broadcast`` (each participant keeps a private history; a reply goes to its
    speaker as assistant and to everyone else as user) or ``shared`` (one transcript, remapped for
    each speaker: its own messages as assistant, the others' as user with ``speaker_prefix``).
    ``order`` holds 0-based participant indexes, one round's speaking order; ``max_turns`` is the
    number of rounds. ``seed`` opens a shared transcript (each message's ``name`` is its speaker).
    """

    mode: str
    participants: tuple[ParticipantSpec, ...]
    order: tuple[int, ...]
    max_turns: int
    stop_sequences: tuple[str, ...] = ()
    speaker_prefix: TemplateSpec | None = None
    own_last: str = "repeat_other"
    continue_text: str = "Let's continue our conversation."
    seed: tuple[Message, ...] = ()
    commands: tuple[CommandSpec, ...] = ()
    key: str = ""
    line: int | None = None
