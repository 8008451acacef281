"""bench view over HTTP: routes, values from the records, filters and sorting, escaping, confinement, --static."""

from __future__ import annotations

import json
import re
import threading
import webbrowser
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
from view_runs import HOSTILE, IMAGE, LINK, QUOTES, SCRIPT, TASKS, png, serving, write_runs

from bench_plugin.cli import main
from bench_plugin.view import command
from bench_plugin.view import index as index_module
from bench_plugin.view import query as query_module
from bench_plugin.view import static as static_module
from bench_plugin.view.images import ImagePart, image_file
from bench_plugin.view.query import CaseQuery
from bench_plugin.view.runs import find_runs
from bench_plugin.view.server import ViewServer, serve_view
from bench_plugin.view.site import Site
from bench_plugin.view.static import write_static


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("view")
    write_runs(root)
    with serving(root) as url:
        yield url, root


@pytest.fixture
def client(served: tuple[str, Path]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[0], follow_redirects=False) as http:
        yield http


class Markup(HTMLParser):
    """Every tag, attribute and script of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.scripts += tag == "script"


def markup(page: str) -> Markup:
    parser = Markup()
    parser.feed(page)
    return parser


def links(page: str) -> list[str]:
    return [str(attrs["href"]) for tag, attrs in markup(page).tags if tag == "a" and attrs.get("href")]


PAGES = ["/", "/run/1/index.html", "/run/2/", "/run/1/charts.html", "/run/2/case/2.html", "/run/2/case/3.html",
         "/run/1/models/0/1.html", "/compare/1/2.html", "/diff/1/3/2/3.html", "/run/2/index.html?text=town"]


def assert_inert(page: str) -> None:
    """Hostile text is in the page only as text: no markup of its own, no handler, no script link, nothing fetched."""
    assert SCRIPT not in page and IMAGE not in page and QUOTES not in page
    found = markup(page)
    assert found.scripts == 1  # the page's own
    assert not any(name.startswith("on") for _, attrs in found.tags for name in attrs)
    assert not any(value and value.strip().lower().startswith("javascript:")
                   for _, attrs in found.tags for value in attrs.values())
    assert not re.search(r"(src|href|action)=\"(https?:)?//", page)  # nothing from outside the machine


@pytest.mark.parametrize("path", PAGES)
def test_every_page_shows_hostile_text_as_text(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert_inert(response.text)


def test_pages_carry_a_strict_policy_and_no_caching(client: httpx.Client) -> None:
    response = client.get("/run/1/index.html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy and "img-src 'self'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["server"] == "bench-view"


@pytest.mark.parametrize("path", [
    "/run/1/../../../etc/passwd", "/run/1/%2e%2e/%2e%2e/etc/passwd", "/run/3/index.html", "/run/1/case/99.html",
    "/run/1/case/-1.html", "/run/1/case/..%2f..%2fresults.jsonl", "/results.jsonl", "/run/1/results.jsonl",
    "/bench-results/runs/before/results.jsonl", "/run/2/image/3/7", "/run/1/models/0/5.html", "/etc/passwd",
    "//etc/passwd", "/run/1/case/0.html/../../../../results.jsonl", "/diff/1/0/9/0.html",
])
def test_paths_that_name_nothing_served_are_404(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert "root:" not in response.text and "nodeid" not in response.text


def test_a_query_of_too_many_parameters_is_refused_in_words(client: httpx.Client) -> None:
    response = client.get("/run/1/index.html?" + "&".join(f"p{n}=1" for n in range(50)))
    assert response.status_code == 404 and "Too many query parameters." in response.text


def test_a_run_without_its_slash_is_sent_to_it(client: httpx.Client) -> None:
    response = client.get("/run/2")
    assert response.status_code == 303 and response.headers["location"] == "2/"


def test_a_request_for_another_host_is_refused(client: httpx.Client) -> None:
    assert client.get("/", headers={"Host": "attacker.example"}).status_code == 421
    assert client.get("/", headers={"Host": "localhost"}).status_code == 200


def test_the_runs_page_lists_each_run_with_its_figures(client: httpx.Client) -> None:
    page = client.get("/").text
    assert 'href="run/1/index.html">before</a>' in page and 'href="run/2/index.html">after</a>' in page
    assert page.count("<td>12</td>") == 2  # cases
    assert "1 line(s) of its results are not case records" in page  # the {not a record} line, left out, said
    assert 'href="compare/1/2.html"' in page


def test_the_run_page_shows_the_leaderboard_and_every_case(client: httpx.Client) -> None:
    page = client.get("/run/2/index.html").text
    assert 'data-matched="12"' in page
    assert page.count('<tr data-case="') == 12
    leaderboard = re.search(r'<table class="leaderboard">(.*?)</table>', page, re.S)
    assert leaderboard is not None
    rows = re.findall(r"<tr><td class=\"l\">(.*?)</td><td>6</td><td>([\d.]+)</td>\s*<td>(\[[\d., ]+\])</td>",
                      leaderboard.group(1))
    # good: (0.9 * 5 + 0.25) / 6; bad in "after": (0.8 * 3 + 0.2 * 3) / 6, each with its interval
    assert [(score, bool(interval)) for _, score, interval in rows] == [("0.792", True), ("0.500", True)]
    assert 'href="models/0/1.html"' in page


def test_a_run_page_lists_the_cases_while_its_statistics_are_computed(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_runs(tmp_path)
    release = threading.Event()

    def slow_summary(records: object) -> dict[str, object]:
        release.wait(30)
        return {"totals": {}, "suites": []}

    monkeypatch.setattr(index_module, "summarize", slow_summary)
    site = Site(find_runs([str(tmp_path / "bench-results")], tmp_path / "bench-results"), tmp_path)
    try:
        page = site.respond("run/1/index.html").body.decode()
        assert 'data-computing="1"' in page and page.count('<tr data-case="') == 12
    finally:
        release.set()
    index = site.indexes.get("1")
    assert index is not None and index.summary == {"totals": {}, "suites": []}
    assert 'data-computing="1"' not in site.respond("run/1/index.html").body.decode()


def test_filters_select_the_cases_the_records_say(client: httpx.Client) -> None:
    failed = client.get("/run/2/index.html", params={"status": "failed", "model": "bad"}).text
    assert 'data-matched="3"' in failed
    assert client.get("/run/2/index.html", params={"tag": "city=1"}).text.count('<tr data-case="') == 6
    assert 'data-matched="2"' in client.get("/run/2/index.html", params={"task": TASKS[0]}).text
    below = client.get("/run/2/index.html", params={"component": "C", "below": "0.5"}).text
    assert 'data-matched="4"' in below  # bad fails tasks 3-5, good task 5
    assert 'data-matched="6"' in client.get("/run/2/index.html", params={"text": "THE CAPITAL IS"}).text
    assert 'data-matched="0"' in client.get("/run/2/index.html", params={"text": "nowhere"}).text


def test_sorting_by_a_column_orders_the_rows(client: httpx.Client) -> None:
    page = client.get("/run/2/index.html", params={"sort": "latency", "order": "desc"}).text
    numbers = [int(n) for n in re.findall(r'<tr data-case="(\d+)"', page)]
    assert numbers[:2] in ([10, 11], [11, 10]) and set(numbers[-2:]) == {0, 1}


def test_the_case_page_shows_the_record(client: httpx.Client) -> None:
    page = client.get("/run/2/case/3.html").text  # task 1, model bad, in "after"
    assert "The capital is Town1 (after)" in page
    assert "Rating: &lt;script&gt;" in page
    assert 'data-field="status">passed' in page and 'data-field="composite">0.800' in page
    assert "$0.0020" in page and "11 in, 5 out" in page
    assert 'src="../image/3/0"' in page  # the file in the run's folder
    assert "../../../outside.png" in page and 'src="../image/3/1"' not in page  # named, not served
    assert "(not fetched)" in page and 'src="javascript' not in page


def test_a_case_links_to_its_output_against_another_runs(client: httpx.Client) -> None:
    page = client.get("/run/2/case/5.html").text
    link = next(link for link in links(page) if "/diff/" in link)
    assert link == "../../../diff/1/5/2/5.html"
    shown = client.get(urljoin("/run/2/case/5.html", link))
    assert shown.status_code == 200 and "(before)" in shown.text and "(after)" in shown.text


def test_an_image_is_served_only_from_inside_the_served_folders(client: httpx.Client) -> None:
    image = client.get("/run/2/image/3/0")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png" and image.content == png()
    assert client.get("/run/2/image/3/1").status_code == 404  # outside every served folder
    assert client.get("/run/2/image/3/2").status_code == 404  # a URL: never fetched


def test_comparing_two_runs_lists_the_fixed_case_with_a_diff(client: httpx.Client) -> None:
    response = client.get("/compare.html", params={"baseline": "1", "current": "2"})
    assert response.status_code == 303 and response.headers["location"] == "compare/1/2.html"
    page = client.get("/compare/1/2.html").text
    assert 'data-list="fixed"' in page and 'data-list="newly_failing"' not in page
    fixed = re.search(r'data-list="fixed">(.*?)</ul>', page, re.S)
    assert fixed is not None and "capital-2[bad-run1]" in fixed.group(1)
    assert "0.2000 → 0.8000" in page  # the task's mean on both sides
    diff = next(link for link in links(page) if link.startswith("../../diff/"))
    shown = client.get(urljoin("/compare/1/2.html", diff)).text
    assert '<span class="remove">-The capital is Town' in shown and '<span class="add">+The capital is Town' in shown


def test_comparing_two_models_of_a_run_pairs_their_cases(client: httpx.Client) -> None:
    page = client.get("/run/1/models/0/1.html").text
    assert "12 cases compared" not in page and "6 cases compared" in page
    failing = re.search(r'data-list="newly_failing">(.*?)</ul>', page, re.S)
    assert failing is not None and failing.group(1).count("<li>") == 3  # bad fails tasks 2-4, which good passes
    assert 'data-list="fixed"' not in page  # good fails task 5 too


def test_query_parameters_round_trip() -> None:
    query = CaseQuery.parse({"model": ["a&b"], "at_least": ["0.5"], "below": ["nan"], "order": ["desc"],
                             "page": ["x"], "text": ["q" * 900]})
    assert query.model == "a&b" and query.at_least == 0.5 and query.below is None and query.descending
    assert query.page == 1 and len(query.text) == 500
    assert CaseQuery.parse({key: [value] for key, value in
                            (pair.split("=") for pair in query.params(page=3)[1:].split("&"))}).page == 3


def test_static_pages_link_to_each_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["view", "--static", "site"]) == 0
    site = tmp_path / "site"
    pages = sorted(path.relative_to(site).as_posix() for path in site.rglob("*.html"))
    assert {"index.html", "run/1/index.html", "run/2/case/11.html", "run/1/models/0/1.html",
            "compare/1/2.html"} <= set(pages)
    assert (site / "run/2/image/3/0").read_bytes() == png()  # the image a case may show, copied
    assert not (site / "run/2/image/3/1").exists() and not (site / "run/2/image/3/2").exists()
    for name in pages:
        page = (site / name).read_text(encoding="utf-8")
        assert_inert(page)
        assert 'http-equiv="Content-Security-Policy"' in page
        for link in links(page):
            target = (site / name).parent / link.split("?")[0]
            assert target.resolve().is_file(), f"{name} links to {link}"


def test_bench_view_says_what_it_cannot_find(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["view", "--no-open", "nowhere"]) == 2
    assert "nowhere: no such results file or folder" in capsys.readouterr().err


def test_hostile_text_constant_covers_every_probe() -> None:
    assert all(probe in HOSTILE for probe in (SCRIPT, IMAGE, QUOTES, LINK))


ODD_SHAPES: list[dict[str, object]] = [
    {"agent": ["not", "a", "mapping"]},
    {"agent": {"tool_calls": ["a string", 3, {"step": 1, "name": SCRIPT, "arguments": {"cmd": IMAGE}, "ok": False,
                                              "output": {"out": QUOTES}, "error": [LINK]}],
               "files": ["not", "a", "mapping"], "checks": SCRIPT, "budget": 7}},
    {"agent": {"tool_calls": [{"step": 1, "name": "write_file", "arguments": {"path": "a.py"}, "ok": True,
                               "output": "written"}],
               "files": {"a.py": f"print('{SCRIPT}')", "b.bin": {"bytes": 3}}, "checks": {"tests": True},
               "budget": {"steps": 1}}},
    {"messages": [{"role": SCRIPT, "content": 42}, {"role": "user", "content": {"odd": IMAGE}},
                  {"role": "user", "content": [SCRIPT, 5, {"type": "image", "file": ["x"], "media_type": 3}]}]},
    {"turns": [{"index": SCRIPT, "phase": IMAGE, "answer": QUOTES}], "error": {"kind": SCRIPT, "nested": [IMAGE]}},
    {"call_log": [{"purpose": SCRIPT, "error": {"message": IMAGE}, "cache": QUOTES}], "response": None},
]


@pytest.mark.parametrize("shape", ODD_SHAPES)
def test_a_case_of_any_shape_the_record_allows_gets_its_page(tmp_path: Path, shape: dict[str, object]) -> None:
    write_runs(tmp_path)
    results = tmp_path / "bench-results" / "runs" / "after" / "results.jsonl"
    line = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    line.update(shape, nodeid="suites/qa.yaml::odd[bad-run1]")
    with results.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")
    site = Site(find_runs([str(results)], tmp_path), tmp_path)
    index = site.indexes.get("1")
    assert index is not None and index.rows[-1].nodeid.endswith("odd[bad-run1]")
    response = site.respond(f"run/1/case/{len(index.rows) - 1}.html")
    assert response.status == 200
    assert_inert(response.body.decode())


def test_an_agents_steps_and_workspace_are_shown(tmp_path: Path) -> None:
    test_a_case_of_any_shape_the_record_allows_gets_its_page(tmp_path, ODD_SHAPES[2])
    site = Site(find_runs([str(tmp_path / "bench-results" / "runs" / "after")], tmp_path), tmp_path)
    page = site.respond("run/1/case/12.html").body.decode()
    assert "step 1 · write_file" in page and "<pre>written</pre>" in page
    assert "<code>a.py</code>" in page and "print(&#39;&lt;script&gt;" in page and "&#34;tests&#34;: true" in page


def test_lines_that_are_not_records_are_left_out_and_counted(tmp_path: Path) -> None:
    write_runs(tmp_path)
    results = tmp_path / "bench-results" / "runs" / "after" / "results.jsonl"
    with results.open("a", encoding="utf-8") as file:
        file.write('{"nodeid": "x", "run": NaN}\n' + "[" * 100 + "]" * 100 + "\n" + '{"nodeid": "torn"')
    site = Site(find_runs([str(results)], tmp_path), tmp_path)
    index = site.indexes.get("1")
    assert index is not None and len(index.rows) == 12
    assert len(index.skipped) == 3 and all(str(results) in why for why in index.skipped)


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1", True), ("localhost", True), ("LOCALHOST", True), ("[::1]", True), ("", False),
    ("attacker.example", False), ("127.0.0.1.attacker.example", False), ("127.0.0.1:1", False),
    ("127.0.0.1:notaport", False), ("[::1]:1", False),
])
def test_only_requests_addressed_to_this_server_are_answered(served: tuple[str, Path], host: str,
                                                             allowed: bool) -> None:
    port = served[0].rstrip("/").rsplit(":", 1)[1]
    response = httpx.get(served[0], headers={"Host": host})
    assert (response.status_code == 200) is allowed
    if allowed:
        assert httpx.get(served[0], headers={"Host": f"{host}:{port}"}).status_code == 200


def test_bench_view_serves_on_loopback_and_warns_about_another_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    calls: list[dict[str, object]] = []
    monkeypatch.setattr(command, "serve_view", lambda site, **options: calls.append(options))
    assert main(["view", "--no-open"]) == 0
    assert calls[-1]["host"] == "127.0.0.1" and calls[-1]["port"] == 0 and calls[-1]["open_browser"] is False
    assert "warning" not in capsys.readouterr().err
    assert main(["view", "--host", "0.0.0.0", "--port", "8123"]) == 0
    assert calls[-1]["host"] == "0.0.0.0" and calls[-1]["port"] == 8123 and calls[-1]["open_browser"] is True
    assert "warning: listening on 0.0.0.0: anyone who can reach it reads" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_that_is_not_one_is_refused_in_words(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["view", "--no-open", "--port", port])
    assert stopped.value.code == 2
    assert "expected a port number from 0 to 65535" in capsys.readouterr().err


def test_the_server_opens_the_browser_on_its_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_runs(tmp_path)
    opened = threading.Event()
    addresses: list[str] = []

    def open_browser(url: str) -> bool:
        addresses.append(url)
        opened.set()
        return True

    def serve_until_opened(self: ViewServer, poll_interval: float = 0.5) -> None:
        opened.wait(10)
        raise KeyboardInterrupt

    monkeypatch.setattr(webbrowser, "open", open_browser)
    monkeypatch.setattr(ViewServer, "serve_forever", serve_until_opened)
    said: list[str] = []
    site = Site(find_runs([str(tmp_path / "bench-results")], tmp_path / "bench-results"), tmp_path)
    serve_view(site, announce=said.append)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", addresses[0])
    assert said[0].startswith(f"bench view: serving 2 run(s) at {addresses[0]}") and said[-1] == "bench view: stopped"


def test_the_runs_page_judges_the_suites_quality_gates(tmp_path: Path) -> None:
    write_runs(tmp_path)
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "qa.yaml").write_text(
        "suite: qa\nmodels:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"
        "scorers:\n  - {name: C, type: contains, value: hi}\n"
        "quality_gates:\n  - pass_rate >= 0.6\n  - mean(C) >= 0.5\n", encoding="utf-8")
    site = Site(find_runs([str(tmp_path / "bench-results")], tmp_path / "bench-results"), tmp_path)
    page = site.respond("index.html").body.decode()
    # per model: good passes 5 of 6 cases (0.83), bad 2 of 6 ("before") or 3 of 6 ("after"): the pass rate
    # gate is broken by bad in both runs; C's mean is 0.33 / 0.5 for bad
    assert '<td class="l">0 hold, 2 broken, 0 skipped</td>' in page
    assert '<td class="l">1 hold, 1 broken, 0 skipped</td>' in page


def test_pages_of_cases_link_to_each_other_served_and_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_runs(tmp_path)
    monkeypatch.setattr(query_module, "PAGE_SIZE", 5)
    monkeypatch.setattr(static_module, "PAGE_SIZE", 5)
    sources = find_runs([str(tmp_path / "bench-results")], tmp_path / "bench-results")
    served = Site(sources, tmp_path)
    second = served.respond("run/1/index.html", "model=bad&page=2").body.decode()
    assert second.count('<tr data-case="') == 1 and "page 2 of 2" in second
    assert '<a rel="prev" href="index.html?model=bad">' in second  # page 1 is the default: left out
    written = Site(sources, tmp_path, static=True)
    write_static(written, tmp_path / "site")
    pages = [tmp_path / "site" / "run" / "1" / name for name in ("index.html", "page-2.html", "page-3.html")]
    numbers = [re.findall(r'<tr data-case="(\d+)"', page.read_text(encoding="utf-8")) for page in pages]
    assert [len(found) for found in numbers] == [5, 5, 2] and len({n for found in numbers for n in found}) == 12
    assert 'href="page-3.html"' in pages[1].read_text(encoding="utf-8")
    assert 'href="index.html"' in pages[1].read_text(encoding="utf-8")


def test_an_image_file_must_be_inside_a_root_after_its_links_are_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "run", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.png").write_bytes(png())
    (root / "link.png").symlink_to(outside / "secret.png")
    (root / "real.png").write_bytes(png())
    (root / "fake.png").write_bytes(b"<svg onload=alert(1)>")

    def part(file: str, media_type: str = "image/png", sha256: str | None = None) -> ImagePart:
        return ImagePart(0, "messages[0].content[0]", media_type, file, None, None, sha256)

    assert image_file(part("real.png"), [root]) == ((root / "real.png").resolve(), "image/png")
    assert image_file(part("link.png"), [root]) is None  # resolves outside
    assert image_file(part("../elsewhere/secret.png"), [root]) is None
    assert image_file(part(str(outside / "secret.png")), [root]) is None  # absolute, outside
    assert image_file(part("fake.png"), [root]) is None  # not what its media type says
    assert image_file(part("real.png", "image/svg+xml"), [root]) is None  # never served
    assert image_file(part("real.png", sha256="0" * 64), [root]) is None  # not the digest named
    assert image_file(part("real\0.png"), [root]) is None
