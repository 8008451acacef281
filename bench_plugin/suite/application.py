"""A provider of ``type: application``: any HTTP application, read once into a frozen request and response spec.

The suite writes how to ask the application (``request:``: method, path, query, headers and a JSON or
text body, all jinja2 templates) and how to read its answer (``response:``: a JSON path or a template,
and optional token-count paths). Everything is checked here, at collection, so that a template that does
not compile, a name it cannot read, an ``env.`` variable the suite did not list or a path that does not
parse fails its models' cases with the suite's line before any call (``bench validate`` too).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from jinja2 import nodes

from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import freeze_fields
from bench_plugin.core.json_text import PathStep, parse_json_path
from bench_plugin.suite.keys import check_key
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.templates import TemplateRenderer

TYPE = "application"
OWN_KEYS = ("request", "response", "env")
"""The provider keys only ``type: application`` reads."""
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
REQUEST_NAMES = ("messages", "prompt", "system", "vars", "model", "params", "env", "task", "run", "turn", "purpose")
"""What a request template reads: the call's messages, its last user message (``prompt``), the system text,
the case's variables, the model (name, id, label), its params, the allowed keys, and where the call is."""
RESPONSE_NAMES = ("json", "text", "status")
"""What a response template reads: the parsed JSON body (None when it is not JSON), the body's text, the status."""
_REQUEST_READS = "a request template can read " + ", ".join(REQUEST_NAMES)
_RESPONSE_READS = "a response template can read json (the parsed body), text (the body) and status"


@dataclass(frozen=True)
class ApplicationRequest:
    """How one call asks the application: each text is a template (rendered per call, in the sandbox).

    ``body`` is JSON made of templates (``body_kind`` ``json``: a string that is one ``{{ expression }}``
    keeps its value's type, so ``"{{ messages }}"`` is a list), one text template (``text``) or nothing
    (``none``). ``query`` and ``headers`` are (name, template) pairs; a header rendered empty is not sent.
    """

    method: str = "POST"
    path: str = ""
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None
    body_kind: str = "none"

    def __post_init__(self) -> None:
        freeze_fields(self, "body")


@dataclass(frozen=True)
class ApplicationResponse:
    """How the answer is read: a JSON path (``output``), a template (``template``), or else the body's text.

    ``input_tokens`` / ``output_tokens`` are JSON paths to the counts; without them usage is unknown.
    """

    output: tuple[PathStep, ...] | None = None
    output_text: str = ""
    template: str | None = None
    input_tokens: tuple[PathStep, ...] | None = None
    output_tokens: tuple[PathStep, ...] | None = None


@dataclass(frozen=True)
class ApplicationSpec:
    """A checked ``type: application`` provider: its request, its response and the key variables it may read."""

    request: ApplicationRequest = field(default_factory=ApplicationRequest)
    response: ApplicationResponse = field(default_factory=ApplicationResponse)
    env: tuple[str, ...] = ()
    path: str | None = None
    key: str = ""
    line: int | None = None
    """Where the provider is written (the suite, ``providers.NAME``, its line): what an error at call time names."""


