"""At collection, what an offline model's templates could never do: scripted rules and replay keys, checked.

Found at run time, such a template failed its cases with ``<suite>: template error`` and no line, or looked like
our failure (an internal error, counted as infrastructure), after the calls before it were paid for; and
``bench validate`` missed it. Here every ``regex`` and ``tool_result`` of a scripted rule must compile, and every
reply, tool-call argument and replay key must parse and read only names some request will carry: a case's
variables (or a scorer's ``vars:``), what the callers add (``REQUEST_NAMES``) and what the provider adds
(``REPLY_NAMES``, ``KEY_NAMES``). A model answers many cases, and a rule may fire for some tasks only
(``task: arith-*``) and read their fields, so a name is refused only when no case defines it. Names are not
checked when they cannot all be known: when a task has no case in this run (its models are not selected: a model
with ``default: false``, ``--bench-models``), or when a case runs a project's engine or scorer type (a
``conftest.py``'s, a package's), which may call a model with variables of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.providers.offline import KEY_NAMES, REPLY_NAMES
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.spec import CaseSpec, SuiteSpec
from bench_plugin.suite.templates import TemplateRenderer

#: What callers put in a request's variables besides the case's (and a scorer's ``vars:``): a conversation's
#: speaker ``me`` and the ``round`` (engines/conversation/run.py); for a judge, the candidate's ``model`` and what
#: its scorer asks (scoring/judge/: a pairwise judge's answers, a panel's ``judge``, a consensus's reports,
#: MT-Bench's multi-turn prompts in scoring/graders/mt_bench.py). Keep in step with them.
REQUEST_NAMES = frozenset({
    "me", "round",
    "model", "answer_a", "answer_b", "order", "other", "judge", "reports", "reports_text",
    "question_1", "answer_1", "ref_answer_1", "ref_answer_2",
})

_CHECKED = ("scripted", "replay")
_RULE_PATTERNS = ("regex", "tool_result")
_REPLAY_KEYS = ("model_key", "task_key")


def check_offline_models(
    loaded: LoadedSuite, suite: SuiteSpec, cases: Sequence[CaseSpec], builtin_only: Callable[[CaseSpec], bool]
) -> None:
    """Refuse a scripted rule or a replay key that could never work, before any call.

    Args:
        loaded: the suite, for lines and quotes.
        suite: the built suite; its models and judges of other provider types are skipped.
        cases: the suite's cases, whose variables the templates may read.
        builtin_only: whether a case runs only this package's engine and scorer types (``Catalog.builtin_only``):
            a project's may call a model with names of their own.

    Raises:
        SuiteError: at the key (``models.bot.script[2].reply``, ``models.rec.replay.task_key``): a pattern that
            does not compile, a template that does not parse, or a name no request will carry.
    """
    offline = _offline_models(loaded, suite)
    if not offline:
        return
    checker = _Checker(loaded, TemplateRenderer(None, loaded.display_path), _case_names(suite, cases, builtin_only))
    for section, name, model in offline:
        checker.model(model, (section, name))


def _offline_models(loaded: LoadedSuite, suite: SuiteSpec) -> list[tuple[str, str, ModelSpec]]:
    """The suite's scripted and replay models and judges, as ``(section, name, model)``, written in its YAML."""
    return [(section, name, model) for section, models in (("models", suite.models), ("judges", suite.judges))
            for name, model in models.items()
            if model.provider.type in _CHECKED and (section, name) in loaded.lines.lines]  # not a command line's


def _case_names(
    suite: SuiteSpec, cases: Sequence[CaseSpec], builtin_only: Callable[[CaseSpec], bool]
) -> frozenset[str] | None:
    """Every name a case gives its requests; None when they cannot all be known.

    That is: a case could not be built (its variables may be missing), a task has no case in this run (its
    variables are not expanded, yet a rule may be written for it), or a case runs a project's engine or scorer type
    (it may call a model, a scripted judge say, with variables of its own).
    """
    if {task.index for task in suite.tasks} - {case.task_index for case in cases}:
        return None
    if any(case.problem is not None or not builtin_only(case) for case in cases):
        return None
    names: set[str] = set()
    for case in cases:
        names.update(case.variables, *case.scorer_vars.values())
    return frozenset(names)


