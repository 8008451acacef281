"""Frozen specs: the typed form of a suite after validation, shared by every later stage."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_plugin.core.chat import Message, ResponseSchema, ToolDefinition
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.core.frozen import freeze_fields
from bench_plugin.core.media import DEFAULT_LIMITS, MediaPart
from bench_plugin.suite.agent.spec import AgentSpec, SandboxSpec
from bench_plugin.suite.aggregates.outputs import OutputFile
from bench_plugin.suite.datasets import DatasetSpec
from bench_plugin.suite.load import LoadShape, LoadStep
from bench_plugin.suite.media import MediaSpec
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.sources import Located, TemplateSpec
from bench_plugin.suite.templates import TemplateRenderer

if TYPE_CHECKING:  # start-up: built (and imported) only for a task with a conversation:
    from bench_plugin.suite.conversation.spec import ConversationSpec

_UNSAFE_ID = re.compile(r"[^\w.:@+=,/-]+")


_CASE_NODEID = re.compile(r"(?P<path>.+?)::(?P<task>.+)\[(?P<model>.+)-run(?P<run>\d+)\]")


def parse_case_nodeid(nodeid: str) -> tuple[str, str, str, int] | None:
    """``(path, task, model, run)`` of a case's node id (``path::`` and ``CaseSpec.case_id``), or None.

    ``model`` is the model's name as the id writes it (``safe_id``).
    """
    found = _CASE_NODEID.fullmatch(nodeid)
    return None if found is None else (found["path"], found["task"], found["model"], int(found["run"]))


def safe_id(text: str) -> str:
    """``text`` with runs of characters that do not belong in a test id replaced by ``-``."""
    return _UNSAFE_ID.sub("-", text.strip()).strip("-") or "task"


@dataclass(frozen=True)
class ScorerSpec:
    """One scorer; ``name`` is the component name a composite formula refers to.

    ``threshold`` is the scorer's own pass rule (its value must reach it for the case to pass);
    None when it has none (``scoring/pass_rule.py``).
    """

    name: str
    type: str
    options: Mapping[str, Any]
    key: str
    line: int | None = None
    per_turn: bool = False
    threshold: float | None = None
    # set until expansion renders it for a case (``threshold: "{{ t }}"``): then ``threshold`` holds the value
    threshold_template: str | None = None
    vars: tuple[VariableSpec, ...] = ()  # the scorer's own variables, rendered per case (suite/scorer_values.py)

    def __post_init__(self) -> None:
        freeze_fields(self, "options")


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
class TurnSpec:
    """One scripted user turn; ``when`` (kind -> pattern) gates it on the last answer; ``media`` goes with it."""

    content: TemplateSpec
    when: Mapping[str, str] = field(default_factory=dict)
    media: tuple[MediaPart, ...] = ()

    def __post_init__(self) -> None:
        freeze_fields(self, "when")


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
class VariableSpec:
    """One ``derived:`` or ``vars:`` entry: a template (or a literal) evaluated per variant."""

    name: str
    source: Any
    key: str
    line: int | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "source")


@dataclass(frozen=True)
class MessageSpec:
    """One entry of a task's ``messages:``; ``content`` None sends an empty message; ``media`` its images and audio."""

    role: str
    content: TemplateSpec | None
    name: str | None = None
    media: tuple[MediaSpec, ...] = ()


@dataclass(frozen=True)
class PromptSpec:
    """One prompt variant of ``prompts:``: an id (in case ids, the ``prompt`` tag and ``prompt_id``) and what it sends.

    Exactly one of ``prompt`` (a user message template) and ``messages`` (a whole conversation, or a
    template giving one) is set, or ``problem`` (a ``split`` file that cannot be read: its cases fail with it,
    the other variants run); ``system`` None keeps the task's system prompt.
    """

    id: str
    prompt: TemplateSpec | None = None
    messages: tuple[MessageSpec, ...] | TemplateSpec | None = None
    system: TemplateSpec | None = None
    problem: CaseError | None = None


@dataclass(frozen=True)
class TagSpec:
    """One tag: ``name`` is None for a list tag, else the key of a mapping tag (``name=value``)."""

    name: str | None
    value: TemplateSpec


