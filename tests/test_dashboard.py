"""dashboard.html: every section drawn as SVG with a table, text escaped, figures from the summary or the records."""

from __future__ import annotations

import base64
import hashlib
import math
import random
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.report.dashboard import render_dashboard
from bench_plugin.report.dashboard.compare import comparison_of, rating_sets
from bench_plugin.report.dashboard.figures import heat_rows
from bench_plugin.report.dashboard.frame import PAGE_SCRIPT
from bench_plugin.report.dashboard.svg import clip_label, diverging, ink_on, nice_ticks, sequential
from bench_plugin.report.summary import summarize
from bench_plugin.report.write import write_reports
from bench_plugin.results.record import ERROR, FAILED, PASSED, UNSCORED, CaseRecord

SECTIONS = {"leaderboard", "heatmap", "distributions", "components", "breakdowns", "significance", "ratings",
            "repeats", "audit"}
CHARTS = {"leaderboard", "heatmap", "distributions", "components", "breakdown", "significance", "ratings", "repeats"}
SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(1)>"


def case(model: str, task: str, composite: float | None, *, run: int = 1, status: str | None = None,
         **fields: Any) -> CaseRecord:
    check = fields.pop("check", None if composite is None else float(composite >= 0.5))
    judge = fields.pop("judge", composite)
    components = [{"name": "C", "value": check, "passed": None if check is None else check == 1.0,
                   "judge_output": None},
                  {"name": "J", "value": judge, "passed": None, "judge_output": "Rating: [[7]]"}]
    if status is None:
        status = PASSED if (composite or 0) >= 0.5 else FAILED
    return CaseRecord(
        nodeid=f"suites/qa.yaml::{task}[{model}-run{run}]", suite=fields.pop("suite", "qa"), path="suites/qa.yaml",
        task=task, model=model, model_id=model, model_label=fields.pop("model_label", model), provider="scripted",
        run=run, status=status, composite=composite, threshold=0.5,
        scores={"components": components, "composite": composite, "threshold": 0.5}, **fields)


def three_models(tasks: int = 12, seed: int = 3) -> list[CaseRecord]:
    """A strong model and two identical weaker ones, each task run twice, tasks in two categories."""
    rng = random.Random(seed)
    records = []
    for index in range(tasks):
        for run in (1, 2):
            weak = round(rng.uniform(0.0, 0.6), 3)
            tags = [f"category={'ab'[index % 2]}"]
            records.append(case("strong", f"t{index}", min(1.0, weak + 0.4), run=run, tags=tags))
            records.append(case("twin-a", f"t{index}", weak, run=run, tags=tags))
            records.append(case("twin-b", f"t{index}", weak, run=run, tags=tags))
    return records


def page_of(records: list[CaseRecord]) -> str:
    return render_dashboard(summarize(records), records)


