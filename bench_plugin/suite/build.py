"""Validated suite data -> SuiteSpec: every check that stops collection, then each part built once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_plugin.core.errors import Problems, SuiteError
from bench_plugin.core.frozen import freeze_fields
from bench_plugin.suite.agent.sandbox_choice import suite_sandbox
from bench_plugin.suite.agent.spec import SandboxOverride
from bench_plugin.suite.aggregates.outputs import csv_outputs
from bench_plugin.suite.load import load_from_yaml
from bench_plugin.suite.loader import LoadedSuite
from bench_plugin.suite.media import media_limits
from bench_plugin.suite.models import build_models, build_providers, override_judges
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.schema import check_against_schema
from bench_plugin.suite.scorer_definitions import with_uses_resolved
from bench_plugin.suite.spec import SuiteSpec
from bench_plugin.suite.tasks import build_tasks
from bench_plugin.suite.templates import TemplateRenderer

BUILTIN_PROVIDER_TYPES = ("openai_compatible", "openai", "anthropic", "application", "echo", "scripted", "replay")


@dataclass(frozen=True)
class BuildOptions:
    """Choices that change what a suite means (identical in every xdist worker).

    ``base_urls`` and ``judge`` come from the command line; ``provider_types`` are the ``type:``
    names a provider may have (the plugin passes its registry's, with entry points and conftest files).
    ``allowed_paths`` are the folders (absolute) a suite may read besides its own
    (``--bench-allow-path``, ``bench_allow_paths``), ``allowed_key_env`` the key variables a suite may
    send to any endpoint (``--bench-allow-key-env``, ``bench_allow_key_env``): see ``suite/paths.py``
    and ``suite/keys.py``. ``sandbox`` is where agent commands run (``--bench-sandbox``), over the suites' choice.
    """

    base_urls: Mapping[str, str] = field(default_factory=dict)
    judge: str | None = None
    provider_types: tuple[str, ...] = BUILTIN_PROVIDER_TYPES
    allowed_paths: tuple[Path, ...] = ()
    allowed_key_env: tuple[str, ...] = ()
    sandbox: SandboxOverride = field(default_factory=SandboxOverride)

    def __post_init__(self) -> None:
        freeze_fields(self, "base_urls")


def build_suite(loaded: LoadedSuite, options: BuildOptions | None = None) -> SuiteSpec:
    """Validate ``loaded`` and build its SuiteSpec.

    Raises:
        SuiteError: for problems that concern the whole file (schema errors, a ``data_dir`` outside
            the suite's folder).
    """
    options = options or BuildOptions()
    resolved = with_uses_resolved(loaded)  # scorers with use: are checked as their definition plus their own keys
    check_against_schema(loaded)  # every schema mistake at once; what follows reads what the schema vouched for
    if resolved is not loaded:
        check_against_schema(resolved)
    data = loaded.data
    root = loaded.path.parent
    folders = SuiteFolders.of(root, options.allowed_paths)
    problems = Problems()  # the checks below each say their mistakes, all in one run
    _check_features(loaded, problems)
    data_dir = problems.run(lambda: _data_dir(loaded, folders)) if "data_dir" in data else root
    renderer = TemplateRenderer(root, loaded.display_path, allowed=folders.allowed)
    tasks_checked = problems.run(lambda: _check_task_features(loaded)) is not None
    # the tasks are built from conversations and tools their checks passed
    tasks = problems.run(lambda: build_tasks(loaded, renderer, folders, options.sandbox)) if tasks_checked else None
    problems.raise_found()
    assert data_dir is not None and tasks is not None, "raise_found raised for the checks that gave nothing"
    providers, provider_problems = build_providers(
        loaded, data_dir, options.base_urls, options.provider_types,
        folders=folders, allowed_key_env=options.allowed_key_env,
    )
    models, model_problems = build_models(loaded, "models", providers, provider_problems, data_dir, folders)
    judges, judge_problems = build_models(loaded, "judges", providers, provider_problems, data_dir, folders)
    if options.judge:
        judges, judge_problems = override_judges(loaded, options.judge, judges, providers, provider_problems)
    sandbox, sandbox_refusal = suite_sandbox(loaded, options.sandbox)
    return SuiteSpec(
        name=data.get("suite") or loaded.path.stem,
        path=loaded.display_path,
        root=root,
        data_dir=data_dir,
        folders=folders,
        models=models,
        judges=judges,
        providers=providers,
        tasks=tasks,
        variables=data.get("variables", {}),
        default_models=_default_models(data),
        model_defaults=data.get("defaults", {}),
        model_problems=model_problems,
        judge_problems=judge_problems,
        provider_problems=provider_problems,
        outputs=csv_outputs(loaded),
        sandbox=sandbox,
        sandbox_refusal=sandbox_refusal,
        media_limits=media_limits(data.get("media_limits", {})),
        load=load_from_yaml(data.get("load")),
    )


def _default_models(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The models a run uses when --bench-models names none: all but those with ``default: false``."""
    return tuple(name for name, entry in data["models"].items() if entry.get("default", True) is not False)


def _check_features(loaded: LoadedSuite, problems: Problems) -> None:
    """Check what the schema cannot in the features the suite uses: a mistake stops collection, not the reports.

    ``aggregates:`` and ``leaderboard:`` are read again from the file at the end of the run (the reporter), a task's
    ``conversation:`` checks the keys of its mode and commands, ``tools:`` the options of each type of tool.
    Start-up: a feature's checks are imported only when the suite uses its word, and most suites use none.
    Each feature's first mistake goes into ``problems``, located at its key (the tasks' features: ``build_suite``).
    """
    data = loaded.data
    if data.get("aggregates"):
        from bench_plugin.suite.aggregates.build import build_aggregates  # start-up: see above

        problems.run(lambda: build_aggregates(loaded))
    if data.get("leaderboard"):
        from bench_plugin.suite.leaderboard import build_leaderboard  # start-up: see above

        problems.run(lambda: build_leaderboard(loaded))


def _check_task_features(loaded: LoadedSuite) -> bool:
    """The checks of the features a task may use: a conversation, an agent's tools (True when they pass).

    Raises:
        SuiteError: every problem found, the conversations' and the tools' together.
    """
    problems = Problems()
    tasks = [task for task in loaded.data.get("tasks", []) if isinstance(task, Mapping)]
    if any(isinstance(task.get("conversation"), Mapping) for task in tasks):
        from bench_plugin.suite.conversation.check import check_conversations  # start-up: see above

        problems.run(lambda: check_conversations(loaded))
    if any(task.get("tools") for task in tasks):
        from bench_plugin.suite.agent.check import check_tools  # start-up: see above

        problems.run(lambda: check_tools(loaded))
    problems.raise_found()
    return True


def _data_dir(loaded: LoadedSuite, folders: SuiteFolders) -> Path:
    """The suite's ``data_dir``, resolved.

    Raises:
        SuiteError: when it is outside the suite's folder: every dataset and replay file is read from it.
    """
    return folders.confine(str(loaded.data["data_dir"]), error=SuiteError, path=loaded.display_path,
                           key="data_dir", line=loaded.lines.line_of(("data_dir",)))