@dataclass(frozen=True)
class TaskSpec:
    """One entry of ``tasks:``, built once: what expansion multiplies by variants, models and runs.

    ``engine`` runs its cases: the one it names (``engine:``), else the built-in its keys choose
    (``single_turn``, ``turns``, ``conversation``, ``agent``).
    ``grid`` is the matrix (the suite's, then the task's); ``derived`` the variables computed per
    variant, in order: the suite's ``derived:``, the task's ``vars:``, the task's ``derived:``.
    ``system`` is the task's system prompt, or the suite's. ``models`` None runs every selected model.
    ``turns``, ``phases`` and ``conversation`` are kept as written, because they are built with a
    case's variables; ``agent`` is built (or failed, as a CaseError) once: it depends on no variable.
    ``scorers`` are the suite's then the task's (a task scorer named like a suite one replaces it).
    ``prompts`` are the task's prompt variants (its own ``prompts:``, or the suite's for a task that
    gives no prompt of its own): one variant of the task per prompt. ``output_schema`` (the answer's JSON Schema)
    and ``functions`` (function tools: declared, the calls are the answer) are built once, or failed as a CaseError.
    """

    index: int
    id: TemplateSpec
    line: int | None
    engine: str
    scorers: tuple[ScorerSpec, ...]
    composite: CompositeSpec
    # None: the default pass rule (scoring/pass_rule.py); a template is rendered per case (a dataset row's threshold)
    pass_threshold: float | TemplateSpec | None
    runs: int
    tags: tuple[TagSpec, ...] = ()
    grid: Mapping[str, list[Any]] = field(default_factory=dict)
    derived: tuple[VariableSpec, ...] = ()
    dataset: DatasetSpec | None = None
    system: TemplateSpec | None = None
    prompt: TemplateSpec | None = None
    messages: tuple[MessageSpec, ...] | TemplateSpec | None = None  # a template: a dataset field's chat messages
    prompts: tuple[PromptSpec, ...] | None = None  # prompt variants (``prompts:``)
    turns: Located | None = None
    phases: Located | None = None
    conversation: Located | None = None
    agent: AgentSpec | CaseError | None = None
    models: tuple[str, ...] | None = None
    models_key: str = ""
    models_line: int | None = None
    cluster: TemplateSpec | None = None  # ``cluster:`` (the task's, its dataset's or the suite's): suite/clusters.py
    media: tuple[MediaSpec, ...] = ()  # ``images:`` and ``audio:``: sent with the last user message (suite/media.py)
    output_schema: ResponseSchema | CaseError | None = None  # suite/output_schema.py
    functions: tuple[ToolDefinition, ...] | CaseError | None = None  # suite/function_tools.py

    def __post_init__(self) -> None:
        freeze_fields(self, "grid")

    @property
    def has_turns(self) -> bool:
        """Whether the task scripts the user's turns (``turns:`` or ``phases:``)."""
        return self.turns is not None or self.phases is not None


@dataclass(frozen=True, slots=True)  # slots: every item keeps its case until it runs; a field dict was 1.3 KB a case
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
    pass_threshold: float | None  # None: the default pass rule (scoring/pass_rule.py)
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
    task_index: int | None = None  # the task's place under tasks: (messages name tasks[N].engine)
    scorer_vars: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # scorer name -> its rendered vars
    cluster: str = ""  # the cases it belongs with for the statistics (``cluster:``, default the task's id)
    # where the programs a scorer runs go (runs_tests): an agent task's sandbox, else the suite's (None: auto)
    sandbox: SandboxSpec | None = None
    load: LoadStep | None = None  # the load step it runs in (``load:``, ``--bench-load``)
    output_schema: ResponseSchema | None = None  # the answer is JSON matching it (``output_schema:``)
    functions: tuple[ToolDefinition, ...] = ()  # function tools offered in one reply: the calls are the answer
    # its scorers' templates rendered: a case with a problem elsewhere (its prompt) has them checked too
    scoring_rendered: bool = True

    def __post_init__(self) -> None:
        freeze_fields(self, "variables", "judges", "models", "scorer_vars")

    @property
    def case_id(self) -> str:
        """The pytest item name, e.g. ``capital-france[gpt-4o-run2]``."""
        # the model part too: a model named on the command line may hold any character (pytest-html
        # decodes node ids with unicode_escape, so a backslash would end the run)
        step = f"-{self.load.id_part}" if self.load is not None else ""
        return f"{self.task}[{safe_id(self.model_name)}-run{self.run}{step}]"


@dataclass(frozen=True)
class SuiteSpec:
    """A validated suite before expansion: its endpoints and models, and its tasks built once.

    ``model_problems`` and ``judge_problems`` hold models that cannot run (unknown provider...);
    their cases fail alone while the rest of the suite runs. ``provider_problems`` hold the endpoints
    that cannot be used (an unknown type, a key the user did not allow), for models named on the
    command line as ``provider:model-id``. ``folders`` are where the suite may read files.
    """

    name: str
    path: str
    root: Path
    data_dir: Path
    folders: SuiteFolders
    models: Mapping[str, ModelSpec]
    judges: Mapping[str, ModelSpec]
    providers: Mapping[str, ProviderSpec]
    tasks: tuple[TaskSpec, ...]
    variables: Mapping[str, Any] = field(default_factory=dict)
    default_models: tuple[str, ...] = ()
    model_defaults: Mapping[str, Any] = field(default_factory=dict)
    model_problems: Mapping[str, CaseError] = field(default_factory=dict)
    judge_problems: Mapping[str, CaseError] = field(default_factory=dict)
    provider_problems: Mapping[str, CaseError] = field(default_factory=dict)
    outputs: tuple[OutputFile, ...] = ()  # files it writes in the output folder (aggregate CSVs)
    # where the programs a scorer runs go (the suite's sandbox: and the command line's), and the refusal
    # raised when a case runs one under a sandbox: none the user did not consent to
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)
    sandbox_refusal: SuiteError | None = None
    media_limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))  # bytes, by kind
    load: LoadShape | None = None  # ``load:``: its cases run once per step (``suite/load.py``)

    def __post_init__(self) -> None:
        freeze_fields(self, "models", "judges", "providers", "variables", "model_defaults", "model_problems",
                      "judge_problems", "provider_problems", "media_limits")
