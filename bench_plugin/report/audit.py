"""The audit: cases a person should look at before trusting the numbers, each finding naming its cases.

``audit(records)`` finds, per suite:

- ``all_zero``: a task on which every model that finished it scored 0, where the models' zero scores
  on the other tasks make that unlikely by chance (likely a broken task or checker);
- ``check_vs_judge``: cases where a deterministic check failed but a judge passed the answer (the
  checker may reject valid output); grouped by check and judge;
- ``infrastructure``: infrastructure errors clustered by provider and error class;
- ``judge_disagreement``: tasks where judges of one case disagree (values at least
  ``DISAGREEMENT`` apart on the 0-1 scale, or a panel's own ``max_spread`` flag), most cases first.

A judge "passed" a case when its component says so, or, when it gives no verdict of its own, when its
value reaches the case's threshold (0.5 when the threshold is 0). ``render_audit`` turns the findings
into Markdown; both are pure, for ``bench audit`` as much as for report.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.case_data import SCORED, error_class, is_judge_component, number, score_of
from bench_plugin.report.escape import markdown_code, markdown_text
from bench_plugin.report.turns import is_turn_component
from bench_plugin.results.record import ERROR, CaseRecord

HOW_TO_READ = (
    "How to read: cases worth a look before trusting the numbers above: tasks every model scored 0 on, "
    "checks that failed where a judge passed, infrastructure errors by provider and kind, and tasks whose "
    "judges disagree. Each finding lists its cases."
)
DISAGREEMENT = 0.5
ZERO_BY_CHANCE = 0.01
MAX_CASES_SHOWN = 10
KINDS = {
    "all_zero": "likely a broken task or checker",
    "check_vs_judge": "the checker may reject valid output",
    "infrastructure": "these cases can be re-run",
    "judge_disagreement": "the rubric or the judges may be ambiguous here",
}


def audit(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """Every finding over ``records`` (one or more suites), suite by suite in first-seen order.

    Returns:
        A list of ``{"kind", "suite", "path", "title", "detail", "why", "cases"}``: ``kind`` one of
        ``KINDS``, ``title`` and ``detail`` plain text (escape before showing), ``why`` what it may
        mean, ``cases`` the node ids it is about.
    """
    suites: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        suites.setdefault((record.suite, record.path), []).append(record)
    items: list[dict[str, Any]] = []
    for (suite, path), group in suites.items():
        found = all_zero_tasks(group) + check_vs_judge(group) + infrastructure(group) + judge_hot_spots(group)
        items += [{"suite": suite, "path": path, **item, "why": KINDS[item["kind"]]} for item in found]
    return items


def all_zero_tasks(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """Tasks whose scored cases are all 0, when that is unlikely to be chance.

    Chance is the product, over the task's scored cases, of its model's share of zero scores on the
    suite's other tasks (``(zeros + 1) / (scored + 2)``, so a handful of cases proves little); the task
    is flagged when that is below ``ZERO_BY_CHANCE``. A scale on which 0 is
    a common, legitimate answer (a -1/0/1 stance) is left alone; a task no model scores on, among tasks
    they do score on, is not.
    """
    tasks = _scored_by_task(records)
    zeros = _zero_tallies(tasks)
    items = []
    for task, scored in tasks.items():
        if any(score_of(record) != 0.0 for record in scored):
            continue
        chance = _zero_by_chance(scored, zeros)
        if chance < ZERO_BY_CHANCE:
            items.append(_all_zero_item(task, scored, chance))
    return items


def _scored_by_task(records: Sequence[CaseRecord]) -> dict[str, list[CaseRecord]]:
    tasks: dict[str, list[CaseRecord]] = {}
    for record in records:
        if score_of(record) is not None:
            tasks.setdefault(record.task, []).append(record)
    return tasks


def _zero_tallies(tasks: Mapping[str, Sequence[CaseRecord]]) -> dict[str, list[int]]:
    """Model -> [zero scores, scored cases] over the whole suite."""
    zeros: dict[str, list[int]] = {}
    for scored in tasks.values():
        for record in scored:
            counts = zeros.setdefault(record.model, [0, 0])
            counts[0] += score_of(record) == 0.0
            counts[1] += 1
    return zeros


def _zero_by_chance(scored: Sequence[CaseRecord], zeros: Mapping[str, list[int]]) -> float:
    """How likely a task's scored cases all are 0, from how often their models score 0 on the other tasks."""
    chance = 1.0
    for model in {record.model for record in scored}:
        mine = sum(1 for record in scored if record.model == model)
        # Laplace's rule of succession: a model seen on two other tasks proves little either way
        share = (zeros[model][0] - mine + 1) / (zeros[model][1] - mine + 2)
        chance *= share**mine
    return chance


