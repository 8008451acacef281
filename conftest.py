"""The repository's own extension, on a real example: a scorer type written in Python, in the project.

``suites/word_budget/`` scores answers with ``type: word_budget``, which is not built in. The class
below is the whole scorer and the hook is its registry line; a ``conftest.py`` adds names for the
suites in its folder and below (docs/suite-guide.md, section 26, "Extending in Python"). The class
lives here rather than in a module under ``suites/``: a ``suites`` package would shadow the
``suites`` module the plugin's own tests import. It only adds a name, so ``tests/`` runs as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench_plugin import ComponentScore, ScorerSpec, ScoringContext


@dataclass(frozen=True)
class WordBudget:
    """Full marks up to ``max_words`` words, then 1/max_words less per extra word: 0 at twice the budget."""

    spec: ScorerSpec
    max_words: int

    @classmethod
    def parse(cls, spec: ScorerSpec) -> WordBudget:
        """Read ``max_words`` once; a bad value fails the case at the scorer's line."""
        budget = spec.options.get("max_words")
        if type(budget) is not int or budget < 1:
            raise ValueError(f"max_words: expected a whole number of at least 1, got {budget!r}")
        return cls(spec, budget)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Count the answer's words (split on whitespace); ``raw`` is the count."""
        words = len(context.response.split())
        over = max(0, words - self.max_words)
        return ComponentScore(
            name=self.spec.name, value=max(0.0, 1 - over / self.max_words), raw=words, passed=over == 0,
            detail=f"{words} words, budget {self.max_words}" + (f", {over} over" if over else ""),
        )


def pytest_bench_scorer_types() -> dict[str, object]:
    """The registry line: suites in this folder and below may write ``type: word_budget``."""
    return {"word_budget": WordBudget}
