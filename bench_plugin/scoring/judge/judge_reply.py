"""Everything a judge scorer reads from one reply (its reading): the verdict, rubric categories, participants' scores.

The verdict comes from ``parse:``; without it, from the candidate's entry in ``participants:``
(a reply that rates every participant of a conversation), else from the sum of the ``rubric:``
categories, else from the first ``[[N]]``. ``parse: {default: N}`` gives the verdict N when the
rule reads nothing (and says so); nothing else ever stands in for a verdict. ``verdict:`` says what
the rule reads: a number (the default) or a label mapped to a score (``verdict_maps.py``). The
options are read once into a ``ReplyReader`` (``parse_reply_reader``), which reads every reply into a
``Reading``. The reply is the text the judge sent; the reading is what was read from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import JudgeError
from bench_plugin.core.json_text import parse_json_path
from bench_plugin.scoring.judge.markdown_table import TableRule, match_name, parse_table_rule
from bench_plugin.scoring.judge.parse_rules import ParseRule, compile_parse_rule
from bench_plugin.scoring.judge.reply_json import values_at
from bench_plugin.scoring.judge.rubric import Rubric, read_categories, rubric_from_options
from bench_plugin.scoring.judge.verdict_maps import VerdictMap, parse_verdict_map
from bench_plugin.scoring.options import is_number
from bench_plugin.suite.spec import CaseSpec

DEFAULT = "default"
PARTICIPANT_KINDS = ("table", "json_field")


@dataclass(frozen=True)
class Reading:
    """What was read from one reply.

    ``raw`` is None when no verdict could be read (``error`` says why); ``problems`` are things that
    went wrong without costing the verdict (a category, a row); ``label`` is the verdict as written
    when a ``verdict:`` map scored it (``C``).
    """

    raw: float | None
    error: str | None = None
    note: str = ""
    categories: Mapping[str, float | None] = field(default_factory=dict)
    participants: Mapping[str, float] | None = None
    problems: tuple[str, ...] = ()
    label: str | None = None


@dataclass(frozen=True)
class ParticipantsRule:
    """Where a reply rates every participant: a table column, or a JSON object ``name -> number``."""

    table: TableRule | None = None
    json_field: str | None = None

    def read(self, text: str) -> tuple[dict[str, float], list[str]]:
        """Every participant's score in a reply, and the entries that are not numbers.

        Raises:
            JudgeError: when the table or the object cannot be found.
        """
        if self.table is not None:
            return self.table.scores(text)
        assert self.json_field is not None
        return scores_object(text, self.json_field)


def parse_participants(rule: Any) -> ParticipantsRule:
    """``participants: {table: {column, key_column, after}}`` or ``{json_field: path}`` (an object).

    Raises:
        ValueError: for any other shape.
    """
    if not isinstance(rule, Mapping) or len(rule) != 1 or next(iter(rule)) not in PARTICIPANT_KINDS:
        raise ValueError(
            "participants must be {table: {column: Score, key_column: Model, after: HEADING}} "
            f"or {{json_field: PATH}}, got {rule!r}"
        )
    if "table" in rule:
        return ParticipantsRule(table=_participants_table(rule["table"]))
    if not isinstance(rule["json_field"], str):
        raise ValueError(f"participants.json_field must be a path such as averaged_scores, got {rule['json_field']!r}")
    parse_json_path(rule["json_field"])
    return ParticipantsRule(json_field=rule["json_field"])


def _participants_table(table: Any) -> TableRule:
    """A table rule that reads every row (so it names none)."""
    if isinstance(table, Mapping) and "row" in table:
        raise ValueError("participants.table reads every row; drop row")
    return parse_table_rule(table, needs_row=False)


@dataclass(frozen=True)
class ReplyReader:
    """How a judge scorer reads a reply, parsed from its ``parse``, ``participants`` and ``rubric``.

    ``rule`` is None when the scorer has no ``parse:`` (and no ``verdict:`` map); ``default`` is
    ``parse.default``; ``labels`` the ``verdict:`` map (None: the verdict is a number).
    """

    rule: ParseRule | None = None
    default: float | None = None
    participants: ParticipantsRule | None = None
    rubric: Rubric | None = None
    labels: VerdictMap | None = None

    def read(
        self, text: str, candidate: Sequence[str], *, clamp: bool = False, known: Sequence[Sequence[str]] = ()
    ) -> Reading:
        """Read a judge's reply.

        Args:
            text: the judge's reply.
            candidate: the candidate's label, name and id, which a table row or a participant's entry
                may be written as.
            clamp: whether rubric categories outside their scale are clamped.
            known: the names of the conversation's participants (``canonical_scores``).
        """
        problems: list[str] = []
        categories = self._categories(text, clamp, problems)
        participants, participants_error = self._participants(text, known, problems)
        if self.rule is None and self.participants is not None:
            found = _candidate_score(participants, candidate, participants_error)
        elif self.rule is None and self.rubric is not None:
            found = _rubric_total(categories)
        else:
            found = self._rule_score(text, candidate)
        return replace(found, categories=categories, participants=participants, problems=tuple(problems))

    def _categories(self, text: str, clamp: bool, problems: list[str]) -> dict[str, float | None]:
        """The rubric's categories (none without a rubric); a category that cannot be read is a problem."""
        if self.rubric is None:
            return {}
        categories, found = read_categories(text, self.rubric, clamp=clamp)
        problems += found
        return categories

    def _participants(
        self, text: str, known: Sequence[Sequence[str]], problems: list[str]
    ) -> tuple[dict[str, float] | None, str]:
        """Every participant's score (None without ``participants:`` or when unreadable), and why unreadable."""
        if self.participants is None:
            return None, ""
        try:
            scores, found = self.participants.read(text)
        except JudgeError as exc:
            error = f"participants: {exc}"
            problems.append(error)
            return None, error
        problems += found
        return canonical_scores(scores, known), ""

    def _rule_score(self, text: str, candidate: Sequence[str]) -> Reading:
        """The score the ``parse:`` rule reads (``[[N]]`` without one), else ``parse.default`` if declared."""
        try:
            found = (self.rule or _DEFAULT_RULE).reading(text, candidate)
        except JudgeError as exc:
            if self.default is None:
                return Reading(raw=None, error=str(exc))
            note = f"no verdict read ({exc}); the declared default {self.default:g} was used"
            return Reading(raw=self.default, note=note)
        return Reading(raw=found.score, label=found.label)


