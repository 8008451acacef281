"""``cluster:``: what makes cases belong together for the statistics, written on a task, its dataset or the suite.

Cases of one cluster are one resampling unit for intervals and paired tests (``report/statistics.py``): the runs
of a case, the prompt variants of one dataset row, a conversation's seeds. The value is a template rendered per
case at expansion (``"{{ question_id }}"``); without one it is the task's id without a prompt variant's suffix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.templates import TemplateRenderer

KEY = "cluster"


def cluster_template(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath) -> TemplateSpec | None:
    """The task's ``cluster:``, else its dataset's, else the suite's; None when none is written (the default)."""
    dataset = entry.get("dataset")
    candidates: list[tuple[Mapping[str, Any], KeyPath]] = [(entry, base)]
    if isinstance(dataset, Mapping):
        candidates.append((dataset, (*base, "dataset")))
    candidates.append((loaded.data, ()))
    for holder, path in candidates:
        if holder.get(KEY) is not None:
            where: KeyPath = (*path, KEY)
            return TemplateSpec(str(holder[KEY]), key=format_key_path(where), line=loaded.lines.line_of(where))
    return None


def render_cluster(
    renderer: TemplateRenderer, template: TemplateSpec | None, variables: Mapping[str, Any], default: str
) -> str:
    """A case's cluster: ``template`` rendered with its variant's variables, else ``default`` (the task's id).

    Raises:
        CaseError: the template does not render (the variant's cases fail with it).
    """
    if template is None:
        return default
    return template.render(renderer, dict(variables)).strip() or default
