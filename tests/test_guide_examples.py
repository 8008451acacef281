"""Every example suite in docs/suite-guide.md runs offline and ends the way its marker says.

An example is marked in the guide by an HTML comment on the line before its fence::

    <!-- example: capitals passed=4 failed=2 -->
    ```yaml
    ...
    ```

The marker's ``key=value`` pairs are the outcomes passed to ``assert_outcomes`` (``passed``,
``failed``, ``skipped``, ``errors``...), plus two optional ones: ``expect="text"`` (a line of the
output must contain it) and ``args="--bench-runs 2"`` (extra command-line arguments, split like a
shell would). Files the example needs are marked ``<!-- file: NAME/relative/path -->``, the path being
relative to ``suites/``. The markers are read by ``tests/doc_examples.py``, which docs/coming-from.md's
test shares.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_examples import Example, load_examples, run_example

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "suite-guide.md"

EXAMPLES = load_examples(GUIDE)


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_guide_example_runs_offline_and_ends_as_declared(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Example,
) -> None:
    # the infrastructure-error example relies on this key variable being unset
    monkeypatch.delenv("EXAMPLE_KEY_NOT_SET", raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    run_example(pytester, example, "docs/suite-guide.md")