class Outline(HTMLParser):
    """The page's sections, charts (with how many marks each drew) and tables."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.charts: dict[str, int] = {}
        self.tables_in: dict[str, int] = {}
        self.scripts = 0
        self.tags: set[str] = set()
        self._chart: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.tags.add(tag)
        if tag == "section" and values.get("data-section"):
            self.sections.append(str(values["data-section"]))
        elif tag == "svg":
            self._chart = str(values.get("data-chart"))
            self.charts[self._chart] = 0
        elif tag in ("rect", "circle", "path") and self._chart is not None:
            self.charts[self._chart] += 1
        elif tag == "table" and self.sections:
            self.tables_in[self.sections[-1]] = self.tables_in.get(self.sections[-1], 0) + 1
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._chart = None


def outline(page: str) -> Outline:
    parser = Outline()
    parser.feed(page)
    return parser


def test_every_section_draws_a_chart_and_has_a_table() -> None:
    found = outline(page_of(three_models()))
    assert set(found.sections) == SECTIONS
    assert set(found.charts) == CHARTS
    assert all(marks > 0 for marks in found.charts.values()), found.charts
    assert SECTIONS - {"audit"} <= set(found.tables_in)


def test_text_from_suites_and_models_is_escaped() -> None:
    records = [
        case("m1", SCRIPT, 0.9, model_label=SCRIPT, suite=IMAGE, tags=[f"x={IMAGE}", f"{SCRIPT}=a"]),
        case("m2", SCRIPT, 0.2, model_label=IMAGE, suite=IMAGE, tags=[f"x={SCRIPT}", f"{SCRIPT}=a"]),
        case("m1", IMAGE, 0.0, model_label=SCRIPT, suite=IMAGE, tags=[f"x={IMAGE}", f"{SCRIPT}=b"]),
        case("m2", IMAGE, 0.0, model_label=IMAGE, suite=IMAGE, tags=[f"x={SCRIPT}", f"{SCRIPT}=b"]),
        case("m1", "t3", None, status=UNSCORED, reason=f"judge said {SCRIPT}", model_label=SCRIPT, suite=IMAGE),
        case("m2", "t3", None, status=ERROR, model_label=IMAGE, suite=IMAGE, error={"kind": IMAGE, "message": SCRIPT}),
    ]
    page = page_of(records)
    assert SCRIPT not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    found = outline(page)
    assert found.scripts == 1
    assert "img" not in found.tags


def test_only_the_pages_own_script_may_run() -> None:
    page = page_of(three_models(4))
    digest = base64.b64encode(hashlib.sha256(PAGE_SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page
    assert "default-src 'none'" in page
    assert f"<script>{PAGE_SCRIPT}</script>" in page


def test_the_page_loads_nothing_from_outside() -> None:
    page = page_of(three_models(4))
    addresses = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert addresses == {"http://www.w3.org/2000/svg"}  # the SVG namespace names, it does not load
    assert not re.search(r"\b(src|href)=\"(?!#)", page)


def test_the_summarys_comparisons_separate_the_better_model_and_tie_the_twins() -> None:
    suite = summarize(three_models(15))["suites"][0]
    comparison = comparison_of(suite)
    assert comparison is not None
    assert comparison.tiers == [["strong"], ["twin-a", "twin-b"]]
    pair, sign = comparison.get("twin-a", "strong") or (None, 0.0)
    assert pair is not None and pair.significant
    assert sign * pair.diff == pytest.approx(-0.4, abs=0.02)
    twins, _ = comparison.get("twin-a", "twin-b") or (None, 0.0)
    assert twins is not None and not twins.significant and twins.diff == 0.0
    assert "Holm-corrected" in comparison.method
    ratings = rating_sets(suite)[0].ratings
    assert ratings[0].model == "strong"
    assert ratings[0].rating > max(r.rating for r in ratings[1:])
    # it won every game, the twins tied each other in every case: no resample varies them, so no interval
    assert all(math.isnan(r.low) and math.isnan(r.high) for r in ratings)


def test_the_leaderboard_shows_the_summarys_intervals_and_denominators() -> None:
    records = three_models(6)
    summary = summarize(records)
    suite = summary["suites"][0]
    for row in suite["models"]:
        row["intervals"]["mean_composite"].update(se=0.0123, ci_low=0.111111, ci_high=0.999999)
        row["intervals"]["components"]["C"].update(ci_low=0.222222, ci_high=0.777777)
    page = render_dashboard(summary, records)
    assert "[0.111, 1.000]" in page
    assert "<td>0.012</td>" in page
    assert "[0.222, 0.778]" in page
    assert "95% t intervals (cluster-robust, never of zero width) over tasks (runs repeat)" in page


def test_one_model_has_no_comparison_and_says_why_it_has_no_ratings() -> None:
    records = [case("solo", f"t{index}", index / 10) for index in range(5)]
    page = page_of(records)
    found = outline(page)
    assert "significance" not in found.sections
    assert "ratings" not in found.charts
    assert "Ratings need two or more models" in page
    assert "Each task ran once" in page


def test_an_empty_run_gives_a_short_valid_page() -> None:
    page = render_dashboard({"totals": {"cases": 0}, "suites": []}, [])
    assert page.startswith("<!DOCTYPE html>")
    assert "No cases were run." in page
    assert page.rstrip().endswith("</html>")


def test_a_summary_without_statistics_still_draws_what_it_has() -> None:
    records = three_models(4)
    summary = summarize(records)
    for key in ("comparisons", "ratings", "breakdowns", "repeats", "audit", "statistics"):
        summary["suites"][0].pop(key, None)
    for row in summary["suites"][0]["models"]:
        row.pop("intervals", None)
    found = outline(render_dashboard(summary, records))
    assert {"leaderboard", "heatmap", "distributions", "components"} <= set(found.charts)
    assert all(marks > 0 for marks in found.charts.values())


def test_audit_lists_the_summarys_findings_with_their_cases() -> None:
    records = [
        case("a", "broken", 0.0), case("b", "broken", 0.0),
        case("a", "fine", 0.9), case("b", "fine", 0.7),
        case("a", "strict", 0.6, check=0.0, judge=0.9),
        case("b", "strict", None, status=ERROR, error={"kind": "timeout", "message": "no answer"}),
    ]
    summary = summarize(records)
    page = render_dashboard(summary, records)
    audit = summary["suites"][0]["audit"]
    assert {"check_vs_judge", "infrastructure"} <= {item["kind"] for item in audit}
    for item in audit:
        assert f'data-kind="{item["kind"]}"' in page
        assert item["title"] in page
        assert all(f"<code>{nodeid}</code>" in page for nodeid in item["cases"])


def test_heat_map_puts_tasks_easiest_first() -> None:
    records = [case(model, task, score) for model in ("a", "b")
               for task, score in (("hard", 0.1), ("easy", 0.9), ("middle", 0.5))]
    tasks, values = heat_rows(summarize(records)["suites"][0])
    assert tasks == ["easy", "middle", "hard"]
    assert values == [[0.9, 0.5, 0.1], [0.9, 0.5, 0.1]]


def test_write_reports_writes_the_dashboard_beside_the_summary(tmp_path: Path) -> None:
    paths = write_reports(three_models(4), tmp_path)
    assert paths["dashboard"] == tmp_path / "dashboard.html"
    assert 'data-section="leaderboard"' in paths["dashboard"].read_text(encoding="utf-8")


def test_a_large_run_embeds_no_transcripts_and_stays_small() -> None:
    secret = "TRANSCRIPT-" + "x" * 2000
    records = [case(model, f"t{index}", (index % 10) / 10, response=secret,
                    transcript=[{"role": "assistant", "content": secret}])
               for index in range(400) for model in ("a", "b", "c", "d", "e")]
    page = page_of(records)
    assert "TRANSCRIPT-" not in page
    assert len(page) < 2000 * 200  # some 150 bytes a case (a heat-map cell each here): aggregates, not records


def test_colour_scales_and_ticks() -> None:
    assert nice_ticks(0.0, 1.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(600.0, 1400.0, 4) == [600.0, 800.0, 1000.0, 1200.0, 1400.0]
    assert sequential(0.0) == "#440154" and sequential(1.0) == "#fde725"
    assert diverging(0.0) == "#f7f7f7"
    assert ink_on("#fde725") == "#000" and ink_on("#440154") == "#fff"
    assert clip_label("a very long model label", 70) == "a very lo…"
