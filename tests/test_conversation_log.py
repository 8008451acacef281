"""The per-case conversation log: where it goes and what a person reads in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_plugin.report.conversation_log import ConversationLogWriter, log_paths, render_markdown
from bench_plugin.report.html import extras_for
from bench_plugin.results.store import encode_record

RECORD: dict[str, Any] = {
    "nodeid": "suites/x.yaml::room[openrouter:meta-llama/llama-3-run1]",
    "suite": "x",
    "task": "room",
    "model": "openrouter:meta-llama/llama-3",
    "run": 1,
    "status": "passed",
    "composite": 1.0,
    "response": "Participants: AI-1 (Llama), AI-2 (b)\n\nAI-1: hi ```",
    "conversation": {
        "mode": "shared",
        "rounds": 1,
        "max_turns": 1,
        "ended": {"reason": "max_turns", "by": None, "round": 1,
                  "detail": "Reached the limit of 1 round; the conversation ended."},
        "participants": [
            {"index": 1, "name": "AI-1", "model": "openrouter:meta-llama/llama-3", "candidate": True, "joined_round": 0,
             "temperature": 1.5, "prompt_additions": ["be | brief"], "calls": 1, "input_tokens": 3, "output_tokens": 2,
             "system": "You are AI-1.", "context": []},
            {"index": 2, "name": "AI-2", "model": "b", "candidate": False, "joined_round": 1, "invited_by": "AI-1",
             "temperature": None, "prompt_additions": [], "calls": 0, "system": "", "context": []},
        ],
        "entries": [
            {"kind": "message", "round": 1, "speaker": "AI-1", "content": "hi ```", "raw": "hi ``` !t 1.5",
             "thinking": None, "participant": 1},
            {"kind": "event", "round": 1, "speaker": "AI-1", "content": "AI-1 set its temperature to 1.5", "ok": True,
             "event": "t"},
            {"kind": "event", "round": 1, "speaker": None, "content": "Reached the limit", "ok": True, "event": "end"},
        ],
    },
}


def test_log_files_are_named_after_the_case_with_unsafe_characters_replaced(tmp_path: Path) -> None:
    markdown, data = log_paths(RECORD, tmp_path)
    # a name that had to change ends in a digest of the original: 'a/b' and 'a_b' get two files
    assert markdown == tmp_path / "x" / "room[openrouter_meta-llama_llama-3-run1]-4e209d0f.md"
    assert data.name == "room[openrouter_meta-llama_llama-3-run1]-4e209d0f.json"


def test_a_log_written_from_results_jsonl_is_the_file_the_run_wrote(tmp_path: Path) -> None:
    """Bench merge writes the logs from results.jsonl, whose keys are sorted: every file differed from the run's."""
    run, merged = ConversationLogWriter(tmp_path / "run"), ConversationLogWriter(tmp_path / "merged")
    run.write(RECORD)
    merged.write(json.loads(encode_record(RECORD)))
    for made, again in zip(log_paths(RECORD, run.folder), log_paths(RECORD, merged.folder), strict=True):
        assert again.read_bytes() == made.read_bytes()


def test_the_markdown_log_shows_participants_replies_and_events(tmp_path: Path) -> None:
    text = render_markdown(RECORD)
    assert "| 1 | AI-1 | openrouter:meta-llama/llama-3 | model under test | 1.5 | start | 1 | 3 / 2 |" in text
    assert "| 2 | AI-2 | b | partner | — | round 1 (AI-1) | 0 | — / — |" in text
    assert "- AI-1: 'be | brief'" in text
    assert "````text\nhi ``` !t 1.5\n````" in text  # a fence longer than any run of backticks in the reply
    assert "*the others saw:*" in text and "> *event:* AI-1 set its temperature to 1.5" in text
    writer = ConversationLogWriter(tmp_path)
    writer.write({"task": "t", "model": "m", "run": 1, "suite": "s"})  # not a conversation: nothing written
    writer.write(RECORD)
    assert writer.written == 1 and sorted(p.name for p in (tmp_path / "conversations" / "x").iterdir()) == [
        "room[openrouter_meta-llama_llama-3-run1]-4e209d0f.json", "room[openrouter_meta-llama_llama-3-run1]-4e209d0f.md"
    ]


def test_the_html_transcript_of_a_conversation_is_its_text_with_speakers_and_events() -> None:
    extra = extras_for(RECORD, linked=True)[0]
    assert (extra["name"], extra["content"]) == ("Transcript", RECORD["response"])
