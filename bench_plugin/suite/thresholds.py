"""Thresholds that may be templates: ``pass_threshold`` and a scorer's ``threshold``, rendered per case.

promptfoo's ``__threshold`` column gives each test row its own threshold; here a dataset field does
the same through a template (``pass_threshold: "{{ threshold }}"``). What the threshold means is the
scorers' business (``scoring/pass_rule.py``); this module only turns what was written into a number.
"""

from __future__ import annotations

from typing import Any

from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.suite.templates import TemplateRenderer

_HINT = 'a number from 0 to 1, or a template that gives one per case, such as "{{ threshold }}"'


def is_template(value: Any) -> bool:
    """Whether ``value`` is text with a ``{{ }}`` or ``{% %}`` in it."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def written_threshold(
    value: Any, *, path: str, key: str, line: int | None, error: type[SuiteError] = SuiteError
) -> float | str | None:
    """A threshold as written: None, a number, or a template (kept as text, rendered per case).

    Raises:
        ``error``: for text that is not a template (``"high"``), naming the key.
    """
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return None if value is None else float(value)
    if is_template(value):
        return str(value)
    raise error(f"expected a number, got {value!r}", path=path, line=line, key=key, hint=_HINT)


def render_threshold(
    renderer: TemplateRenderer, source: str, scope: dict[str, Any], *, path: str, key: str, line: int | None
) -> float:
    """The number a threshold template gives for one case (a CSV field's ``'0.8'`` counts as 0.8).

    Raises:
        CaseError: when the template fails, or gives anything but a number from 0 to 1.
    """
    value = renderer.evaluate(source, scope, key=key, line=line)
    number = _number(value)
    if number is None or not 0 <= number <= 1:
        shown = repr(value) if not isinstance(value, str) or len(value) <= 60 else repr(value[:57] + "...")
        raise CaseError(f"expected a number from 0 to 1, got {shown}", path=path, line=line, key=key, hint=_HINT)
    return number


def _number(value: Any) -> float | None:
    """A number, or text that reads as one, as a float; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    try:
        return float(value.strip())
    except ValueError:
        return None
