"""Images and audio in suites, end to end: every YAML form, bad input at its line before any call, judges, reports."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from media_files import png, wav

from bench_plugin.cli import main
from bench_plugin.mock.server import MockServer

RED = png(2, 2, (255, 0, 0))
RED_SHA = hashlib.sha256(RED).hexdigest()
CLIP = wav()

FORMS = """\
models:
  echo: {provider: echo}
tasks:
  - id: openai-style
    messages:
      - role: user
        content:
          - {type: text, text: "Which colour?"}
          - {type: image_url, image_url: {url: pics/red.png}}
  - id: short-form
    messages:
      - role: user
        content: ["Which colour?", {image: pics/red.png}, {audio: clip.wav}]
  - id: "row-{{ n }}"
    dataset: {file: rows.jsonl}
    prompt: "Which colour?"
    images: ["{{ picture }}"]
  - id: chat-rows
    dataset: {file: chat.jsonl}
    messages: "{{ messages }}"
  - id: turns
    turns:
      - {content: "First look", images: [pics/red.png]}
      - Second, without one
"""


def _files(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites" / "pics").mkdir(parents=True, exist_ok=True)
    (pytester.path / "suites" / "pics" / "red.png").write_bytes(RED)
    (pytester.path / "suites" / "clip.wav").write_bytes(CLIP)
    (pytester.path / "suites" / "rows.jsonl").write_text(json.dumps({"n": 1, "picture": "pics/red.png"}) + "\n")
    data_url = "data:image/png;base64," + base64.b64encode(RED).decode()
    chat = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Which colour?"},
                                                      {"type": "image_url", "image_url": {"url": data_url}}]}]}
    (pytester.path / "suites" / "chat.jsonl").write_text(json.dumps(chat) + "\n")


def _records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return {record["task"]: record for record in map(json.loads, lines)}


def test_every_form_sends_the_image_and_records_keep_a_reference(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/forms": FORMS})
    _files(pytester)

    pytester.runpytest("suites").assert_outcomes(passed=5)

    records = _records(pytester)
    note = f"[image image/png pics/red.png, {len(RED)} bytes, sha256 {RED_SHA[:8]}]"
    for task in ("openai-style", "short-form", "row-1"):
        assert records[task]["response"].startswith("Which colour?") and note in records[task]["response"]
        assert records[task]["messages"][-1]["parts"][0] == {
            "type": "image", "media_type": "image/png", "file": "pics/red.png", "bytes": len(RED), "sha256": RED_SHA}
    assert "[audio audio/wav clip.wav" in records["short-form"]["response"]
    assert records["chat-rows"]["messages"][0]["parts"] == [
        {"type": "image", "media_type": "image/png", "source": "data", "bytes": len(RED), "sha256": RED_SHA}]
    assert records["turns"]["turns"][0]["answer"].endswith(note)
    assert "sha256" not in records["turns"]["turns"][1]["answer"]
    results = (pytester.path / "bench-results" / "results.jsonl").read_text()
    assert base64.b64encode(RED).decode() not in results, "records keep references, never the bytes"


BAD = """\
models:
  echo: {{provider: echo}}
tasks:
  - id: bad
    prompt: Look
    images: [{source}]
"""


@pytest.mark.parametrize(("source", "content", "expected"), [
    ("../outside.png", b"\x89PNG\r\n\x1a\n", "image file ../outside.png is outside the suite's folder"),
    ("fake.png", b"GIF? no, text", "image file fake.png is of an unknown type, expected image"),
    ("big.png", None, "image file big.png is 20.5 MB, more than the image limit of 20.0 MB"),
])
def test_a_bad_image_is_named_at_its_line_by_validate_and_by_the_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], mock_server: MockServer,
    source: str, content: bytes | None, expected: str,
) -> None:
    pytester.makefile(".yaml", **{"suites/bad": BAD.format(source=source)})
    target = pytester.path / "suites" / source
    if content is None:
        with target.open("wb") as handle:
            handle.write(RED)
            handle.truncate(int(20.5 * 1024 * 1024))
    else:
        target.write_bytes(content)

    code = main(["validate", str(pytester.path / "suites")])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    result = pytester.runpytest("suites")

    assert code != 0 and f"suites/bad.yaml:6: tasks[0].images[0]: {expected}" in out
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*suites/bad.yaml:6: tasks[[]0[]].images[[]0[]]: {expected}*"])
    assert "Traceback" not in result.stdout.str()


def test_a_dataset_row_with_a_file_outside_the_folder_fails_its_case_at_the_messages_key(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", **{"suites/rows": """\
models:
  echo: {provider: echo}
