"""``providers:``, ``models:`` and ``judges:`` -> ProviderSpecs and ModelSpecs, with presets and defaults."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench_plugin.core.endpoints import PRESETS, ModelSpec, Pricing, ProviderSpec, ThinkingSpec, url_problem
from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.application import application_options, env_problem
from bench_plugin.suite.keys import check_key
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.recordings import read_recordings, recording_fields

_PARAM_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop")
_MODEL_OPTION_KEYS = ("script", "replay", "prefix", "structured_output")


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
    entries: Mapping[str, Any] = loaded.data.get("providers", {})
    for name, entry in entries.items():
        options, replay_problem = _provider_options(loaded, name, entry, data_dir, folders)
        providers[name] = _provider(name, entry, options)
        _note(problems, name, _type_problem(loaded, name, entry, types) or replay_problem)
    providers.update(_with_user_urls(providers, base_urls))
    for name, entry in entries.items():
        _note(problems, name, _url_problem(loaded, name, entry, base_urls))
    for name, provider in providers.items():
        _note(problems, name, _key_problem(loaded, name, provider, allowed_key_env, user_url=name in base_urls))
    return providers, problems


def _key_problem(
    loaded: LoadedSuite, name: str, provider: ProviderSpec, allowed: Collection[str], *, user_url: bool
) -> CaseError | None:
    """Whether the provider may be sent its key (``suite/keys.py``)."""
    key_path = ("providers", name, "api_key_env")
    return check_key(provider, allowed=allowed, user_url=user_url, path=loaded.display_path,
                     key=format_key_path(key_path), line=loaded.lines.line_of(key_path)) or env_problem(
        loaded, name, provider, allowed, user_url=user_url)


def _with_user_urls(providers: Mapping[str, ProviderSpec], base_urls: Mapping[str, str]) -> dict[str, ProviderSpec]:
    """The providers ``--bench-base-url`` names, with the user's URL."""
    return {name: replace(providers[name], base_url=url) for name, url in base_urls.items() if name in providers}


def _note(problems: dict[str, CaseError], name: str, problem: CaseError | None) -> None:
    """Keep ``problem`` as the provider's, unless it has one already (the first found is the one cases show)."""
    if problem is not None:
        problems.setdefault(name, problem)


def _provider(name: str, entry: Mapping[str, Any], options: dict[str, Any]) -> ProviderSpec:
    return ProviderSpec(
        name=name,
        type=entry["type"],
        base_url=entry.get("base_url"),
        api_key_env=entry.get("api_key_env"),
        headers=dict(entry.get("headers", {})),
        timeout_s=float(entry.get("timeout", 60.0)),
        max_retries=int(entry.get("max_retries", 2)),
        concurrency=entry.get("concurrency"),
        options=options,
        rpm=entry.get("rpm"),
        tpm=entry.get("tpm"),
        max_wait_s=entry.get("max_wait"),
        stream=bool(entry.get("stream", False)),
        **({"max_response_bytes": int(entry["max_response_bytes"])} if "max_response_bytes" in entry else {}),
    )


def _provider_options(
    loaded: LoadedSuite, name: str, entry: Mapping[str, Any], data_dir: Path, folders: SuiteFolders
) -> tuple[dict[str, Any], CaseError | None]:
    """The provider's options and their problem: ``replay``/``prefix``, or an application's request and response.

    A replay file is confined to the suite's folders; an application is checked by ``suite/application.py``.
    """
    extra = {k: entry[k] for k in ("replay", "prefix", "cache") if k in entry}
    try:
        extra.update(application_options(loaded, name, entry))
        return dict(_confined_replay(extra, data_dir, folders, loaded, ("providers", name))), None
    except CaseError as exc:
        return extra, exc


def _type_problem(loaded: LoadedSuite, name: str, entry: Mapping[str, Any], types: list[str]) -> CaseError | None:
    if entry["type"] in types:
        return None
    key_path = ("providers", name, "type")
    return CaseError(
        f"unknown provider type '{entry['type']}'",
        path=loaded.display_path,
        line=loaded.lines.line_of(key_path),
        key=format_key_path(key_path),
        hint=choices_hint(entry["type"], types),
    )


