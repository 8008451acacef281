from __future__ import annotations

import numpy as np
import pytest

from bench_plugin.report.statistics import bootstrap


@pytest.mark.parametrize("cases", [40, 2001])
def test_bootstrap_figures_do_not_depend_on_the_block_size(monkeypatch: pytest.MonkeyPatch, cases: int) -> None:
    rng = np.random.default_rng(3)
    values = rng.random((cases, 3))
    values[rng.random((cases, 3)) < 0.2] = np.nan
    units = np.arange(cases) // 2  # two runs of each task: the task is the unit
    n_units = int(units.max()) + 1
    blocked = bootstrap.bootstrap_means(values, units, n_units, seed=11)
    monkeypatch.setattr(bootstrap, "_BLOCK_CELLS", 10**12)  # one block per chunk, as before blocks existed
    assert bootstrap.bootstrap_means(values, units, n_units, seed=11) == blocked