def _candidate_score(participants: Mapping[str, float] | None, candidate: Sequence[str], error: str) -> Reading:
    """The candidate's entry among the participants' scores (``error`` says why there are none)."""
    if participants is None:
        return Reading(raw=None, error=error)
    try:
        return Reading(raw=candidate_entry(participants, candidate))
    except JudgeError as exc:
        return Reading(raw=None, error=f"the candidate's score: {exc}")


def _rubric_total(categories: Mapping[str, float | None]) -> Reading:
    """The sum of the rubric's categories, when every one was read."""
    missing = [name for name, value in categories.items() if value is None]
    if missing:
        return Reading(raw=None, error=f"the rubric's total needs every category; no score for {', '.join(missing)}")
    total = sum(value for value in categories.values() if value is not None)
    return Reading(raw=total, note="sum of the rubric's categories")


_DEFAULT_RULE = compile_parse_rule(None)


def parse_reply_reader(options: Mapping[str, Any]) -> ReplyReader:
    """Read a judge scorer's ``parse`` (with its ``default``), ``verdict``, ``participants`` and ``rubric`` once.

    A ``verdict:`` map reads the verdict as a label even without ``parse:`` (the last
    ``GRADE: X`` line); the rubric's categories and the participants' scores stay numbers.

    Raises:
        ValueError: for a malformed rule, with the key that is wrong.
        TypeError: for a value of the wrong type.
    """
    rule, default = _split_default(options.get("parse"))
    labels = parse_verdict_map(options.get("verdict"))
    reader = compile_parse_rule(rule, labels)
    participants = parse_participants(options["participants"]) if "participants" in options else None
    rubric = rubric_from_options(options.get("rubric"))
    read_rule = None if rule is None and labels is None else reader
    return ReplyReader(read_rule, default, participants, rubric, labels)


