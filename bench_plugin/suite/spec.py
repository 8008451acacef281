"""Frozen specs: the typed form of a suite after validation, shared by every later stage."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_plugin.chat import Message
from bench_plugin.endpoints import ModelSpec, ProviderSpec

if TYPE_CHECKING:
    from bench_plugin.errors import CaseError
    from bench_plugin.suite.agent.spec import AgentSpec
    from bench_plugin.suite.conversation.spec import ConversationSpec
    from bench_plugin.suite.templates import TemplateRenderer


@dataclass(frozen=True)
class ScorerSpec:
    """One scorer; ``name`` is the component name a composite formula refers to."""

    name: str
    type: str
    options: Mapping[str, Any]
    key: str
    line: int | None = None
    per_turn: bool = False


@dataclass(frozen=True)
class GateSpec:
    """Count component ``component`` only when ``when`` holds; otherwise drop it and renormalise."""

    component: str
    when: str


@dataclass(frozen=True)
class CompositeSpec:
    """How component scores combine into one number per case.

    With no formula the composite is the plain mean of the components. ``on_missing`` says what an
    unscored component does: ``unscored`` makes the whole case unscored, ``renormalize`` drops its
    term and rescales the remaining weights.
    """

    formula: str | None = None
    gates: tuple[GateSpec, ...] = ()
    on_missing: str = "unscored"
    key: str = "composite"
    line: int | None = None


@dataclass(frozen=True)
class TemplateSpec:
    """A template rendered when a conversation reaches it (it may read earlier answers).

    ``from_file``: ``source`` names a template file; ``literal``: ``source`` is text taken from data
    (e.g. a dataset's list of turns) and is sent as it is. ``key`` and ``line`` locate it in the YAML.
    """

    source: str
    from_file: bool = False
    literal: bool = False
    key: str = ""
    line: int | None = None


@dataclass(frozen=True)
class TurnSpec:
    """One scripted user turn; ``when`` (kind -> pattern) gates it on the last answer."""

    content: TemplateSpec
    when: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PhaseSpec:
    """Turns sent in one fresh conversation; ``system`` None keeps the task's system prompt."""

    turns: tuple[TurnSpec, ...]
    system: TemplateSpec | None = None


@dataclass(frozen=True)
class TurnsSpec:
    """A scripted multi-turn task: its phases in order (a task with plain ``turns:`` has one)."""

    phases: tuple[PhaseSpec, ...]


@dataclass(frozen=True)
class CaseSpec:
    """One pytest item's worth of work: a task, a model and a run number, fully rendered.

    ``problem`` is set when the case cannot run; the item then fails alone with that message.
    ``turns`` holds the scripted turns of a multi-turn task (``messages`` then holds only
    its system prompt); ``engine`` names the engine that runs the case.
    """

    suite: str
    path: str
    task: str
    model_name: str
    model: ModelSpec | None
    run: int
    messages: tuple[Message, ...]
    scorers: tuple[ScorerSpec, ...]
    composite: CompositeSpec
    pass_threshold: float
    variables: Mapping[str, Any]
    tags: tuple[str, ...] = ()
    judges: Mapping[str, ModelSpec] = field(default_factory=dict)
    models: Mapping[str, ModelSpec] = field(default_factory=dict)  # the suite's models (a pairwise baseline)
    templates: TemplateRenderer | None = None
    suite_dir: Path | None = None
    line: int | None = None
    problem: CaseError | None = None
    engine: str = "single_turn"
    index: int = 0
    turns: TurnsSpec | None = None  # scripted user turns (the task's turns: or phases:)
    conversation: ConversationSpec | None = None  # a model-to-model conversation (the task's conversation:)
    agent: AgentSpec | None = None  # a tool-using agent task (the task's tools:)

    @property
    def case_id(self) -> str:
        """The pytest item name, e.g. ``capital-france[gpt-4o-run2]``."""
        return f"{self.task}[{self.model_name}-run{self.run}]"


@dataclass(frozen=True)
class SuiteSpec:
    """A validated suite before expansion: the typed parts plus the raw task entries.

    ``model_problems`` and ``judge_problems`` hold models that cannot run (unknown provider...);
    their cases fail alone while the rest of the suite runs.
    """

    name: str
    path: str
    root: Path
    data_dir: Path
    models: Mapping[str, ModelSpec]
    judges: Mapping[str, ModelSpec]
    providers: Mapping[str, ProviderSpec]
    tasks: tuple[Mapping[str, Any], ...]
    scorers: tuple[ScorerSpec, ...] = ()
    composite: CompositeSpec = field(default_factory=CompositeSpec)
    pass_threshold: float = 1.0
    runs: int = 1
    variables: Mapping[str, Any] = field(default_factory=dict)
    matrix: Mapping[str, list[Any]] = field(default_factory=dict)
    derived: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None
    default_models: tuple[str, ...] = ()
    model_defaults: Mapping[str, Any] = field(default_factory=dict)
    model_problems: Mapping[str, CaseError] = field(default_factory=dict)
    judge_problems: Mapping[str, CaseError] = field(default_factory=dict)
