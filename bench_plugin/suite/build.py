"""Validated suite data -> SuiteSpec: providers with presets, models with defaults, scorers."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench_plugin.endpoints import PRESETS, ModelSpec, Pricing, ProviderSpec, ThinkingSpec
from bench_plugin.errors import CaseError, SuiteError
from bench_plugin.providers.registry import provider_types
from bench_plugin.suite.agent.check import check_tools
from bench_plugin.suite.aggregates.build import build_aggregates
from bench_plugin.suite.conversation.check import check_conversations
from bench_plugin.suite.leaderboard import build_leaderboard
from bench_plugin.suite.loader import LoadedSuite, format_key_path
from bench_plugin.suite.schema import check_against_schema
from bench_plugin.suite.spec import CompositeSpec, GateSpec, ScorerSpec, SuiteSpec

_PARAM_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop")
_MODEL_OPTION_KEYS = ("script", "replay", "prefix")


@dataclass(frozen=True)
class BuildOptions:
    """Command-line choices that change what a suite means (identical in every xdist worker)."""

    base_urls: Mapping[str, str] = field(default_factory=dict)
    judge: str | None = None


def build_suite(loaded: LoadedSuite, options: BuildOptions | None = None) -> SuiteSpec:
    """Validate ``loaded`` and build its SuiteSpec.

    Raises:
        SuiteError: for problems that concern the whole file (schema errors).
    """
    options = options or BuildOptions()
    check_against_schema(loaded)
    build_aggregates(loaded)  # checked here so a mistake stops collection; the reporter re-reads the file
    build_leaderboard(loaded)  # the same for the Elo leaderboard
    check_conversations(loaded)  # mode and command keys the schema cannot check
    check_tools(loaded)  # tool options that belong to another type of tool
    data = loaded.data
    root = loaded.path.parent
    data_dir = (root / data["data_dir"]).resolve() if "data_dir" in data else root
    providers, provider_problems = _build_providers(loaded, data_dir, options)
    models, model_problems = _build_models(loaded, "models", providers, provider_problems, data_dir)
    judges, judge_problems = _build_models(loaded, "judges", providers, provider_problems, data_dir)
    if options.judge:
        judges, judge_problems = _override_judges(loaded, options.judge, judges, providers)
    default_models = tuple(
        name for name, entry in data["models"].items() if entry.get("default", True) is not False
    )
    return SuiteSpec(
        name=data.get("suite") or loaded.path.stem,
        path=loaded.display_path,
        root=root,
        data_dir=data_dir,
        models=models,
        judges=judges,
        providers=providers,
        tasks=tuple(data["tasks"]),
        scorers=build_scorers(loaded, data.get("scorers", []), ("scorers",)),
        composite=build_composite(loaded, data.get("composite"), ("composite",)),
        pass_threshold=float(data.get("pass_threshold", 1.0)),
        runs=int(data.get("runs", 1)),
        variables=data.get("variables", {}),
        matrix=data.get("matrix", {}),
        derived=data.get("derived", {}),
        system=data.get("system"),
        default_models=default_models,
        model_defaults=data.get("defaults", {}),
        model_problems=model_problems,
        judge_problems=judge_problems,
    )


def _build_providers(
    loaded: LoadedSuite, data_dir: Path, options: BuildOptions
) -> tuple[dict[str, ProviderSpec], dict[str, CaseError]]:
    providers = dict(PRESETS)
    problems: dict[str, CaseError] = {}
    known_types = provider_types()
    for name, entry in loaded.data.get("providers", {}).items():
        if entry["type"] not in known_types:
            key_path = ("providers", name, "type")
            problems[name] = CaseError(
                f"unknown provider type '{entry['type']}'",
                path=loaded.display_path,
                line=loaded.lines.line_of(key_path),
                key=format_key_path(key_path),
                hint=_choices_hint(entry["type"], known_types),
            )
        extra = {k: entry[k] for k in ("replay", "prefix") if k in entry}
        providers[name] = ProviderSpec(
            name=name,
            type=entry["type"],
            base_url=entry.get("base_url"),
            api_key_env=entry.get("api_key_env"),
            headers=dict(entry.get("headers", {})),
            timeout_s=float(entry.get("timeout", 60.0)),
            max_retries=int(entry.get("max_retries", 2)),
            concurrency=entry.get("concurrency"),
            options=_resolve_replay(extra, data_dir),
        )
    for name, url in options.base_urls.items():
        if name in providers:
            providers[name] = replace(providers[name], base_url=url)
    return providers, problems


def _build_models(
    loaded: LoadedSuite,
    section: str,
    providers: Mapping[str, ProviderSpec],
    provider_problems: Mapping[str, CaseError],
    data_dir: Path,
) -> tuple[dict[str, ModelSpec], dict[str, CaseError]]:
    defaults = loaded.data.get("defaults", {})
    models: dict[str, ModelSpec] = {}
    problems: dict[str, CaseError] = {}
    for name, entry in loaded.data.get(section, {}).items():
        key_path = (section, name, "provider")
        provider_name = entry["provider"]
        if provider_name in provider_problems:
            problems[name] = provider_problems[provider_name]
            continue
        if provider_name not in providers:
            problems[name] = CaseError(
                f"unknown provider '{provider_name}'",
                path=loaded.display_path,
                line=loaded.lines.line_of(key_path),
                key=format_key_path(key_path),
                hint=_choices_hint(provider_name, list(providers)),
            )
            continue
        provider = providers[provider_name]
        model = model_from_entry(name, entry, provider, defaults, data_dir)
        problem = _offline_problem(model)
        if problem:
            problems[name] = CaseError(
                problem, path=loaded.display_path, line=loaded.lines.line_of((section, name)), key=f"{section}.{name}"
            )
            continue
        models[name] = model
    return models, problems


def model_from_entry(
    name: str, entry: Mapping[str, Any], provider: ProviderSpec, defaults: Mapping[str, Any], data_dir: Path
) -> ModelSpec:
    """Build one ModelSpec; the model's own keys win over ``defaults``."""
    params: dict[str, Any] = {k: defaults[k] for k in _PARAM_KEYS if k in defaults}
    params.update(defaults.get("params", {}))
    params.update({k: entry[k] for k in _PARAM_KEYS if k in entry})
    params.update(entry.get("params", {}))
    options = {**provider.options, **{k: entry[k] for k in _MODEL_OPTION_KEYS if k in entry}}
    pricing = entry.get("pricing")
    return ModelSpec(
        name=name,
        provider=provider,
        id=str(entry.get("id", name)),
        label=str(entry.get("label", name)),
        params=params,
        system_prompt=entry.get("system_prompt", defaults.get("system_prompt", "native")),
        system_fold_template=entry.get(
            "system_fold_template", defaults.get("system_fold_template", "{{ system }}\n\n")
        ),
        headers={**defaults.get("headers", {}), **entry.get("headers", {})},
        pricing=Pricing(**pricing) if pricing else None,
        options=_resolve_replay(options, data_dir),
        thinking=thinking_from_entry(entry.get("thinking", defaults.get("thinking"))),
    )


