"""A suite reads only inside its folder (and folders the user allows), links resolved; it sends only allowed keys."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench_plugin.core.endpoints import PRESETS, ProviderSpec
from bench_plugin.core.errors import CaseError, SuiteError
from bench_plugin.engines.agent.workspace import create_workspace
from bench_plugin.providers import anthropic, openai_compat
from bench_plugin.suite.agent.spec import WorkspaceSpec
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.datasets import load_dataset
from bench_plugin.suite.expand import ExpandOptions, expand_suite
from bench_plugin.suite.keys import DEFAULT_BASE_URLS, PRESET_KEY_HOSTS, check_key
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.spec import CaseSpec, SuiteSpec
from bench_plugin.suite.templates import TemplateRenderer

SECRET_TEXT = "root:x:0:0:the secret"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``suites/`` (the suite's folder) and ``private/secret.txt`` beside it."""
    suites, private = tmp_path / "suites", tmp_path / "private"
    suites.mkdir()
    private.mkdir()
    (private / "secret.txt").write_text(SECRET_TEXT)
    (private / "rows.jsonl").write_text('{"q": "leaked"}\n')
    return suites, private


def build(text: str, suites: Path, **options: object) -> SuiteSpec:
    path = suites / "demo.yaml"
    path.write_text(text)
    loaded = load_suite_text(text, path=path, display_path="suites/demo.yaml")
    return build_suite(loaded, BuildOptions(**options))  # type: ignore[arg-type]


def expand(text: str, suites: Path, models: tuple[str, ...] | None = None, **options: object) -> list[CaseSpec]:
    return expand_suite(build(text, suites, **options), ExpandOptions(models=models))


ECHO = "models:\n  a: {provider: echo}\n"


# --- the rule: SuiteFolders.confine -------------------------------------------------------------------