tasks:
  - id: "row-{{ row_index }}"
    dataset: {file: chat.jsonl}
    messages: "{{ messages }}"
"""})
    (pytester.path / "secret.png").write_bytes(RED)
    row = {"messages": [{"role": "user", "content": [{"image": "../secret.png"}]}]}
    (pytester.path / "suites" / "chat.jsonl").write_text(json.dumps(row) + "\n")

    result = pytester.runpytest("suites")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rows.yaml:6: tasks[[]0[]].messages: message 0: content part 0: "
                                 "image file ../secret.png is outside the suite's folder*"])


def test_audio_for_an_anthropic_model_is_refused_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/hear": """\
providers:
  claude: {type: anthropic, base_url: "http://127.0.0.1:9"}
models:
  sonnet: {provider: claude, id: claude-x}
tasks:
  - id: hear
    prompt: What is said?
    audio: [clip.wav]
"""})
    (pytester.path / "suites" / "clip.wav").write_bytes(CLIP)

    result = pytester.runpytest("suites")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*hear.yaml:6: model 'sonnet' (anthropic) does not take audio input*"])


JUDGED = """\
models:
  bot: {{provider: scripted, script: [{{reply: "It is red."}}]}}
judges:
  looker:
    provider: scripted
    script:
      - {{image_sha256: "{sha}", reply: "Rating: [[10]]"}}
      - {{reply: "Rating: [[1]]"}}
tasks:
  - id: look
    prompt: Which colour?
    images: [red.png]
    scorers:
      - {{name: J, type: llm_judge, judge: looker, prompt: "Q {{{{ question }}}} A {{{{ answer }}}}"{extra}}}
"""


@pytest.mark.parametrize(("extra", "score"), [("", 1.0), (", show_media: false", 0.0)])
def test_a_judge_sees_the_case_images_unless_told_not_to(pytester: pytest.Pytester, extra: str, score: float) -> None:
    pytester.makefile(".yaml", **{"suites/judged": JUDGED.format(sha=RED_SHA[:12], extra=extra)})
    (pytester.path / "suites" / "red.png").write_bytes(RED)

    pytester.runpytest("suites")

    [component] = _records(pytester)["look"]["scores"]["components"]
    assert component["value"] == score


@pytest.mark.parametrize("provider_type", ["openai_compatible", "anthropic"])
def test_a_suite_sends_the_image_over_both_wire_formats(
    pytester: pytest.Pytester, mock_server: MockServer, provider_type: str
) -> None:
    model_id = f"vision-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "image_sha256": RED_SHA[:10], "reply": "red"})
    base_url = mock_server.openai_base_url if provider_type == "openai_compatible" else mock_server.url
    pytester.makefile(".yaml", **{"suites/wire": f"""\