class _Checker:
    def __init__(self, loaded: LoadedSuite, renderer: TemplateRenderer, names: frozenset[str] | None) -> None:
        self.loaded = loaded
        self.renderer = renderer
        self.names = names  # None: names are not checked

    def model(self, model: ModelSpec, base: KeyPath) -> None:
        """Check a scripted model's rules, or a replay model's keys."""
        if model.provider.type == "scripted":
            for index, rule in enumerate(model.options.get("script") or []):
                if isinstance(rule, Mapping):
                    self.rule(rule, (*base, "script", index))
        elif isinstance(model.options.get("replay"), Mapping):
            self.replay(model, base)

    def rule(self, rule: Mapping[str, Any], base: KeyPath) -> None:
        for key in _RULE_PATTERNS:
            if key in rule:
                self.pattern((*base, key), key, str(rule[key]))
        self.replies(rule.get("reply", ""), base)
        for key in ("json", "refusal"):
            for text in _strings(rule.get(key)):
                self.template((*base, key), text, REPLY_NAMES, "a reply")
        for number, call in enumerate(rule.get("tool_calls") or []):
            if isinstance(call, Mapping):
                for text in _strings(call.get("arguments", {})):
                    self.template((*base, "tool_calls", number, "arguments"), text, REPLY_NAMES, "a reply")

    def pattern(self, path: KeyPath, key: str, pattern: str) -> None:
        """Refuse a rule's ``regex`` or ``tool_result`` that does not compile."""
        try:
            re.compile(pattern)
        except re.error as exc:
            raise self.refuse(path, f"{key} {pattern!r} does not compile: {exc.msg} "
                              f"(at character {(exc.pos or 0) + 1})", "the pattern is Python re syntax; in "
                              "YAML double quotes a backslash is written twice (\"\\\\d\"), in single quotes "
                              "once ('\\d')") from None

    def replies(self, replies: Any, base: KeyPath) -> None:
        """A rule's ``reply``: one template, or a list of them (one per turn)."""
        if not isinstance(replies, list):
            self.template((*base, "reply"), replies, REPLY_NAMES, "a reply")
            return
        for number, reply in enumerate(replies):
            self.template((*base, "reply", number), reply, REPLY_NAMES, "a reply")

    def replay(self, model: ModelSpec, base: KeyPath) -> None:
        # a model's own replay: replaces its provider's (suite/models.py)
        where = (*base, "replay") if (*base, "replay") in self.loaded.lines.lines else (
            "providers", model.provider.name, "replay")
        for key in _REPLAY_KEYS:
            if key in model.options["replay"]:
                self.template((*where, key), model.options["replay"][key], KEY_NAMES, f"a replay {key}")

    def template(self, path: KeyPath, text: Any, own: Collection[str], what: str) -> None:
        """Refuse a template that does not parse, or reads a name neither the cases nor ``own`` define."""
        if not isinstance(text, str):
            return
        known = None if self.names is None else {*self.names, *REQUEST_NAMES, *own}
        reads = (f"no case of this suite defines it; {what} sees the case variables (and a scorer's vars:), "
                 f"{', '.join(sorted(own))}, and what a judge or a conversation adds")
        try:
            self.renderer.check(text, known=known, reads=reads)
        except CaseError as exc:
            raise self.refuse(path, exc.message, exc.hint) from None

    def refuse(self, path: KeyPath, message: str, hint: str | None) -> SuiteError:
        line = self.loaded.lines.line_of(path)
        return SuiteError(message, path=self.loaded.display_path, line=line, key=format_key_path(path), hint=hint,
                          excerpt=self.loaded.excerpt(line, context=0))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
