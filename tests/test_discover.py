"""Which files are suites, and which folders the search for them leaves out (as pytest's collection does)."""

from __future__ import annotations

from pathlib import Path

from bench_plugin.suite.discover import find_suites

SUITE = "models: {m: {provider: echo}}\ntasks:\n  - {id: t, prompt: hi}\n"


def write(path: Path, text: str = SUITE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_search_skips_what_pytest_does_not_collect(tmp_path: Path) -> None:
    wanted = [write(tmp_path / "suites" / "a.yaml"), write(tmp_path / "suites" / "deep" / "b.yml")]
    write(tmp_path / "suites" / "data.yaml", "rows: [1, 2]\n")  # YAML, not a suite
    for skipped in (".venv/lib/site-packages/pkg", "node_modules/pkg", "build", "dist", "pkg.egg", ".git"):
        write(tmp_path / skipped / "s.yaml")
    write(tmp_path / "env" / "pyvenv.cfg", "home = /usr/bin\n")  # a virtual environment by any name
    write(tmp_path / "env" / "lib" / "s.yaml")
    assert find_suites([tmp_path]) == sorted(wanted)
    # a project's own norecursedirs (in place of pytest's defaults, as in pytest), as the plugin passes them
    assert find_suites([tmp_path / "suites"], ["deep"]) == [wanted[0]]


def test_folders_and_files_named_are_searched_whatever_their_name(tmp_path: Path) -> None:
    hidden = write(tmp_path / ".bench" / "s.yaml")
    named = write(tmp_path / "build" / "data.yaml", "rows: []\n")  # named explicitly: taken as a suite
    assert find_suites([tmp_path / ".bench", named]) == [hidden, named]


def test_a_suite_found_by_walking_has_both_keys_every_suite_has(tmp_path: Path) -> None:
    suite = write(tmp_path / "a.yaml", "# a suite\nmodels:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n")
    write(tmp_path / "Taskfile.yml", "version: '3'\ntasks:\n  build: {cmds: [make]}\n")  # go-task's file
    write(tmp_path / "nested.yaml", "jobs:\n  tasks:\n    models: 1\n")  # keys, but not at the top
    assert find_suites([tmp_path]) == [suite]