def _all_zero_item(task: str, scored: Sequence[CaseRecord], chance: float) -> dict[str, Any]:
    models = len({record.model for record in scored})
    return {
        "kind": "all_zero", "title": f"every model scored 0 on task {task}",
        "detail": f"{len(scored)} scored case{_s(len(scored))} from {models} model{_s(models)}; by chance "
                  f"about {chance:.2g}, from how often these models score 0 on the other tasks",
        "cases": [record.nodeid for record in scored],
    }


def judge_passed(record: CaseRecord, component: Mapping[str, Any]) -> bool:
    """Whether a judge component passed the case (its own verdict, else its value against the threshold)."""
    if isinstance(component.get("passed"), bool):
        return bool(component["passed"])
    value = number(component.get("value"))
    threshold = number(record.threshold) or 0.0
    return value is not None and value >= (threshold if threshold > 0 else 0.5)


def check_vs_judge(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """Cases where a deterministic check failed and a judge passed, grouped by (check, judge)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for record in records:
        for pair in _check_and_judge_at_odds(record):
            groups.setdefault(pair, []).append(record.nodeid)
    return [
        {"kind": "check_vs_judge", "title": f"check {check} failed but judge {judge} passed",
         "detail": f"{len(cases)} case{_s(len(cases))}", "cases": cases}
        for (check, judge), cases in groups.items()
    ]


def _check_and_judge_at_odds(record: CaseRecord) -> list[tuple[str, str]]:
    """Each (check, judge) of a case where the check failed and the judge passed."""
    if record.status not in (*SCORED, "unscored"):
        return []
    plain = _plain_components(record)
    failed = [name for name, c in plain.items() if _is_failed_check(c)]
    passed = [name for name, c in plain.items() if _is_passing_judge(record, c)]
    return _pairs(failed, passed)


def _pairs(checks: Sequence[str], judges: Sequence[str]) -> list[tuple[str, str]]:
    """Every check with every judge, checks first."""
    return [(check, judge) for check in checks for judge in judges]


def _plain_components(record: CaseRecord) -> dict[str, Mapping[str, Any]]:
    """The case's components but per-turn ones (turns, not judges of the same thing)."""
    return {name: c for name, c in record.components.items() if not is_turn_component(c)}


def _is_failed_check(component: Mapping[str, Any]) -> bool:
    return not is_judge_component(component) and component.get("passed") is False


def _is_passing_judge(record: CaseRecord, component: Mapping[str, Any]) -> bool:
    return is_judge_component(component) and judge_passed(record, component)


def infrastructure(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """Infrastructure errors by provider and error class, largest cluster first."""
    groups: dict[tuple[str, str], list[tuple[CaseRecord, str]]] = {}
    for record in records:
        if record.status == ERROR:
            provider, model = failing_call(record)
            groups.setdefault((provider, error_class(record)), []).append((record, model))
    items = [_infrastructure_item(provider, kind, found) for (provider, kind), found in groups.items()]
    return sorted(items, key=lambda item: -len(item["cases"]))  # stable: ties keep first-seen order


def _infrastructure_item(provider: str, kind: str, found: Sequence[tuple[CaseRecord, str]]) -> dict[str, Any]:
    """One cluster of errors: its cases and the models whose calls failed."""
    models = sorted({model for _, model in found})
    return {
        "kind": "infrastructure", "title": f"{kind} errors from provider {provider}",
        "detail": f"{len(found)} case{_s(len(found))} ({', '.join(models)})",
        "cases": [record.nodeid for record, _ in found],
    }


def failing_call(record: CaseRecord) -> tuple[str, str]:
    """The provider and model of the call that ended an errored case: a conversation partner's, a judge's, its own.

    The record's ``error.call`` names the failed call (its place in ``call_log``, from 1, which has its provider); a
    case's own provider and model otherwise.
    """
    call = (record.error or {}).get("call")
    if not isinstance(call, Mapping):
        return record.provider, record.model
    provider, model = _logged_call(record, call.get("index")).get("provider"), call.get("model")
    return (str(provider) if provider else record.provider), (str(model) if model else record.model)


def _logged_call(record: CaseRecord, index: Any) -> Mapping[str, Any]:
    """The ``call_log`` entry at ``index`` (from 1); empty when there is none."""
    entry = record.call_log[index - 1] if isinstance(index, int) and 0 < index <= len(record.call_log) else {}
    return entry if isinstance(entry, Mapping) else {}


def judge_spread(record: CaseRecord) -> tuple[float | None, bool]:
    """The largest spread of judge values on one case (0-1 scale) and whether a panel flagged it.

    Spreads are taken within each panel (its judges' values) and across the case's other judge
    components; per-turn components are turns, not judges of the same thing, and do not count.
    """
    judges = _judge_components(record)
    panels = [c["panel"] for c in judges if _has_panel(c)]
    plain = [number(c.get("value")) for c in judges if not _has_panel(c)]
    spreads = [_spread(_panel_values(panel)) for panel in panels] + [_spread(plain)]
    flagged = any(bool(panel.get("flagged")) for panel in panels)
    return max(_known(spreads), default=None), flagged


def _judge_components(record: CaseRecord) -> list[Mapping[str, Any]]:
    return [c for c in _plain_components(record).values() if is_judge_component(c)]


def _has_panel(component: Mapping[str, Any]) -> bool:
    return isinstance(component.get("panel"), Mapping)


def _panel_values(panel: Mapping[str, Any]) -> list[float | None]:
    return [number(judge.get("value")) for judge in panel.get("judges") or []]


def _spread(values: Sequence[float | None]) -> float | None:
    """The largest value less the smallest, when two or more are numbers."""
    found = _known(values)
    return max(found) - min(found) if len(found) >= 2 else None


def _known(values: Sequence[float | None]) -> list[float]:
    return [value for value in values if value is not None]


def judge_hot_spots(records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """Tasks whose cases have judges that disagree, the task with most such cases first."""
    tasks: dict[str, list[str]] = {}
    for record in records:
        if _judges_disagree(record):
            tasks.setdefault(record.task, []).append(record.nodeid)
    items = [
        {"kind": "judge_disagreement", "title": f"judges disagree on task {task}",
         "detail": f"{len(cases)} case{_s(len(cases))} with judges {DISAGREEMENT:g} or more apart "
                   "(0-1 scale) or flagged by their panel",
         "cases": cases}
        for task, cases in tasks.items()
    ]
    return sorted(items, key=lambda item: -len(item["cases"]))


def _judges_disagree(record: CaseRecord) -> bool:
    """Whether a case's judges are ``DISAGREEMENT`` or more apart, or a panel flagged it."""
    spread, flagged = judge_spread(record)
    return flagged or (spread is not None and spread >= DISAGREEMENT)


def render_audit_items(items: Sequence[Mapping[str, Any]], max_cases: int = MAX_CASES_SHOWN) -> list[str]:
    """One bullet per finding, its cases nested under it (at most ``max_cases``, then how many more)."""
    lines = []
    for item in items:
        lines.append(f"- **{markdown_text(item['title'])}** ({markdown_text(item['why'])}): "
                     f"{markdown_text(item['detail'])}.")
        cases = list(item["cases"])
        lines += [f"  - {markdown_code(nodeid)}" for nodeid in cases[:max_cases]]
        if len(cases) > max_cases:
            lines.append(f"  - … and {len(cases) - max_cases} more")
    return lines


def render_audit(items: Sequence[Mapping[str, Any]], *, max_cases: int = MAX_CASES_SHOWN) -> str:
    """The audit as a Markdown document: a heading per suite, a bullet per finding naming its cases.

    Args:
        items: what ``audit`` returned (from one or more suites).
        max_cases: how many cases to list under a finding before "… and N more".

    Returns:
        Markdown ending with a newline; "Nothing to report" when there is no finding.
    """
    lines = ["# Audit", ""]
    if not items:
        return "\n".join([*lines, "Nothing to report: no broken-looking task, no check-vs-judge disagreement, "
                          "no infrastructure error, no judge disagreement.", ""])
    lines += [HOW_TO_READ, ""]
    suites: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for item in items:
        suites.setdefault((item["suite"], item["path"]), []).append(item)
    for (suite, path), found in suites.items():
        lines += [f"## {markdown_text(suite)} ({markdown_code(path)})", "", *render_audit_items(found, max_cases), ""]
    return "\n".join(lines)


def _s(count: int) -> str:
    return "" if count == 1 else "s"
