"""Render a suite's templates (prompts, ids, derived variables) so that any error points at the suite's line."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta, nodes

from bench_plugin.core.errors import CaseError, LimitExceeded
from bench_plugin.core.hints import did_you_mean
from bench_plugin.core.media import DEFAULT_LIMITS
from bench_plugin.core.utf8 import HINT as UTF8_HINT
from bench_plugin.core.utf8 import NotUtf8
from bench_plugin.suite.paths import SuiteFolders, SuiteTemplateLoader
from bench_plugin.suite.sandbox import BoundedEnvironment, make_environment
from bench_plugin.suite.sandbox_limits import LIMIT_HINT, bounded, checked, current_budget

_JINJA_LITERALS = frozenset({"true", "false", "none", "True", "False", "None"})
"""Names jinja2 reads as constants, never as variables."""
_DEFINE_IT = "define it under variables:, in the task's vars:, or as a matrix or dataset field"
_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)


class TemplateRenderer:
    """Renders templates for one suite; ``{% include %}`` resolves inside the suite's folder only.

    Suites are data written by people we may not know, so templates render in the bounded sandbox
    (no attribute escapes, no mutation of the suite's data, limits on what a render may make and
    spend), and a missing variable is an error rather than an empty string. A value that is exactly
    one ``{{ expression }}`` keeps its native type (a number stays a number), which is what derived
    variables and dataset filters want.

    Args:
        root: the folder that holds the suite; includes and template files are looked up there.
        path: the suite file as shown in messages.
        allowed: folders the user allows besides ``root`` (``--bench-allow-path``): a template file may
            be a symbolic link into one of them. Any other link that leads out of ``root`` is refused.
        media_limits: the bytes an image and an audio clip may hold (the suite's ``media_limits:``).
    """

    def __init__(
        self,
        root: Path | None,
        path: str = "<suite>",
        *,
        allowed: tuple[Path, ...] = (),
        media_limits: Mapping[str, int] = DEFAULT_LIMITS,
    ) -> None:
        self.root = root
        self.path = path
        # where an image or audio file named by a template may be, and how large (suite/media.py)
        self.folders = SuiteFolders.of(root, allowed) if root is not None else None
        self.media_limits = media_limits
        loader = SuiteTemplateLoader(self.folders) if self.folders is not None else None
        self.env = make_environment(loader)
        # compiling costs ~1 ms and every case renders the same few sources (MT-Bench: 480 cases,
        # 4 judge prompts each): compile each source once; template files are cached by jinja2
        self._compile = lru_cache(maxsize=1024)(self.env.from_string)
        self._compile_expression = lru_cache(maxsize=1024)(
            functools.partial(self.env.compile_expression, undefined_to_none=False)
        )
        self._undeclared = lru_cache(maxsize=1024)(self._find_undeclared)  # 480 MT-Bench cases, four judge prompts

    def render(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> str:
        """Render ``source`` as a template.

        Raises:
            CaseError: naming the key and line, for any error the template raises (a missing
                variable, a syntax error, a division by zero, a limit of the sandbox...).
        """
        try:
            with bounded():
                pieces = _substitutions(source)
                if pieces is not None and all(name in variables for name in pieces[1::2]):
                    return _substitute(pieces, variables, self.env)
                return self._compile(source).render(variables)
        except Exception as exc:  # every error of an untrusted template is the suite's
            raise _case_error(exc, self.path, key, line) from exc

    def render_file(self, name: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> str:
        """Render a template file that sits next to the suite (or below it).

        Raises:
            CaseError: as ``render``, or when the file does not exist under the suite's folder.
        """
        try:
            with bounded():
                return self.env.get_template(name).render(variables)
        except Exception as exc:
            raise _case_error(exc, self.path, key, line, files=self.root) from exc

    def source_of(self, name: str, *, key: str = "", line: int | None = None) -> str:
        """The text of a template file, unrendered, found like ``render_file`` finds it (a prompt file to split).

        Raises:
            CaseError: when the file does not exist under the suite's folder, or leads out of it.
        """
        try:
            if self.env.loader is None:
                raise jinja2.TemplateNotFound(name)
            source, _, _ = self.env.loader.get_source(self.env, name)
            return source
        except Exception as exc:
            raise _case_error(exc, self.path, key, line, files=self.root) from exc

    def check(self, source: str, *, from_file: bool = False, key: str = "", line: int | None = None,
              known: Collection[str] | None = None, reads: str | None = None) -> None:
        """Compile a template that is rendered later (a turn that reads earlier answers).

        ``known``: the names it will be rendered with; a name it reads that is none of them (nor a global, nor read
        only through ``| default`` or ``is defined``) is refused now, before the calls that come ahead of it.
        ``reads``: what the hint says the template can read (default: the ``known`` names).

        Raises:
            CaseError: for a syntax error, a template file that does not exist, or a name nothing defines.
        """
        try:
            if from_file:
                self.env.get_template(source)
            else:
                self.env.parse(source)
            names = self.undeclared(source, from_file=from_file) if known is not None else ()
        except Exception as exc:
            raise _case_error(exc, self.path, key, line, files=self.root) from exc
        if known is not None:
            self._check_names(names, known, reads, key, line)

    def _check_names(
        self, names: Collection[str], known: Collection[str], reads: str | None, key: str, line: int | None
    ) -> None:
        """Refuse the first name that is neither ``known`` nor a global of the environment."""
        for name in names:
            if name not in known and name not in self.env.globals:
                raise CaseError(f"template error: {name!r} is undefined", path=self.path, line=line, key=key or None,
                                hint=_undefined_hint(name, known, reads))

    def undeclared(self, source: str, *, from_file: bool = False) -> tuple[str, ...]:
        """The names a template reads and does not define; parsed once per source.

        Names read only through ``| default`` or ``is defined`` are left out: optional by design.

        Raises:
            jinja2.TemplateError: the template (or its file) does not parse or does not exist.
        """
        return self._undeclared(source, from_file)

    def _find_undeclared(self, source: str, from_file: bool) -> tuple[str, ...]:
        text = source
        if from_file:
            loader = self.env.loader
            text = loader.get_source(self.env, source)[0] if loader is not None else ""
        tree = self.env.parse(text)
        return tuple(sorted(meta.find_undeclared_variables(tree) - _guarded(tree)))

    def evaluate(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> Any:
        """Render a value, keeping the native type when it is one ``{{ expression }}``.

        Non-string values are returned unchanged, so data may mix literals and templates.

        Raises:
            CaseError: as ``render``.
        """
        if not isinstance(source, str):
            return source
        match = _SINGLE_EXPRESSION.match(source)
        if match is None or "{{" in match.group("expr") or "}}" in match.group("expr"):
            return self.render(source, variables, key=key, line=line)
        return self.expression(match.group("expr"), variables, key=key, line=line)

    def expression(self, source: str, variables: Mapping[str, Any], *, key: str = "", line: int | None = None) -> Any:
        """Evaluate a bare jinja2 expression such as ``category == 'math'``.

        Raises:
            CaseError: as ``render``.
        """
        try:
            with bounded():
                name = source.strip()
                if name in variables and name not in _JINJA_LITERALS and name.isidentifier():
                    # a bare variable (``{{ n }}``, the usual check value): what jinja2 would look up,
                    # without building a template context for it (most of a check's CPU per case)
                    return checked(variables[name], current_budget(), "the expression made a value")
                compiled = self._compile_expression(source)
                value = compiled(**variables)
                if isinstance(value, jinja2.Undefined):
                    value._fail_with_undefined_error()
                return checked(value, current_budget(), "the expression made a value")
        except Exception as exc:
            raise _case_error(exc, self.path, key, line) from exc


def _undefined_hint(name: str, known: Collection[str], reads: str | None) -> str:
    """A guess at the name meant, and what the template can read."""
    guess = did_you_mean(name, sorted(known))
    readable = reads or (f"it can read: {', '.join(sorted(known))}" if known else _DEFINE_IT)
    return (f"{guess} " if guess else "") + readable


_BARE_NAME = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@lru_cache(maxsize=1024)
def _substitutions(source: str) -> tuple[str, ...] | None:
    """``(text, name, text, name, ..., text)`` for a template that is only text and ``{{ name }}``; else None.

    Such templates (``case-{{ n }}``, ``Grade: {{ answer }}``) are most of what a run renders, once or
    twice a case: substituting them directly gives jinja2's output without building a template
    context each time. Anything else (a filter, a tag, a comment, whitespace control) goes to jinja2.
    """
    if "{%" in source or "{#" in source:
        return None
    pieces: list[str] = []
    end = 0
    for found in _BARE_NAME.finditer(source):
        if found.group(1) in _JINJA_LITERALS:
            return None
        pieces += [source[end:found.start()], found.group(1)]
        end = found.end()
    pieces.append(source[end:])
    if any("{{" in text for text in pieces[::2]):
        return None
    return tuple(pieces)


def _substitute(pieces: tuple[str, ...], variables: Mapping[str, Any], env: BoundedEnvironment) -> str:
    """What jinja2 renders for ``pieces``: each value through the environment's ``finalize``, joined by ``concat``."""
    finalize = env.finalize or (lambda value: value)
    return env.concat(text if index % 2 == 0 else str(finalize(variables[text])) for index, text in enumerate(pieces))


def _case_error(
    exc: Exception, path: str | None, key: str | None, line: int | None, files: Path | bool | None = False
) -> CaseError:
    """The CaseError a suite author sees for any error of a template: never a traceback of ours.

    ``files`` is the folder template files are looked up in, when the caller asked for a file.
    """
    key = key or None
    if isinstance(exc, CaseError):  # already written for the suite's author (a file outside the suite's folder)
        return exc.located(path, line, key)
    if isinstance(exc, jinja2.TemplateNotFound) and files is not False:
        return CaseError(f"template file '{exc.name}' not found under {files}", path=path, line=line, key=key)
    message, hint = _explained(exc)
    if message.startswith("template error: "):
        message += _where_in_template(exc)
    return CaseError(message, path=path, line=line, key=key, hint=hint)


_Explained = tuple[str, str | None]  # the message and the hint


def _explained(exc: Exception) -> _Explained:
    """What went wrong in a template, in the words of the first kind of error in ``_EXPLAINERS`` it is."""
    for kind, explain in _EXPLAINERS:
        if isinstance(exc, kind):
            return explain(exc)
    if str(exc):
        return f"template error: {type(exc).__name__}: {exc}", None
    return f"template error: {type(exc).__name__}", None


def _not_utf8(exc: NotUtf8) -> _Explained:
    return f"template file {exc}", UTF8_HINT


def _undefined(exc: jinja2.UndefinedError) -> _Explained:
    hint = _DEFINE_IT if (exc.message or "").endswith(" is undefined") else None
    return f"template error: {exc.message}", hint


def _over_limit(exc: LimitExceeded) -> _Explained:
    return f"template error: {exc.message}", LIMIT_HINT


def _template_error(exc: jinja2.TemplateError) -> _Explained:
    message = f"template error: {getattr(exc, 'message', None) or exc}"
    return message, _unknown_filter_hint(message)


def _overflow(exc: OverflowError) -> _Explained:
    return f"template error: a number too large to compute ({exc})", None


def _recursion(exc: RecursionError) -> _Explained:
    return "template error: nested too deeply (a macro or include that calls itself, or brackets hundreds deep)", None


# In this order: the first kind the error is explains it (an UndefinedError is a TemplateError too).
_EXPLAINERS: tuple[tuple[type[Exception], Callable[[Any], _Explained]], ...] = (
    (NotUtf8, _not_utf8),
    (jinja2.UndefinedError, _undefined),
    (LimitExceeded, _over_limit),
    (jinja2.TemplateError, _template_error),
    (OverflowError, _overflow),
    (RecursionError, _recursion),
)


_PORTED_FILTERS = {"load": "fromjson", "dump": "tojson"}
"""promptfoo's (Nunjucks') JSON filters and their names here."""
_UNKNOWN_FILTER = re.compile(r"No filter named '([^']+)'")


def _unknown_filter_hint(message: str) -> str | None:
    """For ``No filter named 'X'``: the filter a ported template meant (``load`` is ``fromjson``), or a close name."""
    found = _UNKNOWN_FILTER.search(message)
    if found is None:
        return None
    name = found.group(1)
    if name in _PORTED_FILTERS:
        here = _PORTED_FILTERS[name]
        return f"promptfoo's {name!r} filter is {here!r} here: {{{{ value | {here} }}}}"
    return did_you_mean(name, sorted(make_environment(None).filters)) or None


def _where_in_template(exc: BaseException) -> str:
    """`` (at prompts/judge.j2:3)`` or `` (line 2 of the template)``: where inside a template its error is.

    The suite's line names the key that holds the template; a template file, or a template of many
    lines, needs its own line too. jinja2 gives it on a syntax error, and otherwise in the frames it
    rewrites to stand for template code (the innermost one is where the error is, inside an include).
    """
    filename, lineno = _template_spot(exc)
    if lineno is None:
        return ""
    if filename and not filename.startswith("<"):
        return f" (at {_shown_file(filename)}:{lineno})"
    return f" (line {lineno} of the template)" if lineno > 1 else ""


def _template_spot(exc: BaseException) -> tuple[str | None, int | None]:
    """The template file (None for a string) and line of the error: the syntax error's, or the innermost frame's."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.filename, exc.lineno
    spot: tuple[str | None, int | None] = (None, None)
    tb = exc.__traceback__
    while tb is not None:
        if "__jinja_exception__" in tb.tb_frame.f_globals:
            spot = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        tb = tb.tb_next
    return spot


def _shown_file(filename: str) -> str:
    """The file relative to the working directory when it is under it, else as it is."""
    try:
        return str(Path(filename).relative_to(Path.cwd()))
    except ValueError:
        return filename


@lru_cache(maxsize=1)
def _standalone_env() -> BoundedEnvironment:
    return make_environment(None)


@lru_cache(maxsize=1024)
def _standalone_template(source: str) -> jinja2.Template:
    # replay keys and scripted replies render on every call: compile each source once
    return _standalone_env().from_string(source)


def render_standalone(source: str, variables: Mapping[str, Any]) -> str:
    """Render a small template that belongs to no suite (e.g. a model's system-fold wrapper).

    Args:
        source: the template.
        variables: what the template sees.

    Returns:
        The rendered text.

    Raises:
        CaseError: for any error the template raises.
    """
    try:
        with bounded():
            return _standalone_template(source).render(variables)
    except Exception as exc:
        raise _case_error(exc, None, None, None) from exc


_GUARDS = frozenset({"default", "d"})  # filters that stand in for an undefined value
_TESTS = frozenset({"defined", "undefined"})


def _guarded(tree: nodes.Template) -> set[str]:
    """Names a template reads only through ``| default(...)`` or tests with ``is defined``: optional by design."""
    guarded: set[str] = set()
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        names = _GUARDS if isinstance(node, nodes.Filter) else _TESTS
        if node.name in names and isinstance(node.node, nodes.Name):
            guarded.add(node.node.name)
    return guarded
