"""A panel's consensus step: one model reads the judges' replies and answers in JSON.

The reply is read the way BackroomsBench reads it: stripped, fence lines dropped when it starts
with a code fence, then parsed whole. It must be a JSON object with the ``required_keys`` (and
match ``schema`` when one is declared); the verdict is at ``score`` or is the candidate's entry
in the object at ``scores`` (e.g. ``averaged_scores``: participant -> score). Anything else
leaves the case unscored with the reason, never a made-up number. A panel's ``consensus:`` is
read once into a ``Consensus``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from bench_plugin.core.errors import JudgeError
from bench_plugin.core.json_text import PathStep, parse_json_path, walk_json_path
from bench_plugin.scoring.judge.judge_reply import candidate_entry, canonical_scores, numbers_of
from bench_plugin.scoring.judge.prompt import JudgeTemplate, parse_templates
from bench_plugin.scoring.options import check_known_keys, is_number

CONSENSUS_KEYS = ("judge", "prompt", "prompt_file", "system", "system_file", "required_keys", "schema", "score",
                  "scores")
RULE = "=" * 60


@dataclass(frozen=True)
class ConsensusResult:
    """What the consensus gave: its parsed JSON (None when unreadable), the verdict, every participant's score.

    ``error`` says why there is no verdict.
    """

    data: Mapping[str, Any] | None
    raw: float | None
    participants: Mapping[str, float] | None = None
    error: str | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ReplyShape:
    """What a consensus reply must be: a JSON object with ``required_keys``, matching ``schema``."""

    required_keys: tuple[str, ...] = ()
    schema: jsonschema.Draft202012Validator | None = None


@dataclass(frozen=True)
class JsonPathOption:
    """A path option as written (for messages) and split into steps."""

    text: str
    steps: tuple[PathStep, ...]


@dataclass(frozen=True)
class Consensus:
    """A panel's ``consensus:``: the model that reads the replies, how it is asked, how its JSON is read.

    The verdict is at ``score``, else the candidate's entry in the object at ``scores``.
    """

    judge: str
    prompt: JudgeTemplate
    system: JudgeTemplate | None
    shape: ReplyShape
    score: JsonPathOption | None = None
    scores: JsonPathOption | None = None

    def read(
        self, data: Mapping[str, Any], candidate: Sequence[str], known: Sequence[Sequence[str]]
    ) -> ConsensusResult:
        """The verdict and participants' scores of a parsed consensus reply."""
        participants: dict[str, float] | None = None
        problems: list[str] = []
        if self.scores is not None:
            try:
                numbers, problems = self._scores(data, self.scores)
            except JudgeError as exc:
                return ConsensusResult(data, None, error=str(exc))
            participants = canonical_scores(numbers, known)
        try:
            raw = self._verdict(data, participants, candidate)
        except (JudgeError, LookupError) as exc:
            error = f"consensus verdict: {exc}"
            return ConsensusResult(data, None, participants, error=error, problems=tuple(problems))
        return ConsensusResult(data, raw, participants, problems=tuple(problems))

    @staticmethod
    def _scores(data: Mapping[str, Any], path: JsonPathOption) -> tuple[dict[str, float], list[str]]:
        """The numbers of the object at ``scores`` (and the entries that are not numbers).

        Raises:
            JudgeError: when there is no object there.
        """
        try:
            found = walk_json_path(data, path.steps)
        except LookupError as exc:
            raise JudgeError(f"consensus scores: {exc}") from exc
        if not isinstance(found, Mapping):
            raise JudgeError(f"consensus {path.text} is not an object")
        return numbers_of(found, path.text)

    def _verdict(
        self, data: Mapping[str, Any], participants: Mapping[str, float] | None, candidate: Sequence[str]
    ) -> float:
        """The number at ``score``, else the candidate's entry among the participants'.

        Raises:
            JudgeError, LookupError: when there is none.
        """
        if self.score is None:
            assert participants is not None
            return candidate_entry(participants, candidate)
        value = walk_json_path(data, self.score.steps)
        if not is_number(value):
            raise JudgeError(f"consensus {self.score.text} is {json.dumps(value)}, not a number")
        return float(value)