providers:
  mock: {{type: {provider_type}, base_url: "{base_url}"}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - id: look
    prompt: Which colour?
    images: [red.png]
    scorers: [{{type: contains, value: red}}]
"""})
    (pytester.path / "suites" / "red.png").write_bytes(RED)

    pytester.runpytest("suites").assert_outcomes(passed=1)

    [sent] = [r for r in mock_server.requests if r["model"] == model_id]
    [image] = [part for part in sent["body"]["messages"][-1]["content"] if part["type"] != "text"]
    encoded = base64.b64encode(RED).decode()
    if provider_type == "openai_compatible":
        assert image == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}}
    else:
        assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded}}


def test_the_html_case_view_shows_the_image(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/forms": FORMS})
    _files(pytester)

    pytester.runpytest("suites", "-k", "short", "--html", "out/report.html", "--self-contained-html")

    page = Path(pytester.path / "out" / "report.html").read_text()
    assert base64.b64encode(RED).decode() in page
    assert "pics/red.png" in page and "audio audio/wav clip.wav" in page


def test_a_suite_sets_its_own_limits_for_inline_parts_and_dataset_rows(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/small": """\
media_limits: {image_mb: 0.0001}
models:
  echo: {provider: echo}
tasks:
  - id: inline
    messages:
      - role: user
        content: [{image: red.png}]
  - id: "row-{{ row_index }}"
    dataset: {file: chat.jsonl}
    messages: "{{ messages }}"
"""})
    big = png(16, 16, (1, 2, 3)) + b"\0" * 200  # more than 0.0001 MB (104 bytes)
    (pytester.path / "suites" / "red.png").write_bytes(big)
    row = {"messages": [{"role": "user", "content": [{"image": "red.png"}]}]}
    (pytester.path / "suites" / "chat.jsonl").write_text(json.dumps(row) + "\n")

    result = pytester.runpytest("suites")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        f"*small.yaml:8: tasks[[]0[]].messages[[]0[]].content[[]0[]].image: image file red.png is {len(big)} bytes, "
        "more than the image limit of 104 bytes*",
        "*hint: an image must be PNG, JPEG, GIF or WebP, at most 104 bytes*",
        "*small.yaml:11: tasks[[]1[]].messages: message 0: content part 0: image file red.png is*",
    ])


def test_audio_shown_to_an_anthropic_judge_is_refused_before_any_call(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/heard": """\
providers:
  claude: {type: anthropic, base_url: "http://127.0.0.1:9"}
models:
  echo: {provider: echo}
judges:
  sonnet: {provider: claude, id: claude-x}
tasks:
  - id: hear
    prompt: What is said?
    audio: [clip.wav]
    scorers: [{name: J, type: llm_judge, judge: sonnet, prompt: "{{ answer }}", show_media: true}]
"""})
    (pytester.path / "suites" / "clip.wav").write_bytes(CLIP)

    result = pytester.runpytest("suites")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*heard.yaml:11: tasks[[]0[]].scorers[[]0[]].show_media: "
                                 "model 'sonnet' (anthropic) does not take audio input*",
                                 "*hint: leave show_media out*"])


def test_a_rejudged_case_shows_the_judge_its_images_again(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/judged": JUDGED.format(sha=RED_SHA[:12], extra="")})
    (pytester.path / "suites" / "red.png").write_bytes(RED)
    pytester.runpytest("suites", "--bench-run", "first").assert_outcomes(passed=1)

    pytester.runpytest("suites", "--bench-run", "first", "--bench-rejudge").assert_outcomes(passed=1)

    lines = (pytester.path / "bench-results" / "runs" / "first" / "results.jsonl").read_text().splitlines()
    [record] = map(json.loads, lines)
    assert record["rejudged"] and record["scores"]["components"][0]["value"] == 1.0


def test_a_turns_image_and_a_prompt_variants_image_are_checked_at_their_keys(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/keys": """\
models:
  echo: {provider: echo}
tasks:
  - id: talk
    turns:
      - {content: "Look", images: [notes.png]}
  - id: variant
    prompts:
      - id: shown
        messages:
          - role: user
            content: ["Look", {image: red.png}]
      - id: broken
        messages:
          - role: user
            content: ["Look", {image: notes.png}]
"""})
    (pytester.path / "suites" / "notes.png").write_text("not an image")
    (pytester.path / "suites" / "red.png").write_bytes(RED)

    result = pytester.runpytest("suites")

    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*keys.yaml:6: tasks[[]0[]].turns[[]0[]].images[[]0[]]: image file notes.png is of an unknown type*",
        "*keys.yaml:16: tasks[[]1[]].prompts[[]1[]].messages[[]0[]].content[[]1[]].image: image file notes.png*",
    ])


def test_a_turns_tasks_images_go_with_its_first_turn(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/first": """\
models:
  echo: {provider: echo}
tasks:
  - id: talk
    images: [red.png]
    turns: ["First", "Second"]
"""})
    (pytester.path / "suites" / "red.png").write_bytes(RED)

    pytester.runpytest("suites").assert_outcomes(passed=1)

    first, second = _records(pytester)["talk"]["turns"]
    assert first["answer"] == f"First [image image/png red.png, {len(RED)} bytes, sha256 {RED_SHA[:8]}]"
    assert second["answer"] == "Second"


def test_a_conversation_tasks_images_are_refused_at_their_key(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/talk": """\
models:
  ana: {provider: scripted, script: [{reply: "Hi"}]}
tasks:
  - id: picnic
    images: [red.png]
    conversation:
      mode: shared
      seed: Plan the picnic.
      participants: [{name: Ana}, {name: Ben}]
      max_turns: 1
"""})
    (pytester.path / "suites" / "red.png").write_bytes(RED)

    result = pytester.runpytest("suites")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*talk.yaml:5: tasks[[]0[]].images[[]0[]]: a conversation between models takes no "
                                 "images: or audio:*"])
