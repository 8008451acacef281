"""Results files, journals, leaderboards and cache rows are input: a hostile one is refused in words, never a crash.

Each variant below once ended in a traceback or an INTERNALERROR (OverflowError, RecursionError, a TypeError
deep in a report). Now ``bench report``, ``merge`` and ``audit`` leave the record out, naming the file, the
line and the field, and count it (report.md and summary.json too); a resumed run or --bench-rejudge moves the
line to results.rejected.jsonl, saying so (``test_hostile_results_runs.py``); the cache takes a hostile row as a
miss.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.calls.cache import DB_NAME, ResponseCache, decode_completion
from bench_plugin.cli import main
from bench_plugin.core import json_bounds
from bench_plugin.core.json_bounds import BoundsError, loads_bounded

GOLDEN = Path(__file__).parent / "golden" / "pairwise_two_cases.jsonl"
DEEP = "[" * 200_000 + "]" * 200_000


def golden_lines() -> list[str]:
    return GOLDEN.read_text(encoding="utf-8").splitlines()


def with_value(path: tuple[Any, ...], raw: str) -> str:
    """The first golden record with the value at ``path`` replaced by the JSON text ``raw``.

    ``raw`` may be JSON Python never writes: 1e400, a 400-digit number, NaN, a 200,000-deep array.
    """
    record = json.loads(golden_lines()[0])
    place = record
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = "@@VALUE@@"
    return json.dumps(record).replace('"@@VALUE@@"', raw)


VARIANTS = {
    "composite 1e400": (("composite",), "1e400", "composite"),
    "composite of 401 digits": (("composite",), "1" + "0" * 400, "composite"),
    "NaN tokens": (("usage", "output_tokens"), "NaN", "usage.output_tokens"),
    "call_log [1, 'x']": (("call_log",), '[1, "x"]', "call_log[0]"),
    "turns [1, 'x']": (("turns",), '[1, "x"]', "turns[0]"),
    "pairwise orders [1, 'x']": (("scores", "components", 0, "pairwise", "orders"), '[1, "x"]', "pairwise.orders"),
    "conversation 'hello'": (("conversation",), '"hello"', "conversation"),
    "conversation {}": (("conversation",), '{}', "conversation"),
    "conversation entries [1]": (("conversation",), '{"mode": "m", "participants": [], "entries": [1]}',
                                 "conversation.entries[0]"),
    "200,000-deep value": (("variables",), DEEP, "nested deeper than"),
    "4,301-digit count": (("usage", "input_tokens"), "9" * 4301, "out of range"),
}


def hostile_file(folder: Path, variant: str) -> Path:
    path, raw, _ = VARIANTS[variant]
    results = folder / "in.jsonl"
    results.write_text(with_value(path, raw) + "\n" + golden_lines()[1] + "\n", encoding="utf-8")
    return results


@pytest.mark.parametrize("command", ["report", "merge", "audit"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_hostile_record_is_left_out_naming_file_line_and_field_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, variant: str
) -> None:
    results = hostile_file(tmp_path, variant)
    args = [command, str(results)] + ([] if command == "audit" else ["-o", str(tmp_path / "out")])
    assert main(args) == 0
    captured = capsys.readouterr()
    assert f"{results}:1: not a case record this version can read" in captured.err, captured.err
    assert VARIANTS[variant][2] in captured.err and "1 record left out" in captured.err
    assert "Traceback" not in captured.out + captured.err
    if command != "audit":  # the other record is reported
        assert "1 records ->" in captured.out or "1 cases ->" in captured.out


@pytest.mark.parametrize("command", ["report", "merge", "audit"])
def test_the_records_left_out_are_counted_in_report_md_and_summary_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Said on stderr only, a record left out was missing from the reports with nothing there to say so."""
    good = golden_lines()
    lines = [good[0], with_value(("composite",), "1e400"), good[1], with_value(("variables",), DEEP)]
    results = tmp_path / "in.jsonl"
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main([command, str(results)] + ([] if command == "audit" else ["-o", str(out)])) == 0
    captured = capsys.readouterr()
    assert f"{results}:2: not a case record this version can read: composite" in captured.err, captured.err
    assert f"{results}:4: not a case record this version can read: variables: nested deeper" in captured.err
    if command == "audit":  # it writes nothing: its output says so
        assert "**2 records left out**" in captured.out, captured.out
        return
    assert "**2 records left out**" in (out / "report.md").read_text(encoding="utf-8")
    skipped = json.loads((out / "summary.json").read_text(encoding="utf-8"))["skipped_records"]
    assert skipped["count"] == 2 and [line.split(": ")[0] for line in skipped["lines"]] == \
        [f"{results}:2", f"{results}:4"]


def test_names_of_150_characters_make_reports_and_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [json.loads(line) for line in golden_lines()]
    for record in records:
        record["task"], record["suite"] = "t" * 150, "s" * 150
    results = tmp_path / "in.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["merge", str(results), "-o", str(tmp_path / "out")]) == 0, capsys.readouterr()


def test_a_hostile_leaderboard_stops_the_report_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench_plugin.report.leaderboard import load_board

    for text in [DEEP, '{"elo_ratings": {"m": 1e400}, "sessions": [], "model_history": {}}', '[1]',
                 '{"elo_ratings": {}, "sessions": [1], "model_history": {}}']:
        board = tmp_path / "leaderboard.json"
        board.write_text(text, encoding="utf-8")
        with pytest.raises(OSError, match="not a leaderboard this version can read") as caught:
            load_board(board)
        assert caught.value.filename == str(board)