def _split_default(rule: Any) -> tuple[Any, float | None]:
    """``parse:`` without its ``default``, and the default (None when it declares none)."""
    if not isinstance(rule, Mapping) or DEFAULT not in rule:
        return rule, None
    if not is_number(rule[DEFAULT]):
        raise ValueError(f"parse.default must be a number, got {rule[DEFAULT]!r}")
    return {key: value for key, value in rule.items() if key != DEFAULT}, float(rule[DEFAULT])


def scores_object(text: str, path: str) -> tuple[dict[str, float], list[str]]:
    """The object at ``path`` in the first JSON value of ``text`` that has it, numbers only."""
    found = next((found for found in values_at(text, parse_json_path(path)) if isinstance(found, Mapping)), None)
    if found is not None:
        return numbers_of(found, path)
    raise JudgeError(f"no JSON object in the reply has an object at {path!r}")


def numbers_of(found: Mapping[str, Any], path: str) -> tuple[dict[str, float], list[str]]:
    """The numeric entries of an object; the others are reported as problems and left out."""
    scores = {str(key): float(value) for key, value in found.items() if is_number(value)}
    problems = [f"{path}.{key} is {value!r}, not a number" for key, value in found.items() if not is_number(value)]
    return scores, problems


def candidate_entry(scores: Mapping[str, float], names: Sequence[str]) -> float:
    """The candidate's score among the participants' (by label, name or id; see ``match_name``).

    Raises:
        JudgeError: when no entry, or more than one, is the candidate's.
    """
    keys = list(scores)
    return scores[keys[match_name(keys, names, "participant")]]


def canonical_scores(scores: Mapping[str, float], known: Sequence[Sequence[str]]) -> dict[str, float]:
    """Scores keyed by the known participants' labels where an entry is theirs.

    ``known`` lists each participant's names, its label first (then its suite name and id): an
    entry written ``**Alpha** (AI-1)`` becomes ``Alpha``. Entries of nobody known keep their key.
    """
    keys = list(scores)
    renamed: dict[str, str] = {}
    for names in known:
        try:
            key = keys[match_name(keys, names, "participant")]
        except JudgeError:
            continue
        renamed.setdefault(key, names[0])
    out: dict[str, float] = {}
    for key, value in scores.items():
        out.setdefault(renamed.get(key, key), value)
    return out


def reading_fields(reading: Reading) -> dict[str, Any]:
    """The parts of a reading a component keeps: ``categories``, and ``participants`` in ``extra``."""
    extra = {} if reading.participants is None else {"participants": dict(reading.participants)}
    return {"categories": dict(reading.categories), "extra": extra}


def _names(model: ModelSpec) -> list[str]:
    return list(dict.fromkeys([model.label, model.name, model.id]))


def candidate_names(case: CaseSpec) -> list[str]:
    """How a reply may name the candidate: its label, suite name and id.

    In a conversation between models, also the seat it plays, e.g. ``AI-1``.
    """
    if case.model is None:
        return [case.model_name]
    seats = [p.name for p in case.conversation.participants if p.candidate] if case.conversation is not None else []
    return list(dict.fromkeys([*_names(case.model), *seats]))


def participant_names(case: CaseSpec) -> list[list[str]]:
    """The names of everyone who may take part in the case's conversation.

    Its seats, then the models they may invite, each as label, suite name, id and seat; only the
    candidate's for other cases.
    """
    if case.conversation is None:
        return [candidate_names(case)]
    names: dict[str, list[str]] = {}
    for participant in case.conversation.participants:
        names.setdefault(participant.model.name, _names(participant.model)).append(participant.name)
    for command in case.conversation.commands:
        for model in command.models.values():
            names.setdefault(model.name, _names(model))
    return [list(dict.fromkeys(found)) for found in names.values()]