@dataclass(frozen=True)
class _Checker:
    """Checks one provider's templates and paths, each error at its own key and line."""

    loaded: LoadedSuite
    base: KeyPath
    env: tuple[str, ...]
    renderer: TemplateRenderer

    def error(self, key_path: KeyPath, message: str, hint: str | None = None) -> CaseError:
        path = (*self.base, *key_path)
        return CaseError(message, path=self.loaded.display_path, line=self.loaded.lines.line_of(path),
                         key=format_key_path(path), hint=hint)

    def template(self, key_path: KeyPath, source: str, names: tuple[str, ...], reads: str) -> str:
        """``source`` if it compiles and reads only ``names`` (and listed ``env.`` variables)."""
        path = (*self.base, *key_path)
        self.renderer.check(source, key=format_key_path(path), line=self.loaded.lines.line_of(path),
                            known=names, reads=reads)
        unlisted = [name for name in _env_reads(self.renderer, source) if name not in self.env]
        if unlisted:
            raise self.error(key_path, f"the template reads env.{unlisted[0]}, which the provider's env: does not "
                             "list", hint=f"list it: env: [{', '.join([*self.env, unlisted[0]])}]")
        return source

    def json_path(self, key_path: KeyPath, text: str) -> tuple[PathStep, ...]:
        try:
            steps = parse_json_path(text)
        except ValueError as exc:
            raise self.error(key_path, str(exc)) from None
        if not steps:
            raise self.error(key_path, f"path {text!r} names no field", hint="e.g. answer.text or choices[0].text")
        return steps

    def body(self, value: Any, key_path: KeyPath) -> Any:
        """The body's templates checked, its shape kept (mappings, lists, scalars)."""
        if isinstance(value, str):
            return self.template(key_path, value, REQUEST_NAMES, _REQUEST_READS)
        if isinstance(value, Mapping):
            return {str(k): self.body(v, (*key_path, str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [self.body(item, (*key_path, index)) for index, item in enumerate(value)]
        return value


def _env_reads(renderer: TemplateRenderer, source: str) -> list[str]:
    """The names a template reads as ``env.NAME`` or ``env['NAME']``."""
    tree = renderer.env.parse(source)
    found = [node.attr for node in tree.find_all(nodes.Getattr) if _is_env(node.node)]
    found += [str(node.arg.value) for node in tree.find_all(nodes.Getitem)
              if _is_env(node.node) and isinstance(node.arg, nodes.Const)]
    return found


def _is_env(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "env"


def application_options(loaded: LoadedSuite, name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """``{"application": ApplicationSpec}`` for a ``type: application`` provider; ``{}`` for any other type.

    Raises:
        CaseError: at the first key that is wrong (a template, a path, a missing ``base_url``, the
            application's keys on a provider of another type); its models' cases fail with it.
    """
    base: KeyPath = ("providers", name)
    if entry.get("type") != TYPE:
        return _no_own_keys(loaded, base, entry)
    env = tuple(str(variable) for variable in entry.get("env", ()))
    env += (entry["api_key_env"],) if entry.get("api_key_env") and entry["api_key_env"] not in env else ()
    check = _Checker(loaded, base, env, TemplateRenderer(None, loaded.display_path))
    if not entry.get("base_url"):
        raise check.error(("type",), "a provider of type application needs base_url: where the application listens",
                          hint="e.g. base_url: http://127.0.0.1:8000 (and request: {path: /ask})")
    request = _request(check, entry.get("request") or {})
    response = _response(check, entry.get("response") or {})
    return {"application": ApplicationSpec(request, response, env, loaded.display_path, format_key_path(base),
                                           loaded.lines.line_of(base))}


def _no_own_keys(loaded: LoadedSuite, base: KeyPath, entry: Mapping[str, Any]) -> dict[str, Any]:
    own = next((key for key in OWN_KEYS if key in entry), None)
    if own is None:
        return {}
    path = (*base, own)
    raise CaseError(f"{own}: is read only by a provider of type application, and this one is {entry.get('type')!r}",
                    path=loaded.display_path, line=loaded.lines.line_of(path), key=format_key_path(path),
                    hint="write type: application to call any HTTP application")


def _request(check: _Checker, entry: Mapping[str, Any]) -> ApplicationRequest:
    def pairs(key: str) -> tuple[tuple[str, str], ...]:
        values = entry.get(key) or {}
        return tuple((str(k), check.template(("request", key, k), _text(v), REQUEST_NAMES, _REQUEST_READS))
                     for k, v in values.items())

    path = check.template(("request", "path"), str(entry.get("path", "")), REQUEST_NAMES, _REQUEST_READS)
    if path and not path.startswith(("/", "{")):
        raise check.error(("request", "path"), f"path {path!r} must start with / (it follows base_url)")
    body = entry.get("body")
    kind = "none" if body is None else "text" if isinstance(body, str) else "json"
    return ApplicationRequest(
        method=str(entry.get("method", "POST")).upper(), path=path, query=pairs("query"), headers=pairs("headers"),
        body=check.body(body, ("request", "body")), body_kind=kind,
    )


def _text(value: Any) -> str:
    """A query value as the URL carries it: a number or a boolean as JSON writes it (``true``, not ``True``)."""
    return value if isinstance(value, str) else json.dumps(value)


def _response(check: _Checker, entry: Mapping[str, Any]) -> ApplicationResponse:
    def steps(key: str) -> tuple[PathStep, ...] | None:
        return check.json_path(("response", key), str(entry[key])) if key in entry else None

    template = entry.get("template")
    if template is not None:
        template = check.template(("response", "template"), str(template), RESPONSE_NAMES, _RESPONSE_READS)
    return ApplicationResponse(
        output=steps("output"), output_text=str(entry.get("output", "")), template=template,
        input_tokens=steps("input_tokens"), output_tokens=steps("output_tokens"),
    )


def env_problem(
    loaded: LoadedSuite, name: str, provider: ProviderSpec, allowed: Collection[str], *, user_url: bool
) -> CaseError | None:
    """Whether each variable the provider's ``env:`` lists may be sent where it goes (``suite/keys.py``)."""
    spec = provider.options.get("application")
    if not isinstance(spec, ApplicationSpec):
        return None
    for index, variable in enumerate(spec.env):
        key_path = ("providers", name, "env", index)
        problem = check_key(replace(provider, api_key_env=variable), allowed=allowed, user_url=user_url,
                            path=loaded.display_path, key=format_key_path(key_path),
                            line=loaded.lines.line_of(key_path))
        if problem is not None:
            return problem
    return None
