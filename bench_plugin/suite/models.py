"""``providers:``, ``models:`` and ``judges:`` -> ProviderSpecs and ModelSpecs, with presets and defaults."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_plugin.core.endpoints import PRESETS, ModelSpec, Pricing, ProviderSpec, ThinkingSpec, url_problem
from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.keys import check_key
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.recordings import read_recordings, recording_fields

_PARAM_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop")
_MODEL_OPTION_KEYS = ("script", "replay", "prefix")


def build_providers(
    loaded: LoadedSuite,
    data_dir: Path,
    base_urls: Mapping[str, str],
    known_types: Iterable[str],
    *,
    folders: SuiteFolders | None = None,
    allowed_key_env: Collection[str] = (),
) -> tuple[dict[str, ProviderSpec], dict[str, CaseError]]:
    """The presets and the suite's ``providers:``, with ``--bench-base-url`` overrides applied.

    Args:
        loaded: the suite.
        data_dir: the folder a replay file is relative to.
        base_urls: the user's ``--bench-base-url`` overrides, by provider name.
        known_types: the provider types that exist.
        folders: where the suite may read files (default: the suite's folder only).
        allowed_key_env: the key variables the user allows a suite to send anywhere.

    Returns:
        ``(providers, problems)``: a provider whose ``type`` is not in ``known_types``, whose replay
        file is outside the suite's folder or whose key the user does not allow (``suite/keys.py``)
        is still built, and its problem is what each case of its models fails with.
    """
    folders = folders or SuiteFolders.of(loaded.path.parent)
    providers = dict(PRESETS)
    problems: dict[str, CaseError] = {}
    types = list(known_types)
    for name, entry in loaded.data.get("providers", {}).items():
        if entry["type"] not in types:
            key_path = ("providers", name, "type")
            problems[name] = CaseError(
                f"unknown provider type '{entry['type']}'",
                path=loaded.display_path,
                line=loaded.lines.line_of(key_path),
                key=format_key_path(key_path),
                hint=choices_hint(entry["type"], types),
            )
        extra = {k: entry[k] for k in ("replay", "prefix") if k in entry}
        try:
            extra = dict(_confined_replay(extra, data_dir, folders, loaded, ("providers", name)))
        except CaseError as exc:
            problems.setdefault(name, exc)
        providers[name] = ProviderSpec(
            name=name,
            type=entry["type"],
            base_url=entry.get("base_url"),
            api_key_env=entry.get("api_key_env"),
            headers=dict(entry.get("headers", {})),
            timeout_s=float(entry.get("timeout", 60.0)),
            max_retries=int(entry.get("max_retries", 2)),
            concurrency=entry.get("concurrency"),
            options=extra,
            rpm=entry.get("rpm"),
            tpm=entry.get("tpm"),
            max_wait_s=entry.get("max_wait"),
            **({"max_response_bytes": int(entry["max_response_bytes"])} if "max_response_bytes" in entry else {}),
        )
    for name, url in base_urls.items():
        if name in providers:
            providers[name] = replace(providers[name], base_url=url)
    for name, entry in loaded.data.get("providers", {}).items():
        url = base_urls.get(name, entry.get("base_url"))
        found = url_problem(url) if isinstance(url, str) and name not in base_urls else None
        if found is not None:
            key_path = ("providers", name, "base_url")
            problems.setdefault(name, CaseError(
                f"base_url {url!r}: {found}", path=loaded.display_path, line=loaded.lines.line_of(key_path),
                key=format_key_path(key_path), hint="e.g. http://127.0.0.1:8000/v1 or https://api.openai.com/v1"))
    for name, provider in providers.items():
        key_path = ("providers", name, "api_key_env")
        problem = check_key(provider, allowed=allowed_key_env, user_url=name in base_urls,
                            path=loaded.display_path, key=format_key_path(key_path),
                            line=loaded.lines.line_of(key_path))
        if problem is not None:
            problems.setdefault(name, problem)
    return providers, problems


def build_models(
    loaded: LoadedSuite,
    section: str,
    providers: Mapping[str, ProviderSpec],
    provider_problems: Mapping[str, CaseError],
    data_dir: Path,
    folders: SuiteFolders | None = None,
) -> tuple[dict[str, ModelSpec], dict[str, CaseError]]:
    """The models of ``section`` (``models`` or ``judges``), and the problems of those that cannot run.

    ``folders`` are where a model's replay file may be (default: the suite's folder only).
    """
    folders = folders or SuiteFolders.of(loaded.path.parent)
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
                hint=choices_hint(provider_name, list(providers)),
            )
            continue
        provider = providers[provider_name]
        try:
            entry = _confined_replay(entry, data_dir, folders, loaded, (section, name))
        except CaseError as exc:
            problems[name] = exc
            continue
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
        concurrency=entry.get("concurrency"),
        rpm=entry.get("rpm"),
        tpm=entry.get("tpm"),
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


def _confined_replay(
    entry: Mapping[str, Any], data_dir: Path, folders: SuiteFolders, loaded: LoadedSuite, base: KeyPath
) -> Mapping[str, Any]:
    """``entry`` with its ``replay.file`` resolved and read, when it has one.

    The file is read here (once: the replay provider reads the same), so that a missing file, a line that is not
    JSON or a record without its fields is found before any call, at the suite's line.

    Raises:
        CaseError: at ``replay.file`` when the file is outside the suite's folder (symbolic links followed), or
            cannot be read as recordings.
    """
    if "replay" not in entry:
        return entry
    key_path = (*base, "replay", "file")
    key, line = format_key_path(key_path), loaded.lines.line_of(key_path)
    file = folders.confine(str(entry["replay"]["file"]), base=data_dir, path=loaded.display_path, key=key, line=line)
    try:
        read_recordings(str(file), recording_fields(entry["replay"]))
    except CaseError as exc:
        raise exc.located(loaded.display_path, line, key) from None
    return {**entry, "replay": {**entry["replay"], "file": str(file)}}


def _offline_problem(model: ModelSpec) -> str | None:
    if model.provider.type == "scripted" and not model.options.get("script"):
        return "a scripted model needs script: a list of rules with reply:"
    if model.provider.type == "replay" and not model.options.get("replay"):
        return "a replay model needs replay: {file: recorded.jsonl}"
    return None


def override_judges(
    loaded: LoadedSuite,
    judge: str,
    judges: Mapping[str, ModelSpec],
    providers: Mapping[str, ProviderSpec],
    provider_problems: Mapping[str, CaseError] | None = None,
) -> tuple[dict[str, ModelSpec], dict[str, CaseError]]:
    """--bench-judge provider:model replaces every judge the suite declares.

    Returns:
        ``(judges, problems)``: every judge is the model, or, when its provider cannot be used (a key
        the user does not allow...), every judge has that problem.

    Raises:
        SuiteError: when ``judge`` is not ``provider:model-id`` with a known provider.
    """
    names = list(loaded.data.get("judges") or judges) or ["judge"]  # every declared judge, even one with a problem
    # an embedding model (``similar``'s ``embedding_model``) is not a judge a chat model can stand in for
    embedders = _embedding_model_names(loaded.data)
    kept = {name: judges[name] for name in names if name in embedders and name in judges}
    names = [name for name in names if name not in embedders]
    try:
        model = adhoc_model(judge, providers, loaded.data.get("defaults", {}), provider_problems)
    except CaseError as exc:
        return kept, dict.fromkeys(names, exc)
    if model is None:
        raise SuiteError(f"--bench-judge {judge!r}: expected provider:model, e.g. openai:gpt-4o")
    return {**{name: replace(model, name=name) for name in names}, **kept}, {}


def _embedding_model_names(data: Any) -> set[str]:
    """Every name given as ``embedding_model:`` anywhere in the suite (scorers, tasks, definitions)."""
    found: set[str] = set()
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            name = node.get("embedding_model")
            if isinstance(name, str):
                found.add(name)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def adhoc_model(
    text: str,
    providers: Mapping[str, ProviderSpec],
    defaults: Mapping[str, Any],
    problems: Mapping[str, CaseError] | None = None,
) -> ModelSpec | None:
    """A model named on the command line as ``provider:model-id``; None when it is not that form.

    Raises:
        CaseError: the provider's problem in ``problems`` (a key the user does not allow...).
    """
    provider_name, sep, model_id = text.partition(":")
    if not sep or not model_id or provider_name not in providers:
        return None
    if problems and provider_name in problems:
        raise problems[provider_name]
    entry = {"provider": provider_name, "id": model_id}
    return model_from_entry(text, entry, providers[provider_name], defaults, Path("."))