@pytest.mark.parametrize("value", [
    '{"text": "x", "usage": {"output_tokens": ' + "9" * 400 + "}}",
    '{"text": "x", "latency_s": 1e400}',
    '{"text": "x", "raw": ' + DEEP + "}",
])
def test_a_hostile_cache_row_is_a_miss(tmp_path: Path, value: str) -> None:
    with pytest.raises(ValueError):
        decode_completion(value)
    (tmp_path / "c").mkdir()
    with sqlite3.connect(tmp_path / "c" / DB_NAME) as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT, provider TEXT, model TEXT, "
                   "created REAL, used REAL)")
        db.execute("INSERT INTO responses VALUES ('k', ?, 'p', 'm', 0, 0)", (value,))
    cache = ResponseCache(tmp_path / "c", "read")
    assert cache.get("k") is None
    cache.close()


def test_bounded_json_names_where_the_value_breaks_a_bound() -> None:
    assert loads_bounded('{"a": [1, {"b": 2.5}]}') == {"a": [1, {"b": 2.5}]}
    with pytest.raises(BoundsError, match=r"a\[1\]\.b: a whole number of 401 digits"):
        loads_bounded('{"a": [1, {"b": 1' + "0" * 400 + "}]}")
    with pytest.raises(BoundsError, match="nested deeper than 64"):
        loads_bounded("[" * 65 + "]" * 65)
    assert loads_bounded("[" * 64 + "]" * 64) is not None


def test_a_value_too_deep_for_json_itself_is_named_by_its_top_level_key() -> None:
    """The RecursionError of json says nowhere; the brackets are counted to name the field (texts' brackets aside)."""
    with pytest.raises(BoundsError, match=r"^deep: nested deeper than 64 levels$"):
        loads_bounded('{"note": "a \\"quoted\\" [[[ text", "deep": ' + DEEP + "}")
    with pytest.raises(BoundsError, match=r"^nested deeper than 64 levels$"):  # no key to name
        loads_bounded(DEEP)


@pytest.mark.parametrize("text", [
    '{"a": [1, {"b": 2.5}], "c": "x\\"[{"}', "[" * 64 + "]" * 64, "[" * 65 + "]" * 65, '{"n": NaN}', '[Infinity]',
    '{"n": 1e400}', '{"n": 1e15}', '{"n": 999999999999999.9}', "[" + "9" * 17 + "]", "[" + "9" * 5000 + "]",
    '{"deep": ' + "[" * 70 + "]" * 70 + ', "s": "]]]]"}', '"' + "[" * 80 + '"', '{"a": "\\\\"}', '[-9007199254740991]',
    '[9007199254740992]', '{"a": [{}, [], [[{"b": [null, true]}]]]}',
])
def test_the_one_pass_read_accepts_and_refuses_as_the_walk_does(text: str) -> None:
    """``loads_bounded`` reads a text plainly within bounds in one pass: the walk over ``json.loads`` decides alike."""
    try:
        expected: object = json_bounds.value_problem(json.loads(text)) or json.loads(text)
    except (RecursionError, ValueError):  # too deep for json itself, a number of more than 4,300 digits
        expected = "refused"
    try:
        found: object = loads_bounded(text)
    except BoundsError as exc:
        assert isinstance(expected, str), (text, exc)
    else:
        assert found == expected


@pytest.mark.parametrize("command", ["report", "merge", "gates"])
def test_a_record_cannot_make_bench_read_a_yaml_file_outside_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A record's ``path`` named the suite file read for aggregates, leaderboards and gates: any YAML file anywhere."""
    import bench_plugin.suite.sections as sections

    victim = tmp_path / "elsewhere" / "victim.yaml"
    victim.parent.mkdir()
    victim.write_text("suite: victim\n", encoding="utf-8")
    work = tmp_path / "work"
    (work / "suites").mkdir(parents=True)
    (work / "suites" / "own.yaml").write_text("suite: own\n", encoding="utf-8")
    monkeypatch.chdir(work)
    read: list[Path] = []
    real = sections.load_suite_file
    monkeypatch.setattr(sections, "load_suite_file", lambda file, **kw: read.append(file) or real(file, **kw))
    records = [json.loads(line) for line in golden_lines()]
    names = ["../elsewhere/victim.yaml", str(victim), "suites/own.yaml"]
    lines = []
    for index, name in enumerate(names):
        record = dict(records[index % 2], path=name, case_index=index)
        record["nodeid"] = f"{name}::case{index}"
        lines.append(json.dumps(record))
    (work / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = [command, "in.jsonl"] + (["-o", "out"] if command != "gates" else [])
    assert main(args) in (0, 1)
    captured = capsys.readouterr()
    assert set(read) == {work / "suites" / "own.yaml"}  # the suite under the folder is read; the others never
    for name in names[:2]:
        assert f"a record names the suite {name!r}, which is not a YAML file under" in captured.err, captured.err
    if command != "gates":  # the report is still written from every record
        assert "3 records ->" in captured.out or "3 cases ->" in captured.out, captured.out
        assert (work / "out" / "report.md").is_file()