def _path_option(options: Mapping[str, Any], key: str) -> JsonPathOption | None:
    if key not in options:
        return None
    if not isinstance(options[key], str):
        raise TypeError(f"consensus.{key} must be a path such as averaged_scores, got {options[key]!r}")
    return JsonPathOption(options[key], parse_json_path(options[key]))


def parse_consensus_options(options: Any) -> Consensus:
    """Read a panel's ``consensus:`` before any call.

    Raises:
        ValueError: for unknown keys, a missing judge or prompt, no ``score``/``scores``, bad
            ``required_keys`` or a ``schema`` that is not a valid JSON Schema.
        TypeError: for a value of the wrong type.
    """
    if not isinstance(options, Mapping):
        raise TypeError(f"consensus must be a mapping with judge:, prompt: and score: or scores:, got {options!r}")
    check_known_keys(options, CONSENSUS_KEYS, "consensus")
    if not isinstance(options.get("judge"), str) or not options["judge"]:
        raise ValueError("consensus needs judge: the name of a model under the suite's judges:")
    clash = "consensus: give system or system_file, not both"
    prompt, system = parse_templates(options, "consensus", system_clash=clash)
    if "score" not in options and "scores" not in options:
        raise ValueError("consensus needs score: (the path of the verdict) or scores: (the path of an object "
                         "participant -> score, e.g. averaged_scores)")
    score, scores = _path_option(options, "score"), _path_option(options, "scores")
    return Consensus(options["judge"], prompt, system, _reply_shape(options), score, scores)


def _reply_shape(options: Mapping[str, Any]) -> ReplyShape:
    """``required_keys`` (key names) and ``schema`` (a JSON Schema), which the reply must satisfy."""
    keys = options.get("required_keys", [])
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise TypeError(f"consensus.required_keys must be a list of key names, got {keys!r}")
    validator = _validator(options["schema"]) if "schema" in options else None
    return ReplyShape(tuple(keys), validator)


def _validator(schema: Any) -> jsonschema.Draft202012Validator:
    """Raises: TypeError, ValueError for a ``schema`` that is not a valid JSON Schema."""
    if not isinstance(schema, Mapping):
        raise TypeError("consensus.schema must be a JSON Schema (a mapping)")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"consensus.schema is not a valid JSON Schema: {exc.message}") from exc
    return jsonschema.Draft202012Validator(schema)


def reports_text(reports: Sequence[tuple[str, str]]) -> str:
    """The reports as the consensus reads them: each under ``## Report from NAME:``.

    Reports are framed by rules of 60 ``=``, as BackroomsBench frames them.
    """
    parts = ["", RULE, ""]
    for name, text in reports:
        parts += [f"## Report from {name}:", "", text, "", RULE, ""]
    return "\n".join(parts)


def strip_code_fences(text: str) -> str:
    """The reply without the lines of a code fence it starts with (```json ... ```)."""
    stripped = text.strip()
    if not stripped.startswith("```"):
        return stripped
    return "\n".join(line for line in stripped.splitlines() if not line.strip().startswith("```")).strip()


def parse_consensus(text: str, shape: ReplyShape) -> dict[str, Any]:
    """The consensus reply as a JSON object, checked against the ``required_keys`` and ``schema``.

    Raises:
        JudgeError: saying what is wrong: not JSON (where it stopped), not an object, the missing
            keys, or the schema's complaint and where.
    """
    data = _json_object(strip_code_fences(text))
    missing = [key for key in shape.required_keys if key not in data]
    if missing:
        raise JudgeError(f"the consensus JSON lacks the required key(s) {', '.join(missing)}")
    if shape.schema is not None:
        _check_schema(data, shape.schema)
    return data


def _check_schema(data: dict[str, Any], schema: jsonschema.Draft202012Validator) -> None:
    """Raises: JudgeError with the schema's complaint (the best match) and where it is."""
    error = jsonschema.exceptions.best_match(schema.iter_errors(data))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        raise JudgeError(f"the consensus JSON does not match the schema at {where}: {error.message}")


def _json_object(source: str) -> dict[str, Any]:
    """Raises: JudgeError when ``source`` is not JSON (saying where it stopped), or not an object."""
    try:
        data = json.loads(source)
    except json.JSONDecodeError as exc:
        raise JudgeError(
            f"the consensus reply is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(data, dict):
        raise JudgeError(f"the consensus reply is JSON but not an object: {source[:40]!r}")
    return data
