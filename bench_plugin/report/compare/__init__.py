"""Comparing a run with a baseline: which cases pair, their paired differences, verdicts, compare.md and .json.

- ``facts``: what a comparison keeps of each case record; ``matching``: which cases pair, and those left out;
- ``figures``: the paired differences (``report.statistics``) and Holm's adjustment; ``verdicts``: the rule;
- ``cases``: the lists of cases that changed, and cost and latency; ``build``: compare.json's data;
- ``text`` (the headline), ``markdown`` (compare.md), ``write`` (both files), ``sides`` (where a side's results are).

Nothing is imported here: ``sides`` is read when pytest starts (``--bench-baseline``), the rest only when a
comparison is made (it brings numpy and the statistics).
"""
