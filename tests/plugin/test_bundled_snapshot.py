"""The bundled suites write the same results and reports as the committed snapshot (timing aside)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bundled_snapshot import GOLDEN, diff, run_bundled, snapshot


@pytest.mark.slow
def test_bundled_suites_write_the_recorded_outputs(tmp_path: Path) -> None:
    result = run_bundled(tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    problems = diff(json.loads(GOLDEN.read_text()), snapshot(tmp_path))
    assert not problems, (
        "\n".join(problems[:40]) + "\n(regenerate deliberately: python tests/bundled_snapshot.py --update)"
    )