def thinking_from_entry(value: Any) -> ThinkingSpec | None:
    """``thinking:`` as written: absent or false (off), true (``<think>`` tags) or ``{tags: [[open, close], ...]}``."""
    if value is None or value is False:
        return None
    if value is True or "tags" not in value:
        return ThinkingSpec()
    return ThinkingSpec(tags=tuple((str(opening), str(closing)) for opening, closing in value["tags"]))


def _resolve_replay(options: Mapping[str, Any], data_dir: Path) -> dict[str, Any]:
    out = dict(options)
    if "replay" in out:
        replay = dict(out["replay"])
        replay["file"] = str((data_dir / replay["file"]).resolve())
        out["replay"] = replay
    return out


def _offline_problem(model: ModelSpec) -> str | None:
    if model.provider.type == "scripted" and not model.options.get("script"):
        return "a scripted model needs script: a list of rules with reply:"
    if model.provider.type == "replay" and not model.options.get("replay"):
        return "a replay model needs replay: {file: recorded.jsonl}"
    return None


def _override_judges(
    loaded: LoadedSuite, judge: str, judges: Mapping[str, ModelSpec], providers: Mapping[str, ProviderSpec]
) -> tuple[dict[str, ModelSpec], dict[str, CaseError]]:
    """--bench-judge provider:model replaces every judge the suite declares."""
    model = adhoc_model(judge, providers, loaded.data.get("defaults", {}))
    if model is None:
        raise SuiteError(f"--bench-judge {judge!r}: expected provider:model, e.g. openai:gpt-4o")
    return {name: replace(model, name=name) for name in (judges or {"judge": model})}, {}


def adhoc_model(text: str, providers: Mapping[str, ProviderSpec], defaults: Mapping[str, Any]) -> ModelSpec | None:
    """A model named on the command line as ``provider:model-id``; None when it is not that form."""
    provider_name, sep, model_id = text.partition(":")
    if not sep or not model_id or provider_name not in providers:
        return None
    return model_from_entry(text, {"provider": provider_name, "id": model_id}, providers[provider_name], defaults, Path("."))


def build_scorers(
    loaded: LoadedSuite, entries: list[Mapping[str, Any]], base: tuple[Any, ...], reserved: tuple[str, ...] = ()
) -> tuple[ScorerSpec, ...]:
    """ScorerSpecs in YAML order; an unnamed scorer is named after its type (``contains_2`` if taken).

    ``reserved`` names (the suite's scorers, for a task's list) are never given to an unnamed scorer,
    so only an explicit ``name:`` replaces a suite scorer.
    """
    scorers: list[ScorerSpec] = []
    taken: set[str] = {e["name"] for e in entries if "name" in e} | set(reserved)
    for index, entry in enumerate(entries):
        name = entry.get("name")
        if name is None:
            name, n = entry["type"], 2
            while name in taken:
                name, n = f"{entry['type']}_{n}", n + 1
            taken.add(name)
        key_path = (*base, index)
        scorers.append(
            ScorerSpec(
                name=name,
                type=entry["type"],
                options={k: v for k, v in entry.items() if k not in ("name", "type", "per_turn")},
                key=format_key_path(key_path),
                line=loaded.lines.line_of(key_path),
                per_turn=bool(entry.get("per_turn", False)),
            )
        )
    return tuple(scorers)


def build_composite(loaded: LoadedSuite, entry: Any, key_path: tuple[Any, ...]) -> CompositeSpec:
    """A composite from its string or mapping form (no formula: the mean of the components)."""
    key, line = format_key_path(key_path), loaded.lines.line_of(key_path)
    if entry is None:
        return CompositeSpec(key=key, line=line)
    if isinstance(entry, str):
        return CompositeSpec(formula=entry, key=key, line=line)
    gates = tuple(GateSpec(g["component"], g["when"]) for g in entry.get("gates", []))
    return CompositeSpec(
        formula=entry.get("formula"), gates=gates, on_missing=entry.get("on_missing", "unscored"), key=key, line=line
    )


def _choices_hint(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    listing = f"choose from: {', '.join(choices)}"
    return f"did you mean '{close[0]}'? {listing}" if close else listing
