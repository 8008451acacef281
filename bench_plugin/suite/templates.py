"""Jinja2 rendering in a sandbox with StrictUndefined: prompts, ids, derived variables.

Suites are data written by people we may not know, so templates render in
``SandboxedEnvironment``; a missing variable is an error rather than an empty string. A value that
is exactly one ``{{ expression }}`` keeps its native type (a number stays a number), which is what
derived variables and dataset filters want.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from bench_plugin.errors import CaseError

_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)


def _make_env(loader: jinja2.BaseLoader | None) -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    return env


class TemplateRenderer:
    """Renders templates for one suite; ``{% include %}`` resolves inside the suite's folder only.

    Args:
        root: the folder that holds the suite; includes and template files are looked up there.
        path: the suite file as shown in messages.
    """

    def __init__(self, root: Path | None, path: str = "<suite>") -> None:
        self.root = root
        self.path = path
        loader = jinja2.FileSystemLoader(str(root)) if root is not None else None
        self.env = _make_env(loader)
        # compiling costs ~1 ms and every case renders the same few sources (MT-Bench: 480 cases,
        # 4 judge prompts each): compile each source once; template files are cached by jinja2
        self._compile = lru_cache(maxsize=1024)(self.env.from_string)

    def render(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> str:
        """Render ``source`` as a template.

        Raises:
            CaseError: naming the key and line, when a variable is missing or the template is broken.
        """
        try:
            return self._compile(source).render(variables)
        except jinja2.TemplateError as exc:
            raise self._error(exc, key, line) from exc

    def render_file(self, name: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> str:
        """Render a template file that sits next to the suite (or below it)."""
        try:
            return self.env.get_template(name).render(variables)
        except jinja2.TemplateNotFound as exc:
            raise CaseError(
                f"template file '{exc.name}' not found under {self.root}",
                path=self.path,
                line=line,
                key=key,
            ) from exc
        except jinja2.TemplateError as exc:
            raise self._error(exc, key, line) from exc

    def check(self, source: str, *, from_file: bool = False, key: str = "", line: int | None = None) -> None:
        """Compile a template that is rendered later (a turn that reads earlier answers).

        Raises:
            CaseError: for a syntax error, or a template file that does not exist.
        """
        try:
            if from_file:
                self.env.get_template(source)
            else:
                self.env.parse(source)
        except jinja2.TemplateNotFound as exc:
            raise CaseError(
                f"template file '{exc.name}' not found under {self.root}", path=self.path, line=line, key=key
            ) from exc
        except jinja2.TemplateError as exc:
            raise self._error(exc, key, line) from exc

    def evaluate(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> Any:
        """Render a value, keeping the native type when it is one ``{{ expression }}``.

        Non-string values are returned unchanged, so data may mix literals and templates.
        """
        if not isinstance(source, str):
            return source
        match = _SINGLE_EXPRESSION.match(source)
        if match is None or "{{" in match.group("expr") or "}}" in match.group("expr"):
            return self.render(source, variables, key=key, line=line)
        return self.expression(match.group("expr"), variables, key=key, line=line)

    def expression(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> Any:
        """Evaluate a bare jinja2 expression such as ``category == 'math'``."""
        try:
            compiled = self.env.compile_expression(source, undefined_to_none=False)
            value = compiled(**variables)
            if isinstance(value, jinja2.Undefined):
                value._fail_with_undefined_error()
        except jinja2.TemplateError as exc:
            raise self._error(exc, key, line) from exc
        return value

    def _error(self, exc: jinja2.TemplateError, key: str, line: int | None) -> CaseError:
        if isinstance(exc, jinja2.UndefinedError):
            message = f"template error: {exc.message}"
            hint = "define it under variables:, in the task's vars:, or as a matrix or dataset field"
        else:
            message = f"template error: {getattr(exc, 'message', None) or exc}"
            hint = None
        return CaseError(message, path=self.path, line=line, key=key, hint=hint)


@lru_cache(maxsize=1)
def _standalone_env() -> ImmutableSandboxedEnvironment:
    return _make_env(None)


@lru_cache(maxsize=1024)
def _standalone_template(source: str) -> jinja2.Template:
    # replay keys and scripted replies render on every call: compile each source once
    return _standalone_env().from_string(source)


def render_standalone(source: str, variables: Mapping[str, Any]) -> str:
    """Render a small template that belongs to no suite (e.g. a model's system-fold wrapper)."""
    try:
        return _standalone_template(source).render(variables)
    except jinja2.TemplateError as exc:
        raise CaseError(f"template error: {getattr(exc, 'message', None) or exc}") from exc
