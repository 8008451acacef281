"""``similar``: the cosine similarity of the answer's embedding and the expected text's, against a threshold.

The texts are embedded in one call to the ``embedding_model`` (a model under ``judges:``) through
the runner's embedding call (``ScoringContext.embed``), so rate limits, retries, keys and the
record's ``call_log`` apply as to a judge. Offline models embed with hashed character trigrams
(``providers/text_vectors.py``); an ``openai_compatible`` one calls ``/v1/embeddings``. The
record keeps the similarity and the model, never the vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench_plugin.core.chat import EmbeddingRequest, Embeddings
from bench_plugin.core.errors import CaseError, JudgeError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.prompt import find_judge
from bench_plugin.scoring.options import check_choice, check_option_names
from bench_plugin.scoring.targets import TARGETS
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

OPTION_KEYS = ("value", "embedding_model", "target")
DEFAULT_THRESHOLD = 0.75
"""promptfoo's default for ``similar``: the answer passes at a cosine similarity of 0.75 or more."""
NO_EMBEDDINGS = frozenset({"anthropic"})
"""Built-in provider types with no embeddings endpoint (a type added in Python is asked at run time)."""


@dataclass(frozen=True)
class SimilarScorer:
    """``similar``: value = the best cosine similarity of the answer to ``value`` (one text or a list).

    ``raw`` is that cosine (-1..1) and ``value`` the same clamped to 0..1; passed when it reaches
    ``threshold`` (default 0.75).
    """

    spec: ScorerSpec
    values: tuple[Any, ...]
    embedding_model: str
    target: str
    threshold: float

    @classmethod
    def parse(cls, spec: ScorerSpec) -> SimilarScorer:
        """Check the options once.

        Raises:
            ValueError: no ``value`` or ``embedding_model``, an empty text, an unknown option.
        """
        options = spec.options
        check_option_names(options, OPTION_KEYS, "similar")
        values = _expected_texts(options.get("value"))
        model = options.get("embedding_model")
        if not isinstance(model, str) or not model:
            raise ValueError("similar needs embedding_model: the name of a model under judges: that embeds "
                             "(an openai_compatible endpoint's embedding model, or an offline one)")
        target = check_choice("target", options.get("target", "response"), tuple(TARGETS))
        threshold = DEFAULT_THRESHOLD if spec.threshold is None else spec.threshold
        return cls(spec, values, model, target, threshold)

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError when the embedding model is not under ``judges:`` or its provider cannot embed."""
        key = f"{self.spec.key}.embedding_model"
        model = find_judge(case, self.embedding_model, key, self.spec.line)
        if model.provider.type in NO_EMBEDDINGS:
            raise CaseError(f"judge {self.embedding_model!r} is on provider {model.provider.name!r} of type "
                            f"{model.provider.type}, which has no embeddings endpoint",
                            path=case.path, line=self.spec.line, key=key,
                            hint="declare an openai_compatible provider for the embedding model")

    def _expected(self, context: ScoringContext) -> list[str]:
        """The expected texts rendered for the case.

        Raises:
            CaseError: a text that is empty once rendered.
        """
        case, spec = context.case, self.spec
        texts = []
        for index, value in enumerate(self.values):
            key = f"{spec.key}.value" + (f"[{index}]" if len(self.values) > 1 else "")
            text = value if case.templates is None else case.templates.render(value, case.variables, key=key,
                                                                                line=spec.line)
            if not text.strip():
                raise CaseError("the expected text is empty once rendered", path=case.path, line=spec.line, key=key)
            texts.append(text)
        return texts

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Embed the answer and the expected texts in one call; the best cosine similarity is the score.

        Raises:
            CaseError: an unknown embedding model, an expected text that renders empty.
            ProviderError: the embedding call failed (the case is an ERROR).
            JudgeError: the vectors cannot be compared (an answer of zero length in the model's space).
        """
        case, spec = context.case, self.spec
        model = find_judge(case, self.embedding_model, f"{spec.key}.embedding_model", spec.line)
        expected = self._expected(context)
        answer = TARGETS[self.target](context)
        about = f"embedding model {model.name} ({model.id})"
        common: dict[str, Any] = {"name": spec.name}
        if not answer.strip():  # an endpoint rejects empty input; an empty answer resembles nothing
            return ComponentScore(value=0.0, raw=0.0, passed=False, detail=f"the answer is empty; {about}",
                                  extra={"similarity": 0.0, "embedding_model": model.name}, **common)
        result = await self._embed(context, EmbeddingRequest(model=model, texts=(answer, *expected), task=case.task,
                                                             run=case.run))
        similarities = cosine_similarities(result.vectors[0], result.vectors[1:])
        best = max(similarities)
        passed = best >= self.threshold
        usage = {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens,
                 "latency_s": result.latency_s}
        extra = {"similarity": round(best, 6), "embedding_model": model.name}
        if len(expected) > 1:
            extra["similarities"] = [round(s, 6) for s in similarities]
        return ComponentScore(value=round(min(1.0, max(0.0, best)), 6), raw=round(best, 6), passed=passed,
                              detail=f"{self._verdict(similarities, best, passed)}; {about}", usage=usage,
                              extra=extra, **common)

    async def _embed(self, context: ScoringContext, request: EmbeddingRequest) -> Embeddings:
        """The runner's embedding call; a CaseError it raises is located at ``embedding_model``."""
        case, spec = context.case, self.spec
        if context.embed is None:
            raise CaseError("similar needs the runner's embedding calls, which this context lacks",
                            path=case.path, line=spec.line, key=spec.key)
        try:
            return await context.embed(request)
        except CaseError as exc:  # a provider that cannot embed, a bad dimensions param: the model's key is wrong
            raise exc.located(case.path, spec.line, f"{spec.key}.embedding_model") from exc

    def _verdict(self, similarities: list[float], best: float, passed: bool) -> str:
        """``cosine similarity 0.8123 >= threshold 0.75`` (and which text was closest, among several)."""
        count = len(similarities)
        closest = "" if count == 1 else f" (closest of {count} texts: #{similarities.index(best) + 1})"
        return f"cosine similarity {best:.4f} {'>=' if passed else '<'} threshold {self.threshold:g}{closest}"


def _expected_texts(value: Any) -> tuple[Any, ...]:
    """``value:``, one text or a list of them, none empty."""
    values = tuple(value) if isinstance(value, list) else (value,)
    if not values or not all(map(_is_text, values)):
        raise ValueError(f"similar needs value: the expected text (or a list of texts, templated), got {value!r}")
    return values


def _is_text(value: Any) -> bool:
    """Text with something in it."""
    return isinstance(value, str) and bool(value.strip())


def cosine_similarities(answer: Sequence[float], expected: Sequence[Sequence[float]]) -> list[float]:
    """The cosine similarity of ``answer`` to each of ``expected``.

    Raises:
        JudgeError: the vectors have different lengths, or one has length zero (nothing to compare).
    """
    if len({len(vector) for vector in (answer, *expected)}) != 1:
        raise JudgeError("the embedding model gave vectors of different lengths")
    matrix = np.asarray([answer, *expected], dtype=float)
    norms = np.linalg.norm(matrix, axis=1)
    if not np.all(norms > 0):
        raise JudgeError("the embedding model gave a zero vector (a text with nothing to embed)")
    unit = matrix / norms[:, None]
    return [float(x) for x in unit[1:] @ unit[0]]
