"""The agent's tools.

A fresh workspace per case, paths confined to it, the command allow-list and timeout, scripted answers, and
every failure turned into a tool result (never an exception).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.chat import ToolCall
from bench_plugin.core.errors import ToolFailure
from bench_plugin.core.transcript import ToolCallRecord
from bench_plugin.engines.agent.families import classify_command, classify_name, is_dangerous
from bench_plugin.engines.agent.toolbox import Toolbox
from bench_plugin.engines.agent.workspace import confine, create_workspace, remove_workspace, snapshot
from bench_plugin.suite.agent.spec import BUILTIN_DEFAULTS, ScriptedResponse, ToolSpec, WorkspaceSpec
from bench_plugin.suite.spec import CaseSpec, CompositeSpec


def builtin(kind: str, **extra: Any) -> ToolSpec:
    name, description, parameters = BUILTIN_DEFAULTS[kind]
    return ToolSpec(name=extra.pop("name", name), type=kind, description=description, parameters=parameters, **extra)


FORECAST = ToolSpec(
    name="forecast", type="scripted", description="", key="tasks[0].tools[3]",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    responses=(
        ScriptedResponse(when={"city": "^Lisbon$"}, result={"high_c": 24}),
        ScriptedResponse(when={"city": "^Oslo$"}, result="{{ args.city }} in {{ unit }}: 9"),
        ScriptedResponse(error="unknown city {{ args.city }}"),
    ),
)
TOOLS = (builtin("read_file"), builtin("write_file"), builtin("list_files"), builtin("search"),
         builtin("command", allow=("python3", "ls"), timeout_s=1.0), FORECAST)
CASE = CaseSpec(suite="s", path="s.yaml", task="t", model_name="m", model=None, run=1, messages=(), scorers=(),
                composite=CompositeSpec(), pass_threshold=1.0, variables={"unit": "celsius"})


@pytest.fixture
def root() -> Any:
    path = create_workspace(WorkspaceSpec(files={"src/app.py": "x = 1  # TODO: y\n", "README.md": "hello\n"}))
    yield path
    remove_workspace(path)


def call(root: Path, name: str, arguments: Any, tools: tuple[ToolSpec, ...] = TOOLS) -> ToolCallRecord:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return asyncio.run(Toolbox(tools, root, CASE).call(ToolCall("c1", name, text), step=1, turn=1, time_left_s=60))


def test_each_workspace_is_fresh_and_isolated() -> None:
    spec = WorkspaceSpec(files={"a.txt": "start"})
    first, second = create_workspace(spec), create_workspace(spec)
    try:
        (first / "a.txt").write_text("changed")
        (first / "new.txt").write_text("only here")
        assert first != second
        assert (second / "a.txt").read_text() == "start" and not (second / "new.txt").exists()
    finally:
        remove_workspace(first)
        remove_workspace(second)
    assert not first.exists() and not second.exists()


def test_workspace_copies_folders_and_files_then_inline_files_win(tmp_path: Path) -> None:
    (tmp_path / "pack" / "docs").mkdir(parents=True)
    (tmp_path / "pack" / "docs" / "a.md").write_text("from the pack")
    (tmp_path / "single.txt").write_text("one file")
    spec = WorkspaceSpec(
        copies=((tmp_path / "pack", ""), (tmp_path / "single.txt", ""), (tmp_path / "pack", "vendor/pack")),
        files={"docs/a.md": "inline wins"},
    )
    root = create_workspace(spec)
    try:
        files = {entry["path"]: entry.get("text") for entry in snapshot(root)}
        assert files == {"docs/a.md": "inline wins", "single.txt": "one file", "vendor/pack/docs/a.md": "from the pack"}
    finally:
        remove_workspace(root)


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../x", "link/secret"])
def test_paths_outside_the_workspace_are_refused(root: Path, path: str) -> None:
    (root / "link").symlink_to(root.parent)
    with pytest.raises(ToolFailure, match="outside the workspace"):
        confine(root, path)
    assert confine(root, "src/../README.md") == root / "README.md"


def test_file_tools_read_write_list_and_search(root: Path) -> None:
    assert call(root, "write_file", {"path": "notes/a.md", "content": "é\nTODO: z\n"}).output == (
        "wrote 11 bytes to notes/a.md")
    assert call(root, "read_file", {"path": "notes/a.md"}).output == "é\nTODO: z\n"
    assert call(root, "list_files", {}).output.splitlines() == ["README.md", "notes/a.md", "src/app.py"]
    assert call(root, "list_files", {"path": "src"}).output == "src/app.py"
    assert call(root, "search", {"pattern": "TODO"}).output.splitlines() == [
        "notes/a.md:2: TODO: z", "src/app.py:1: x = 1  # TODO: y"]
    assert call(root, "search", {"pattern": "nothing"}).output == "(no matches)"


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("delete_all", {},
         "there is no tool named 'delete_all'; "
         "tools: read_file, write_file, list_files, search, run_command, forecast"),
        ("read_file", "{not json", "bad arguments: not valid JSON"),
        ("read_file", "[1]", "bad arguments: expected a JSON object, got list"),
        ("read_file", {}, "bad arguments for read_file: 'path' is a required property"),
        ("write_file", {"path": "a", "content": 3}, "bad arguments for write_file: content: 3 is not of type 'string'"),
        ("read_file", {"path": "../../etc/passwd"}, "path '../../etc/passwd' is outside the workspace"),
        ("read_file", {"path": "missing.txt"}, "no such file: 'missing.txt'"),
        ("read_file", {"path": "src"}, "'src' is a folder, not a file"),
        ("search", {"pattern": "TODO("}, "the pattern /TODO(/ is not a valid regular expression"),
        ("run_command", {"command": "rm -rf /"}, "'rm' is not allowed; programs you may run: python3, ls"),
        ("run_command", {"command": "python3 'unbalanced"}, "cannot split the command"),
        ("forecast", {"city": "Paris"}, "unknown city Paris"),
    ],
)
def test_a_failed_call_is_a_tool_result_and_a_record_entry(root: Path, name: str, arguments: Any, error: str) -> None:
    record = call(root, name, arguments)
    assert not record.ok
    assert record.error is not None and record.error.startswith(error)
    assert record.output == f"error: {record.error}"


def test_command_runs_argv_in_the_workspace_and_reports_the_exit_code(root: Path) -> None:
    ok = call(root, "run_command", {"command": "python3 -c \"import os; print(os.listdir('.'))\""})
    assert ok.ok and ok.output.startswith("exit code: 0\nstdout:\n") and "README.md" in ok.output
    assert (ok.family, ok.mutating, ok.command) == ("execute", False, ok.arguments["command"])
    failed = call(root, "run_command", {"command": "python3 -c \"raise SystemExit('boom')\""})
    assert not failed.ok and failed.error == "exit code 1: boom"
    shell = call(root, "run_command", {"command": "ls | wc"})  # no shell: '|' is a file name for ls
    where = call(root, "run_command",
                 {"command": "python3 -c \"import os; print(os.path.abspath('src/app.py'), os.getcwd())\""})
    assert where.output.splitlines()[2] == "src/app.py ."  # the temporary path never reaches a record
    assert not shell.ok and "exit code" in (shell.error or "")


def test_command_timeout_stops_the_program(root: Path) -> None:
    record = call(root, "run_command",
                  {"command": "python3 -c \"import time; print('started', flush=True); time.sleep(30)\""})
    assert not record.ok and record.error is not None
    assert record.error.startswith("'python3' timed out after 1 s and was stopped") and "started" in record.output
    assert record.duration_s < 10


def test_command_environment_holds_no_secret(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_TEST_SECRET_KEY", "sk-should-not-leak")
    record = call(root, "run_command", {"command": "python3 -c \"import os; print(sorted(os.environ))\""})
    assert record.ok and "BENCH_TEST_SECRET_KEY" not in record.output and "sk-should" not in record.output
    assert os.environ["BENCH_TEST_SECRET_KEY"]  # untouched for the caller


def test_scripted_tool_answers_by_argument_with_data_or_templates(root: Path) -> None:
    assert call(root, "forecast", {"city": "Lisbon"}).output == '{"high_c": 24}'
    record = call(root, "forecast", {"city": "Oslo"})
    assert record.ok and record.output == "Oslo in celsius: 9"
    unanswered = ToolSpec(name="lookup", type="scripted", description="", parameters={"type": "object"},
                          responses=(ScriptedResponse(when={"id": "^1$"}, result="one"),))
    record = call(root, "lookup", {"id": 2}, tools=(unanswered,))
    assert not record.ok and record.error == 'lookup has no answer for these arguments: {"id": 2}'


def test_calls_are_annotated_with_family_change_and_target(root: Path) -> None:
    write = call(root, "write_file", {"path": "a.txt", "content": "x"})
    assert (write.family, write.mutating, write.target) == ("edit", True, "a.txt")
    read = call(root, "read_file", {"path": "a.txt"})
    assert (read.family, read.mutating, read.target) == ("read", False, "a.txt")
    archive = ToolSpec(name="archive_logs", type="scripted", description="", parameters={"type": "object"},
                       family="edit", responses=(ScriptedResponse(result="ok"),))
    assert call(root, "archive_logs", {}, tools=(archive,)).mutating is True


@pytest.mark.parametrize(
    ("command", "expected"),
    [("python3 -m pytest -q", ("execute", False)), ("cat a.py", ("read", False)),
     ("grep -rn TODO .", ("search", False)),
     ("ls -la", ("search", False)), ("rm -rf build", ("edit", True)), ("python3 gen.py > out.txt", ("edit", True)),
     ("sed -i s/a/b/ f", ("edit", True)), ("git reset --hard", ("edit", True))],
)
def test_commands_are_classified_by_their_text(command: str, expected: tuple[str, bool]) -> None:
    assert classify_command(command) == expected


def test_tools_are_classified_by_name_in_clawbench_order() -> None:
    assert classify_name("memory_store") == ("memory", True)
    assert classify_name("memory_search") == ("memory", False)
    assert classify_name("create_todo") == ("plan", False)
    assert classify_name("patch_file") == ("edit", True)
    assert classify_name("bash", "pytest -q") == ("execute", False)
    assert classify_name("frobnify") == ("unknown", False)
    assert is_dangerous("sudo rm -rf /") and is_dangerous("git checkout -- .") and not is_dangerous("rm build.log")
