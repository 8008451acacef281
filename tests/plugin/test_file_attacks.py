"""The attacks of issue 11, end to end: a suite cannot read a file outside its folder and send it to a model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SECRET_TEXT = "the secret on this machine"
ECHO = "models:\n  parrot: {provider: echo}\n"


def literal(text: str) -> str:
    """``*text*`` for fnmatch, its brackets matching themselves."""
    return "*" + re.sub(r"([][*?])", r"[\1]", text) + "*"


@pytest.fixture
def secret(pytester: pytest.Pytester) -> Path:
    """``private/secret.txt`` beside ``suites/``: on the machine, outside the suite's folder."""
    path = pytester.path / "private" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET_TEXT)
    (pytester.path / "suites").mkdir()
    return path


def outputs(pytester: pytest.Pytester) -> str:
    folder = pytester.path / "bench-results"
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()) if folder.exists() else ""


def run(pytester: pytest.Pytester, suite: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"suites/leak": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", *args)
    assert SECRET_TEXT not in result.stdout.str() or "--bench-allow-path" in args
    return result


def test_an_include_of_a_linked_file_fails_that_case_and_sends_nothing(
    pytester: pytest.Pytester, secret: Path
) -> None:
    (pytester.path / "suites" / "notes.txt").symlink_to(secret)
    suite = ECHO + ("tasks:\n  - {id: leak, prompt: \"Summarise: {% include 'notes.txt' %}\"}\n"
                    "  - {id: fine, prompt: hi}\n")
    result = run(pytester, suite)
    result.assert_outcomes(passed=1, failed=1)
    folder = (pytester.path / "suites").resolve()
    result.stdout.fnmatch_lines([
        literal(f"suites/leak.yaml:4: tasks[0].prompt: template file notes.txt leads outside the suite's folder "
                f"({folder}) through a symbolic link, to {secret.resolve()}"),
        literal(f"hint: if you trust this suite with {secret.parent.resolve()}, allow it with --bench-allow-path "
                f"{secret.parent.resolve()} (or list it under the ini option bench_allow_paths)"),
    ])
    assert SECRET_TEXT not in outputs(pytester)


@pytest.mark.skipif(not Path("/etc/passwd").is_file(), reason="needs /etc/passwd")
def test_the_issues_own_attack_on_etc_passwd_is_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "notes.txt").symlink_to("/etc/passwd")
    result = run(pytester, ECHO + "tasks:\n  - {id: leak, prompt: \"{% include 'notes.txt' %}\"}\n")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*template file notes.txt leads outside the suite's folder*to /etc/passwd*",
                                 "*allow it with --bench-allow-path /etc *"])
    assert "root:" not in outputs(pytester)


def test_the_user_may_allow_the_folder_with_the_option(pytester: pytest.Pytester, secret: Path) -> None:
    (pytester.path / "suites" / "notes.txt").symlink_to(secret)
    result = run(pytester, ECHO + "tasks:\n  - {id: read, prompt: \"{% include 'notes.txt' %}\"}\n",
                 "--bench-allow-path", "private")
    result.assert_outcomes(passed=1)
    assert SECRET_TEXT in outputs(pytester)


def test_the_user_may_allow_the_folder_in_the_ini_file(pytester: pytest.Pytester, secret: Path) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nbench_allow_paths = private\n")
    (secret.parent / "rows.jsonl").write_text('{"q": "from the allowed folder"}\n')
    suite = ECHO + "tasks:\n  - id: read\n    dataset: {file: ../private/rows.jsonl}\n    prompt: '{{ q }}'\n"
    run(pytester, suite).assert_outcomes(passed=1)
    assert "from the allowed folder" in outputs(pytester)


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("    prompt_file: prompts/secret.txt\n",
         "suites/leak.yaml:5: tasks[0].prompt_file: template file prompts/secret.txt leads outside the suite's folder"),
        ("    dataset: {file: ABSOLUTE, format: jsonl}\n    prompt: '{{ row }}'\n",
         "suites/leak.yaml:5: tasks[0].dataset: file ABSOLUTE is outside the suite's folder"),
        ("    dataset: {file: ../../../../../../../../../ABSOLUTE, format: jsonl}\n    prompt: '{{ row }}'\n",
         "suites/leak.yaml:5: tasks[0].dataset: file ../../../../../../../../../ABSOLUTE is outside the suite's "
         "folder"),
        ("    prompt: go\n    tools: [read_file]\n    workspace: {copy: [ABSOLUTE]}\n",
         "suites/leak.yaml:7: tasks[0].workspace.copy[0]: ABSOLUTE is outside the suite's folder"),
        ("    prompt: go\n    tools: [read_file]\n    workspace: {copy: [prompts]}\n",
         "suites/leak.yaml:7: tasks[0].workspace.copy[0]: prompts leads outside the suite's folder"),
    ],
)
def test_every_reader_obeys_the_same_rule(pytester: pytest.Pytester, secret: Path, task: str, expected: str) -> None:
    (pytester.path / "suites" / "prompts").symlink_to(secret.parent)  # a linked folder
    absolute = str(secret).lstrip("/")
    def place(text: str) -> str:
        return text.replace("/ABSOLUTE", "/" + absolute).replace("ABSOLUTE", str(secret))

    result = run(pytester, ECHO + "tasks:\n  - id: leak\n" + place(task))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([literal(place(expected)), "*allow it with --bench-allow-path *"])
    assert SECRET_TEXT not in outputs(pytester)


def test_a_replay_file_outside_the_folder_fails_that_model(pytester: pytest.Pytester, secret: Path) -> None:
    (secret.parent / "answers.jsonl").write_text(f'{{"model": "r", "task": "t", "response": "{SECRET_TEXT}"}}\n')
    suite = ("models:\n  r: {provider: replay, replay: {file: ../private/answers.jsonl}}\n  parrot: {provider: echo}\n"
             "tasks:\n  - {id: t, prompt: hi}\n")
    result = run(pytester, suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([literal("suites/leak.yaml:2: models.r.replay.file: ../private/answers.jsonl is "
                                         "outside the suite's folder")])
    assert SECRET_TEXT not in outputs(pytester)


def test_a_data_dir_outside_the_folder_stops_the_file(pytester: pytest.Pytester, secret: Path) -> None:
    suite = "data_dir: /\n" + ECHO + "tasks:\n  - id: t\n    dataset: {file: etc/passwd}\n    prompt: x\n"
    result = run(pytester, suite)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*suites/leak.yaml:1: data_dir: / is outside the suite's folder*",
                                 "*allow it with --bench-allow-path / *"])


def test_a_folder_that_does_not_exist_is_a_usage_error(pytester: pytest.Pytester, secret: Path) -> None:
    result = run(pytester, ECHO + "tasks:\n  - {id: t, prompt: x}\n", "--bench-allow-path", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-allow-path: no such file or folder: *nowhere*"])


def test_the_allowed_folders_reach_every_xdist_worker(pytester: pytest.Pytester, secret: Path) -> None:
    (pytester.path / "suites" / "notes.txt").symlink_to(secret)
    tasks = "".join(f"  - {{id: t{i}, prompt: \"{{% include 'notes.txt' %}}\"}}\n" for i in range(4))
    suite = ECHO + "tasks:\n" + tasks
    pytester.makefile(".yaml", **{"suites/leak": suite})
    pytester.runpytest_subprocess("suites", "-n", "2", "-p", "no:cacheprovider").assert_outcomes(failed=4)
    pytester.runpytest_subprocess("suites", "-n", "2", "-p", "no:cacheprovider", "--bench-allow-path",
                                  "private").assert_outcomes(passed=4)
