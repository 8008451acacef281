"""Images and audio: sources checked, references kept, the wire shapes of both formats, offline and mock matching."""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from media_files import png, wav

from bench_plugin.calls.cache import cache_key
from bench_plugin.core.chat import CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, ProviderError
from bench_plugin.core.media import MediaPart, sniff
from bench_plugin.mock.media import media_digests
from bench_plugin.mock.server import MockServer
from bench_plugin.providers import anthropic, openai_compat
from bench_plugin.providers.anthropic import AnthropicProvider
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.offline import EchoProvider, ScriptedProvider
from bench_plugin.providers.openai_compat import OpenAICompatProvider
from bench_plugin.report.media_view import media_html
from bench_plugin.suite.media import Where, resolve_media
from bench_plugin.suite.paths import SuiteFolders

RED = png(2, 2, (255, 0, 0))
BLUE = png(2, 2, (0, 0, 255))
WHERE = Where("suite.yaml", "tasks[0].images[0]", 6)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "red.png").write_bytes(RED)
    (tmp_path / "suite" / "clip.wav").write_bytes(wav())
    return tmp_path / "suite"


def _part(folder: Path, name: str = "red.png", kind: str = "image") -> MediaPart:
    return resolve_media(kind, name, SuiteFolders.of(folder), WHERE)


def test_types_are_read_from_the_first_bytes():
    assert sniff(RED) == "image/png"
    assert sniff(wav()) == "audio/wav"
    assert sniff(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert sniff(b"just text") is None


def test_a_file_part_is_checked_and_referenced_without_its_bytes(folder):
    part = _part(folder)

    assert part.reference() == {"type": "image", "media_type": "image/png", "file": "red.png", "bytes": len(RED),
                                "sha256": hashlib.sha256(RED).hexdigest()}
    record = Message("user", "What colour?", parts=(part,)).to_dict()
    assert record["parts"] == [part.reference()]
    assert base64.b64encode(RED).decode() not in str(record)


def test_a_data_url_and_a_url_are_referenced_by_source(folder):
    data = resolve_media("image", "data:image/png;base64," + base64.b64encode(RED).decode(), None, WHERE)
    url = resolve_media("image", "https://example.com/cat.jpg?size=2", None, WHERE)

    assert data.reference() == {"type": "image", "media_type": "image/png", "source": "data", "bytes": len(RED),
                                "sha256": hashlib.sha256(RED).hexdigest()}
    assert url.reference() == {"type": "image", "media_type": "image/jpeg", "url": "https://example.com/cat.jpg?size=2",
                               "bytes": None, "sha256": None}


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("../secret.png", RED, "is outside the suite's folder"),
    ("fake.png", b"<svg>not a png</svg>", "fake.png is of an unknown type, expected image"),
    ("clip.png", wav(), "clip.png is audio/wav, expected image"),
    ("missing.png", None, "does not exist in the suite's folder"),
])
def test_a_bad_image_file_is_refused_at_its_key(folder, name, content, expected):
    if content is not None:
        (folder / name).write_bytes(content)

    with pytest.raises(CaseError) as caught:
        _part(folder, name)

    assert expected in caught.value.message
    assert (caught.value.path, caught.value.key, caught.value.line) == ("suite.yaml", "tasks[0].images[0]", 6)


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(folder):
    big = folder / "big.png"
    with big.open("wb") as handle:  # sparse: 21 MB on paper, a few bytes on disk
        handle.write(RED)
        handle.truncate(21 * 1024 * 1024)

    with pytest.raises(CaseError, match=r"big.png is 21.0 MB, more than the image limit of 20.0 MB"):
        _part(folder, "big.png")


def test_a_link_out_of_the_folder_is_refused(folder, tmp_path):
    (tmp_path / "outside.png").write_bytes(RED)
    os.symlink(tmp_path / "outside.png", folder / "inside.png")

    with pytest.raises(CaseError, match="through a symbolic link"):
        _part(folder, "inside.png")


def test_audio_from_a_url_and_data_that_is_not_base64_are_refused():
    with pytest.raises(CaseError, match="audio cannot come from a URL"):
        resolve_media("audio", "https://example.com/a.wav", None, WHERE)
    with pytest.raises(CaseError, match="is not base64"):
        resolve_media("image", "data:image/png;base64,@@@", None, WHERE)


def _model(provider_type: str = "echo", **options: Any) -> ModelSpec:
    provider = ProviderSpec("p", provider_type)
    return ModelSpec("m", provider, "m-1", "m", options=options)


def _request(model: ModelSpec, *parts: MediaPart, text: str = "What is it?") -> CompletionRequest:
    return CompletionRequest(model=model, messages=(Message("user", text, parts=parts),))


def test_the_cache_key_holds_the_image_digest(folder):
    (folder / "blue.png").write_bytes(BLUE)
    model = _model("openai_compatible")
    red, blue = _part(folder), _part(folder, "blue.png")

    assert cache_key(_request(model, red)) == cache_key(_request(model, red))
    assert cache_key(_request(model, red)) != cache_key(_request(model, blue))
    assert cache_key(_request(model, red)) != cache_key(_request(model))


@pytest.mark.asyncio
async def test_echo_names_the_media_and_scripted_rules_match_a_digest(folder):
    part = _part(folder)
    script = [{"image_sha256": part.sha256[:12], "reply": "red"}, {"reply": "no image"}]

    echoed = await EchoProvider(_model().provider).complete(_request(_model(), part))
    seen = await ScriptedProvider(_model().provider).complete(_request(_model("scripted", script=script), part))
    unseen = await ScriptedProvider(_model().provider).complete(_request(_model("scripted", script=script)))

    assert echoed.text == f"What is it? [image image/png red.png, {len(RED)} bytes, sha256 {part.sha256[:8]}]"
    assert (seen.text, unseen.text) == ("red", "no image")


