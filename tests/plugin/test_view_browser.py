"""bench view in headless Chromium: open a run, filter, open a case, compare two runs; hostile text never runs.

Driven as the dashboard's browser test drives Chromium (its ``browser`` fixture: the system's Chromium through
Playwright, skipped with what to install when either is missing, failing under CI).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_dashboard_browser import Watched, browser  # noqa: F401 (browser: the fixture, used by name)
from view_runs import IMAGE, SCRIPT, serving, write_runs

from bench_plugin.view.runs import find_runs
from bench_plugin.view.site import Site
from bench_plugin.view.static import write_static

pytestmark = pytest.mark.slow  # a browser per test


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("view")
    write_runs(root)
    with serving(root) as url:
        yield url, root


def stored(root: Path, run: str, nodeid: str) -> dict[str, Any]:
    """The record of ``nodeid`` as the run's results file holds it."""
    for line in (root / "bench-results" / "runs" / run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if line.startswith("{\"") and json.loads(line)["nodeid"] == nodeid:
            return dict(json.loads(line))
    raise AssertionError(f"{nodeid} not in {run}")


def opened(browser: Any, url: str) -> Watched:  # noqa: F811 (the fixture's value)
    watched = Watched(browser.new_page(viewport={"width": 1280, "height": 900}))
    watched.page.goto(url, wait_until="load")
    return watched


def assert_clean(watched: Watched) -> None:
    """Only the page's own script ran, no handler came from the data, nothing was blocked or raised."""
    page = watched.page
    assert page.evaluate("() => document.scripts.length") == 1
    assert page.evaluate("() => Array.from(document.querySelectorAll('*')).some(e => "
                         "Array.from(e.attributes).some(a => a.name.startsWith('on')))") is False
    assert page.evaluate("() => document.documentElement.dataset.ready") == "1"  # the page's own script ran
    assert watched.errors == [] and watched.dialogs == []


def test_open_a_run_filter_it_and_open_a_case(browser: Any, served: tuple[str, Path]) -> None:  # noqa: F811
    url, root = served
    watched = opened(browser, url)
    page = watched.page
    page.get_by_role("link", name="before", exact=True).click()
    assert page.locator("table.cases tbody tr").count() == 12
    page.select_option("select[name=model]", "bad")
    page.select_option("select[name=status]", "failed")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_load_state("load")
    assert page.locator("p.pager").get_attribute("data-matched") == "4"  # bad fails tasks 2 to 5
    assert set(page.locator("table.cases tbody td:nth-child(6)").all_inner_texts()) == {"failed"}
    page.locator("th a", has_text="Score").click()
    page.wait_for_load_state("load")
    page.locator("table.cases tbody tr").first.locator("td:nth-child(3) a").click()
    page.wait_for_load_state("load")
    nodeid = page.locator("header p.where code").inner_text()
    record = stored(root, "before", nodeid)
    assert page.locator("[data-field=status]").inner_text() == record["status"] == "failed"
    assert page.locator("[data-field=composite]").inner_text() == f"{record['composite']:.3f}"
    assert page.locator("[data-field=task]").inner_text() == record["task"]
    assert page.locator("pre.output").inner_text() == record["response"]
    judge = record["scores"]["components"][1]["judge_output"]
    assert page.locator("pre.judge").inner_text() == judge  # the hostile reply, shown as the text it is
    assert_clean(watched)


def test_compare_two_runs_and_read_a_fixed_case_side_by_side(browser: Any, served: tuple[str, Path]) -> None:  # noqa: F811
    url, root = served
    watched = opened(browser, url)
    page = watched.page
    page.select_option("select[name=baseline]", label="before")
    page.select_option("select[name=current]", label="after")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/compare/1/2.html")
    fixed = page.locator("ul[data-list=fixed] li")
    assert fixed.count() == 1 and "capital-2[bad-run1]" in fixed.inner_text()
    fixed.locator("a").click()
    page.wait_for_load_state("load")
    before = stored(root, "before", "suites/qa.yaml::capital-2[bad-run1]")
    after = stored(root, "after", "suites/qa.yaml::capital-2[bad-run1]")
    outputs = page.locator("pre.output").all_inner_texts()
    assert outputs == [before["response"], after["response"]]
    assert page.locator(".diff span.remove").inner_text() == "-" + before["response"]
    assert page.locator(".diff span.add").inner_text() == "+" + after["response"]
    assert_clean(watched)


def test_a_case_shows_its_image_from_the_runs_folder_only(browser: Any, served: tuple[str, Path]) -> None:  # noqa: F811
    url, _ = served
    watched = opened(browser, url + "run/2/case/3.html")
    images = watched.page.evaluate("() => Array.from(document.images).map(i => [i.naturalWidth, i.src])")
    # the file's part, in the prompt sent (part 0) and in the transcript (part 3), each in place and in the list
    assert sorted(src.rsplit("/run/2/", 1)[1] for _, src in images) == ["image/3/0"] * 2 + ["image/3/3"] * 2
    assert all(width == 3 for width, _ in images)  # loaded
    assert watched.page.locator("figure.image").count() == 12  # 3 parts twice, each in place and listed
    assert_clean(watched)


HOSTILE_PAGES = ["", "run/1/index.html", "run/2/index.html?text=capital", "run/1/charts.html", "run/1/case/0.html",
                 "run/2/case/3.html", "run/1/models/0/1.html", "compare/1/2.html", "compare/2/1.html",
                 "diff/1/0/2/0.html", "run/1/case/77.html"]


def test_hostile_text_never_runs_on_any_page(browser: Any, served: tuple[str, Path]) -> None:  # noqa: F811
    url, _ = served
    for path in HOSTILE_PAGES:
        watched = opened(browser, url + path)
        if path.endswith("77.html"):  # a case that does not exist: the 404 page (the browser logs the status)
            watched.errors = [error for error in watched.errors if "404" not in error]
        text = watched.page.evaluate("() => document.body.innerText")
        assert path.endswith("77.html") or SCRIPT in text or IMAGE in text, path
        assert_clean(watched)
        watched.page.close()


def test_the_static_pages_open_from_disk_and_stay_inert(browser: Any, served: tuple[str, Path],  # noqa: F811
                                                        tmp_path: Path) -> None:
    _, root = served
    site = Site(find_runs([str(root / "bench-results")], root / "bench-results"), root, static=True)
    write_static(site, tmp_path)
    for page_file in ("index.html", "run/1/index.html", "run/2/case/3.html", "compare/1/2.html",
                      "run/1/models/0/1.html"):
        watched = opened(browser, (tmp_path / page_file).as_uri())
        assert_clean(watched)
        watched.page.close()
    watched = opened(browser, (tmp_path / "run" / "2" / "case" / "3.html").as_uri())
    widths = watched.page.evaluate("() => Array.from(document.images).map(i => i.naturalWidth)")
    assert widths == [3, 3, 3, 3]  # the copied file, loaded from disk under the page's policy
    watched = opened(browser, (tmp_path / "index.html").as_uri())
    watched.page.get_by_role("link", name="after against before").click()
    watched.page.wait_for_load_state("load")
    assert re.search(r"compare/1/2\.html$", watched.page.url)
    assert watched.page.locator("ul[data-list=fixed] li").count() == 1