def _url_problem(
    loaded: LoadedSuite, name: str, entry: Mapping[str, Any], base_urls: Mapping[str, str]
) -> CaseError | None:
    """What is wrong with the suite's ``base_url`` for the provider (one given by --bench-base-url is the user's)."""
    url = entry.get("base_url")
    if name in base_urls or not isinstance(url, str):
        return None
    found = url_problem(url)
    if found is None:
        return None
    key_path = ("providers", name, "base_url")
    return CaseError(
        f"base_url {url!r}: {found}", path=loaded.display_path, line=loaded.lines.line_of(key_path),
        key=format_key_path(key_path), hint="e.g. http://127.0.0.1:8000/v1 or https://api.openai.com/v1")


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
    builder = _SectionModels(loaded, section, providers, provider_problems, data_dir,
                             folders or SuiteFolders.of(loaded.path.parent))
    models: dict[str, ModelSpec] = {}
    problems: dict[str, CaseError] = {}
    for name, entry in loaded.data.get(section, {}).items():
        built = builder.model(name, entry)
        if isinstance(built, CaseError):
            problems[name] = built
        else:
            models[name] = built
    return models, problems


@dataclass(frozen=True)
class _SectionModels:
    """Builds each model of one section (``models`` or ``judges``), or the problem it cannot run with."""

    loaded: LoadedSuite
    section: str
    providers: Mapping[str, ProviderSpec]
    provider_problems: Mapping[str, CaseError]
    data_dir: Path
    folders: SuiteFolders

    def model(self, name: str, entry: Mapping[str, Any]) -> ModelSpec | CaseError:
        provider = self._provider(name, entry["provider"])
        if isinstance(provider, CaseError):
            return provider
        try:
            entry = _confined_replay(entry, self.data_dir, self.folders, self.loaded, (self.section, name))
        except CaseError as exc:
            return exc
        model = model_from_entry(name, entry, provider, self.loaded.data.get("defaults", {}), self.data_dir)
        problem = _offline_problem(model)
        if problem:
            line = self.loaded.lines.line_of((self.section, name))
            return CaseError(problem, path=self.loaded.display_path, line=line, key=f"{self.section}.{name}")
        return model

    def _provider(self, name: str, provider_name: str) -> ProviderSpec | CaseError:
        """The provider the model names, or its problem (the provider's own, or that it does not exist)."""
        if provider_name in self.provider_problems:
            return self.provider_problems[provider_name]
        if provider_name in self.providers:
            return self.providers[provider_name]
        key_path = (self.section, name, "provider")
        return CaseError(
            f"unknown provider '{provider_name}'",
            path=self.loaded.display_path,
            line=self.loaded.lines.line_of(key_path),
            key=format_key_path(key_path),
            hint=choices_hint(provider_name, list(self.providers)),
        )


def model_from_entry(
    name: str, entry: Mapping[str, Any], provider: ProviderSpec, defaults: Mapping[str, Any], data_dir: Path
) -> ModelSpec:
    """Build one ModelSpec; the model's own keys win over ``defaults``."""
    options = {**provider.options, **{k: entry[k] for k in _MODEL_OPTION_KEYS if k in entry}}
    pricing = entry.get("pricing")
    return ModelSpec(
        name=name,
        provider=provider,
        id=str(entry.get("id", name)),
        label=str(entry.get("label", name)),
        params={**_params(defaults), **_params(entry)},
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
        stream=entry.get("stream"),
    )


def _params(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling parameters an entry (a model, or ``defaults:``) sets: written at the top, then under ``params:``."""
    return {**{k: entry[k] for k in _PARAM_KEYS if k in entry}, **entry.get("params", {})}


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
    names, kept = _judges_to_replace(loaded, judges)
    try:
        model = adhoc_model(judge, providers, loaded.data.get("defaults", {}), provider_problems)
    except CaseError as exc:
        return kept, dict.fromkeys(names, exc)
    if model is None:
        raise SuiteError(f"--bench-judge {judge!r}: expected provider:model, e.g. openai:gpt-4o")
    return {**{name: replace(model, name=name) for name in names}, **kept}, {}


def _judges_to_replace(
    loaded: LoadedSuite, judges: Mapping[str, ModelSpec]
) -> tuple[list[str], dict[str, ModelSpec]]:
    """The names of the judges --bench-judge replaces, and the embedding models it keeps as they are.

    Every declared judge is replaced, even one with a problem; but an embedding model (``similar``'s
    ``embedding_model``) is not a judge a chat model can stand in for.
    """
    names = list(loaded.data.get("judges") or judges) or ["judge"]
    embedders = _embedding_model_names(loaded.data)
    kept = {name: judges[name] for name in names if name in embedders and name in judges}
    return [name for name in names if name not in embedders], kept


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