def test_openai_sends_text_then_image_url_and_input_audio_parts(folder):
    image, audio = _part(folder), _part(folder, "clip.wav", "audio")
    url = resolve_media("image", "https://example.com/cat.png", None, WHERE)

    wire = openai_compat.wire_message(Message("user", "Look", parts=(image, url, audio)))

    assert wire["content"] == [
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(RED).decode()}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "input_audio", "input_audio": {"data": base64.b64encode(wav()).decode(), "format": "wav"}},
    ]
    assert openai_compat.wire_message(Message("user", "plain"))["content"] == "plain"


def test_anthropic_sends_image_blocks_before_the_text_and_refuses_audio(folder):
    image = _part(folder)
    url = resolve_media("image", "https://example.com/cat.png", None, WHERE)

    [turn] = anthropic.wire_messages((Message("user", "Look", parts=(image, url)),))

    assert turn["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(RED).decode()}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {"type": "text", "text": "Look"},
    ]
    with pytest.raises(ProviderError, match="does not take audio"):
        anthropic.wire_messages((Message("user", "Hear", parts=(_part(folder, "clip.wav", "audio"),)),))


def test_a_file_that_changed_after_collection_fails_its_case(folder):
    part = _part(folder)
    (folder / "red.png").write_bytes(BLUE)

    with pytest.raises(CaseError, match="changed since the suite was collected"):
        openai_compat.wire_message(Message("user", "Look", parts=(part,)))


def test_the_mock_reads_media_digests_of_both_formats(folder):
    image, audio = _part(folder), _part(folder, "clip.wav", "audio")
    openai_body = {"messages": [openai_compat.wire_message(Message("user", "x", parts=(image, audio)))]}
    anthropic_body = {"messages": anthropic.wire_messages((Message("user", "x", parts=(image,)),))}

    assert media_digests(openai_body) == {image.sha256, audio.sha256}
    assert media_digests(anthropic_body) == {image.sha256}
    assert media_digests({"messages": [{"role": "user", "content": "text"}]}) == frozenset()


@pytest_asyncio.fixture
async def pool() -> AsyncIterator[HttpPool]:
    pool = HttpPool(size=2)
    yield pool
    await pool.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_the_mock_server_receives_the_image_and_a_rule_matches_its_digest(mock_server: MockServer, pool,
                                                                                folder, wire):
    model_id = f"vision-{uuid.uuid4().hex[:8]}"
    part = _part(folder)
    mock_server.add_rule({"model": model_id, "image_sha256": part.sha256[:16], "reply": "a red square"})
    if wire == "openai":
        spec = ProviderSpec("o", "openai_compatible", base_url=mock_server.openai_base_url, timeout_s=5)
        provider: Any = OpenAICompatProvider(spec, pool)
    else:
        spec = ProviderSpec("a", "anthropic", base_url=mock_server.url, timeout_s=5)
        provider = AnthropicProvider(spec, pool)
    model = ModelSpec(model_id, spec, model_id, model_id)

    with_image = await provider.complete(_request(model, part))
    without = await provider.complete(_request(model))

    assert with_image.text == "a red square"
    assert without.text == "echo: What is it?"
    [sent, _] = [r for r in mock_server.requests if r["model"] == model_id]
    content = sent["body"]["messages"][-1]["content"]
    assert any(block.get("type") in ("image_url", "image") for block in content)


def test_the_case_view_embeds_a_confined_image_and_escapes_its_name(folder, tmp_path):
    name = "<b>x.png"
    (folder / name).write_bytes(RED)
    part = _part(folder, name)
    record = {"path": "suite/s.yaml", "messages": [Message("user", "q", parts=(part,)).to_dict()]}

    view = media_html(record, tmp_path)

    assert "data:image/png;base64," + base64.b64encode(RED).decode() in view
    assert "<b>" not in view and "&lt;b&gt;x.png" in view


@pytest.mark.parametrize("change", ["outside", "digest", "not-an-image"])
def test_the_case_view_shows_only_the_reference_of_a_file_it_cannot_trust(folder, tmp_path, change):
    part = _part(folder).reference()
    if change == "outside":
        (tmp_path / "red.png").write_bytes(RED)
        part["file"] = "../red.png"
    elif change == "digest":
        part["sha256"] = "0" * 64
    else:
        (folder / "red.png").write_bytes(b"<script>alert(1)</script>")
        part["sha256"], part["bytes"] = hashlib.sha256(b"<script>alert(1)</script>").hexdigest(), 25
    view = media_html({"path": "suite/s.yaml", "messages": [{"role": "user", "content": "", "parts": [part]}]},
                      tmp_path)

    assert "<img" not in view and "<figcaption>image image/png" in view
    assert "<script>" not in view


def test_the_vision_suite_images_are_the_ones_drawn_for_it():
    from media_files import vision_images

    folder = Path(__file__).resolve().parents[1] / "suites" / "vision" / "images"
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == vision_images()


def test_a_data_url_over_the_limit_is_refused_before_it_is_decoded():
    payload = "A" * (4 * 1024 * 1024)  # 3 MB once decoded

    with pytest.raises(CaseError, match=r"the data: URL is 3.0 MB, more than the image limit of 1.0 MB"):
        resolve_media("image", "data:image/png;base64," + payload, None, WHERE, {"image": 1024 * 1024})
