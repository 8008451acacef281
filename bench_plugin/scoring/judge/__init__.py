"""LLM judges: ``llm_judge``, ``llm_judge_panel`` (with a consensus), ``llm_judge_pairwise``, and reading verdicts."""