def test_a_path_inside_the_suite_folder_is_resolved(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    (suites / "data").mkdir()
    (suites / "data" / "a.txt").write_text("a")
    assert SuiteFolders.of(suites).confine("data/../data/a.txt") == (suites / "data" / "a.txt").resolve()


@pytest.mark.parametrize("name", ["/etc/passwd", "../private/secret.txt", "data/../../private/secret.txt"])
def test_absolute_and_climbing_paths_are_refused_with_the_option_that_allows_them(
    layout: tuple[Path, Path], name: str
) -> None:
    suites, _ = layout
    with pytest.raises(CaseError) as info:
        SuiteFolders.of(suites).confine(name, path="suites/demo.yaml", key="tasks[0].dataset", line=4)
    error = info.value
    assert error.message == f"{name} is outside the suite's folder ({suites.resolve()})"
    assert str(error).startswith("suites/demo.yaml:5: tasks[0].dataset: ")
    assert error.hint is not None and "allow it with --bench-allow-path " in error.hint


def test_a_link_inside_the_folder_is_followed_before_the_check(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "notes.txt").symlink_to(private / "secret.txt")
    (suites / "linked").symlink_to(private)
    folders = SuiteFolders.of(suites)
    for name in ("notes.txt", "linked/secret.txt"):
        with pytest.raises(CaseError, match=r"leads outside the suite's folder .* through a symbolic link, to "):
            folders.confine(name)
    with pytest.raises(CaseError) as info:
        folders.confine("notes.txt")
    assert info.value.hint == (f"if you trust this suite with {private.resolve()}, allow it with --bench-allow-path "
                               f"{private.resolve()} (or list it under the ini option bench_allow_paths)")


def test_a_folder_the_user_allows_may_be_read(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "notes.txt").symlink_to(private / "secret.txt")
    folders = SuiteFolders.of(suites, [private])
    assert folders.confine("notes.txt") == (private / "secret.txt").resolve()
    assert folders.confine(str(private / "secret.txt")) == (private / "secret.txt").resolve()
    with pytest.raises(CaseError, match=r"outside the suite's folder .* and the folders allowed by --bench-allow-path"):
        folders.confine("/etc/passwd")


def test_a_link_loop_is_an_error_not_a_hang(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    (suites / "loop").symlink_to(suites / "loop")
    with pytest.raises(CaseError, match="loop cannot be resolved"):
        SuiteFolders.of(suites).confine("loop")


# --- templates: includes, prompt_file, system_file, judge prompt files --------------------------------


def test_an_include_through_a_link_is_refused(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "notes.txt").symlink_to(private / "secret.txt")
    renderer = TemplateRenderer(suites, "suites/demo.yaml")
    with pytest.raises(CaseError) as info:
        renderer.render("Summarise: {% include 'notes.txt' %}", {}, key="tasks[0].prompt", line=3)
    assert str(info.value).startswith(
        "suites/demo.yaml:4: tasks[0].prompt: template file notes.txt leads outside the suite's folder"
    )
    assert "--bench-allow-path" in str(info.value)


def test_a_template_file_in_a_linked_folder_is_refused(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "prompts").symlink_to(private)
    renderer = TemplateRenderer(suites, "suites/demo.yaml")
    with pytest.raises(CaseError, match=r"template file prompts/secret\.txt leads outside"):
        renderer.render_file("prompts/secret.txt", {}, key="tasks[0].prompt_file", line=3)
    with pytest.raises(CaseError, match=r"template file prompts/secret\.txt leads outside"):
        renderer.check("prompts/secret.txt", from_file=True, key="tasks[0].prompt_file", line=3)


def test_includes_still_work_inside_the_folder_and_through_allowed_links(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "rules.j2").write_text("be kind")
    (suites / "notes.txt").symlink_to(private / "secret.txt")
    (suites / "rules_link.j2").symlink_to(suites / "rules.j2")
    assert TemplateRenderer(suites).render("{% include 'rules_link.j2' %}", {}) == "be kind"
    allowed = TemplateRenderer(suites, allowed=(private.resolve(),))
    assert allowed.render("{% include 'notes.txt' %}", {}) == SECRET_TEXT


def test_a_prompt_file_through_a_link_fails_its_case_at_its_line(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "notes.txt").symlink_to(private / "secret.txt")
    (case,) = expand(ECHO + "tasks:\n  - id: t\n    prompt_file: notes.txt\n", suites)
    assert str(case.problem).startswith("suites/demo.yaml:5: tasks[0].prompt_file: template file notes.txt leads")
    assert all(SECRET_TEXT not in m.content for m in case.messages)


@pytest.mark.parametrize("written", ["schema.json", "../private/schema.json", "{file: schema.json}"])
def test_an_output_schema_file_outside_the_folder_or_through_a_link_fails_its_case(
    layout: tuple[Path, Path], written: str
) -> None:
    suites, private = layout
    (private / "schema.json").write_text('{"type": "object", "description": "' + SECRET_TEXT + '"}')
    (suites / "schema.json").symlink_to(private / "schema.json")
    (case,) = expand(ECHO + f"tasks:\n  - id: t\n    prompt: hi\n    output_schema: {written}\n", suites)
    assert str(case.problem).startswith("suites/demo.yaml:6: tasks[0].output_schema")
    assert "outside" in str(case.problem) or "leads" in str(case.problem)
    assert case.output_schema is None


# --- datasets and data_dir ------------------------------------------------------------------------------


@pytest.mark.parametrize("file", ["/etc/passwd", "../private/rows.jsonl", "../../../../../../etc/passwd"])
def test_a_dataset_outside_the_folder_fails_its_cases_at_the_dataset_line(layout: tuple[Path, Path], file: str) -> None:
    suites, _ = layout
    text = ECHO + f"tasks:\n  - id: t\n    dataset: {{file: '{file}', format: jsonl}}\n    prompt: '{{{{ q }}}}'\n"
    (case,) = expand(text, suites)
    assert str(case.problem).startswith(f"suites/demo.yaml:5: tasks[0].dataset: file {file} is outside")
    assert case.problem is not None and "--bench-allow-path" in (case.problem.hint or "")


def test_a_join_file_outside_the_folder_is_refused(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "rows.jsonl").write_text('{"q": "x"}\n')
    with pytest.raises(CaseError, match=r"join file \.\./private/rows.jsonl is outside the suite's folder"):
        load_dataset(suites, {"file": "rows.jsonl", "join": [{"file": "../private/rows.jsonl", "key": "q",
                                                                 "fields": {"r": "q"}}]})
    rows = load_dataset(suites, {"file": "../private/rows.jsonl"}, SuiteFolders.of(suites, [private]))
    assert rows == [{"q": "leaked"}]


def test_a_dataset_the_user_allows_is_read(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    text = ECHO + "tasks:\n  - id: t\n    dataset: {file: ../private/rows.jsonl}\n    prompt: '{{ q }}'\n"
    (case,) = expand(text, suites, allowed_paths=(private,))
    assert case.problem is None and case.messages[-1].content == "leaked"


@pytest.mark.parametrize("data_dir", ["/", "..", "../private"])
def test_a_data_dir_outside_the_folder_stops_the_file_at_its_line(layout: tuple[Path, Path], data_dir: str) -> None:
    suites, _ = layout
    with pytest.raises(SuiteError) as info:
        build(f"data_dir: '{data_dir}'\n" + ECHO + "tasks:\n  - {id: t, prompt: x}\n", suites)
    assert str(info.value).startswith(f"suites/demo.yaml:1: data_dir: {data_dir} is outside the suite's folder")
    assert not isinstance(info.value, CaseError)


def test_a_data_dir_inside_the_folder_still_works(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    (suites / "data").mkdir()
    (suites / "data" / "rows.jsonl").write_text('{"q": "fine"}\n')
    text = "data_dir: data\n" + ECHO + "tasks:\n  - id: t\n    dataset: {file: rows.jsonl}\n    prompt: '{{ q }}'\n"
    (case,) = expand(text, suites)
    assert case.problem is None and case.messages[-1].content == "fine"


# --- replay files ---------------------------------------------------------------------------------------


def test_a_replay_file_outside_the_folder_is_a_problem_of_that_model(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "answers.jsonl").symlink_to(private / "rows.jsonl")
    text = ("models:\n  r: {provider: replay, replay: {file: /etc/passwd}}\n"
            "  s: {provider: replay, replay: {file: answers.jsonl}}\n  a: {provider: echo}\n"
            "tasks:\n  - {id: t, prompt: x}\n")
    suite = build(text, suites)
    assert set(suite.models) == {"a"}
    assert str(suite.model_problems["r"]).startswith("suites/demo.yaml:2: models.r.replay.file: /etc/passwd is outside")
    assert "answers.jsonl leads outside the suite's folder" in str(suite.model_problems["s"])


def test_a_providers_replay_file_outside_the_folder_fails_its_models(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    text = ("providers:\n  rec: {type: replay, replay: {file: ../private/rows.jsonl}}\n"
            "models:\n  r: {provider: rec}\ntasks:\n  - {id: t, prompt: x}\n")
    (case,) = expand(text, suites)
    assert str(case.problem).startswith("suites/demo.yaml:2: providers.rec.replay.file: ../private/rows.jsonl is")


def test_a_replay_file_inside_the_folder_is_resolved_for_the_provider(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    (suites / "answers.jsonl").write_text("")
    suite = build("models:\n  r: {provider: replay, replay: {file: answers.jsonl}}\ntasks:\n  - {id: t, prompt: x}\n",
                  suites)
    assert suite.models["r"].options["replay"]["file"] == str((suites / "answers.jsonl").resolve())


# --- agent workspace copies -----------------------------------------------------------------------------

AGENT = ECHO + "tasks:\n  - id: t\n    prompt: go\n    tools: [read_file]\n    workspace: {copy: [COPY]}\n"


@pytest.mark.parametrize("copy", ["/etc", "../private/secret.txt", "{from: /etc/passwd, to: p}"])
def test_a_workspace_copy_outside_the_folder_fails_the_task(layout: tuple[Path, Path], copy: str) -> None:
    suites, _ = layout
    (case,) = expand(AGENT.replace("COPY", copy), suites)
    assert str(case.problem).startswith("suites/demo.yaml:7: tasks[0].workspace.copy[0]: ")
    assert "is outside the suite's folder" in str(case.problem) and "--bench-allow-path" in str(case.problem)


def test_a_copied_folder_holding_a_link_out_fails_the_task(layout: tuple[Path, Path]) -> None:
    suites, private = layout
    (suites / "assets").mkdir()
    (suites / "assets" / "ok.txt").write_text("fine")
    (suites / "assets" / "passwd").symlink_to(private / "secret.txt")
    (case,) = expand(AGENT.replace("COPY", "assets"), suites)
    assert "tasks[0].workspace.copy[0]: assets/passwd leads outside the suite's folder" in str(case.problem)


def test_a_copied_folder_with_a_link_back_up_is_refused(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    (suites / "assets").mkdir()
    (suites / "assets" / "up").symlink_to(suites)
    (case,) = expand(AGENT.replace("COPY", "assets"), suites)
    assert "assets/up is a link back to a folder that holds it" in str(case.problem)


def test_a_copy_checks_links_again_when_the_workspace_is_made(
    layout: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites, private = layout
    (suites / "assets").mkdir()
    (suites / "assets" / "passwd").symlink_to(private / "secret.txt")  # a link made after the suite was read
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    spec = WorkspaceSpec(copies=(((suites / "assets").resolve(), ""),), readable=(suites.resolve(),))
    with pytest.raises(CaseError, match=r"workspace copy: .*passwd leads to .*secret\.txt, outside the folders"):
        create_workspace(spec)
    single = WorkspaceSpec(copies=(((suites / "assets" / "passwd"), "p"),), readable=(suites.resolve(),))
    with pytest.raises(CaseError, match="outside the folders the suite may read"):
        create_workspace(single)
    assert list(temp.iterdir()) == [], "a refused copy leaves no workspace behind"


# --- keys -----------------------------------------------------------------------------------------------


def test_the_presets_keys_belong_to_their_own_hosts() -> None:
    assert PRESET_KEY_HOSTS == {"OPENAI_API_KEY": "api.openai.com", "OPENROUTER_API_KEY": "openrouter.ai",
                                "ANTHROPIC_API_KEY": "api.anthropic.com"}
    assert DEFAULT_BASE_URLS["openai_compatible"] == DEFAULT_BASE_URLS["openai"] == openai_compat.DEFAULT_BASE_URL
    assert DEFAULT_BASE_URLS["anthropic"] == anthropic.DEFAULT_BASE_URL
    for preset in PRESETS.values():
        assert check_key(preset, allowed=(), user_url=False) is None


@pytest.mark.parametrize(
    "url",
    ["https://openrouter.ai/api/v1", "http://api.openai.com/v1", "https://api.openai.com.evil.test/v1",
     "https://api.openai.com@evil.test/v1", "https://api.openai.com:8443/v1", "https://API.OPENAI.COM./v1"],
)
def test_a_presets_key_sent_elsewhere_is_refused(url: str) -> None:
    spec = ProviderSpec("mine", "openai_compatible", url, "OPENAI_API_KEY")
    problem = check_key(spec, allowed=(), user_url=False, path="suites/demo.yaml", key="providers.mine.api_key_env")
    assert problem is not None
    assert problem.message == f"OPENAI_API_KEY is the key of api.openai.com, and the suite would send it to {url}"
    assert problem.hint == (f"to send it there, give the URL yourself (--bench-base-url mine={url}) or allow the "
                            "variable with --bench-allow-key-env OPENAI_API_KEY (or list it under the ini option "
                            "bench_allow_key_env)")


def test_a_presets_key_may_go_to_its_host_or_where_the_user_points_it() -> None:
    assert check_key(ProviderSpec("mine", "openai_compatible", "https://api.openai.com/v1/", "OPENAI_API_KEY"),
                     allowed=(), user_url=False) is None
    assert check_key(ProviderSpec("mine", "openai_compatible", None, "OPENAI_API_KEY"), allowed=(),
                     user_url=False) is None  # the type's default is api.openai.com
    assert check_key(ProviderSpec("mine", "anthropic", None, "OPENAI_API_KEY"), allowed=(), user_url=False) is not None
    assert check_key(ProviderSpec("mine", "openai_compatible", "http://127.0.0.1:9/v1", "OPENAI_API_KEY"),
                     allowed=(), user_url=True) is None
    assert check_key(ProviderSpec("mine", "openai_compatible", "http://127.0.0.1:9/v1", "OPENAI_API_KEY"),
                     allowed=("OPENAI_API_KEY",), user_url=False) is None


def test_any_other_variable_needs_the_users_word() -> None:
    spec = ProviderSpec("mine", "openai_compatible", "http://127.0.0.1:9/v1", "UNRELATED_SECRET")
    for user_url in (False, True):
        problem = check_key(spec, allowed=(), user_url=user_url)
        assert problem is not None and problem.message == (
            "the suite would send the environment variable UNRELATED_SECRET to http://127.0.0.1:9/v1; "
            "a suite may only send key variables you allow")
        assert problem.hint == ("if you trust this suite with UNRELATED_SECRET, allow it with --bench-allow-key-env "
                                "UNRELATED_SECRET (or list it under the ini option bench_allow_key_env)")
    assert check_key(spec, allowed=("UNRELATED_SECRET",), user_url=False) is None
    custom = ProviderSpec("mine", "my_type", None, "OPENAI_API_KEY")
    problem = check_key(custom, allowed=(), user_url=False)
    assert problem is not None and "the default endpoint of provider type 'my_type'" in problem.message


KEYED = ("providers:\n  local: {type: openai_compatible, base_url: 'http://127.0.0.1:9/v1', api_key_env: VAR}\n"
         "  openai: {type: openai_compatible, base_url: 'http://127.0.0.1:9/v1', api_key_env: OPENAI_API_KEY}\n"
         "models:\n  m: {provider: local}\n  a: {provider: echo}\n"
         "judges:\n  j: {provider: local}\n"
         "tasks:\n  - {id: t, prompt: x}\n")


def test_a_key_problem_fails_the_providers_models_at_its_line_before_any_call(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    suite = build(KEYED.replace("VAR", "UNRELATED_SECRET"), suites)
    assert set(suite.models) == {"a"}
    for problems in (suite.model_problems, suite.judge_problems):
        assert str(problems.get("m") or problems["j"]).startswith(
            "suites/demo.yaml:2: providers.local.api_key_env: the suite would send the environment variable "
            "UNRELATED_SECRET to http://127.0.0.1:9/v1")
    allowed = build(KEYED.replace("VAR", "UNRELATED_SECRET"), suites, allowed_key_env=("UNRELATED_SECRET",))
    assert set(allowed.models) == {"m", "a"} and "local" not in allowed.provider_problems


def test_a_preset_name_taken_over_by_the_suite_cannot_carry_its_key(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    cases = expand(KEYED.replace("VAR", "UNRELATED_SECRET"), suites, models=("openai:gpt-4o", "a"))
    assert [c.case_id for c in cases] == ["t[openai:gpt-4o-run1]", "t[a-run1]"]
    assert str(cases[0].problem).startswith("suites/demo.yaml:3: providers.openai.api_key_env: OPENAI_API_KEY is "
                                            "the key of api.openai.com")
    assert cases[0].model is None and cases[1].problem is None
    pointed = expand(KEYED.replace("VAR", "UNRELATED_SECRET"), suites, models=("openai:gpt-4o",),
                     base_urls={"openai": "http://127.0.0.1:8/v1"})
    assert pointed[0].problem is None and pointed[0].model is not None
    assert pointed[0].model.provider.base_url == "http://127.0.0.1:8/v1"


def test_bench_judge_on_a_refused_provider_fails_the_judged_cases(layout: tuple[Path, Path]) -> None:
    suites, _ = layout
    scorers = "scorers:\n  - {type: llm_judge, judge: j, prompt: '{{ answer }}'}\n"
    text = KEYED.replace("VAR", "UNRELATED_SECRET") + scorers
    suite = build(text, suites, judge="local:judge-model")
    assert suite.judges == {} and "UNRELATED_SECRET" in str(suite.judge_problems["j"])
    fine = build(text, suites, judge="local:judge-model", allowed_key_env=("UNRELATED_SECRET",))
    assert set(fine.judges) == {"j"} and fine.judge_problems == {}
