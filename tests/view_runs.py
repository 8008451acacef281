"""Runs for the ``bench view`` tests: results files written from records, with hostile text where text can be.

Two named runs of one suite under ``bench-results/runs`` (``before``, ``after``), two models each, and image
parts: one file inside the run's folder (served), one outside it (named, never served), one URL (never fetched).
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_plugin.results.record import FAILED, PASSED, CaseRecord
from bench_plugin.results.store import encode_record
from bench_plugin.view.runs import find_runs
from bench_plugin.view.server import ViewServer
from bench_plugin.view.site import Site

SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(1)>"
QUOTES = "\"'><svg onload=alert(2)>"
LINK = "javascript:alert(3)"
HOSTILE = f"{SCRIPT} {IMAGE} {QUOTES} [x]({LINK})"
TASKS = [f"capital-{index}-{SCRIPT}" if index == 0 else f"capital-{index}" for index in range(6)]
MODELS = {"good": f"good {SCRIPT}", "bad": f"bad {QUOTES}"}


def png(width: int = 3, height: int = 2) -> bytes:
    """A small valid PNG image."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def image_parts(run: Path) -> list[dict[str, Any]]:
    """An image in the run's folder, one outside every served folder, one by URL."""
    data = png()
    (run / "pic.png").write_bytes(data)
    outside = run.parent.parent.parent / "outside.png"
    outside.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    return [{"type": "image", "media_type": "image/png", "file": "pic.png", "bytes": len(data), "sha256": digest},
            {"type": "image", "media_type": "image/png", "file": "../../../outside.png", "bytes": len(data)},
            {"type": "image", "media_type": "image/png", "url": LINK}]


def record(model: str, task: str, index: int, score: float, answer: str, images: list[dict[str, Any]],
           **fields: Any) -> dict[str, Any]:
    content: Any = f"What is capital {index}? {HOSTILE}"
    if images and index == 1:
        content = [{"type": "text", "text": content}, *images]
    messages = [{"role": "user", "content": content}]
    status = PASSED if score >= 0.5 else FAILED
    components = [{"name": "C", "value": float(score >= 0.5), "passed": score >= 0.5, "judge_output": None},
                  {"name": f"J{SCRIPT}", "value": score, "raw": score * 10, "judge_output": f"Rating: {HOSTILE}"}]
    return CaseRecord(
        nodeid=f"suites/qa.yaml::{task}[{model}-run1]", suite=f"qa {IMAGE}", path="suites/qa.yaml", task=task,
        model=model, model_id=f"{model}-v1", model_label=MODELS[model], provider="scripted", run=1, status=status,
        reason=f"score {score} {SCRIPT}", tags=[f"kind={SCRIPT}", f"city={index % 2}"], messages=messages,
        transcript=[*messages, {"role": "assistant", "content": answer}], response=answer, composite=score,
        threshold=0.5, scores={"components": components, "composite": score, "threshold": 0.5},
        usage={"input_tokens": 10 + index, "output_tokens": 5, "cost_usd": 0.001 * (index + 1), "calls": 1,
               "attempts": 1}, latency_s=0.5 + index / 10, duration_s=1.0, started_at=f"2026-01-0{index + 1}T00:00:00",
        case_index=index, **fields).to_dict()


def scores(run: str, model: str, index: int) -> float:
    """``good`` passes every task but the last; ``bad`` fails from task 2 on; ``after`` fixes bad's task 2."""
    if model == "good":
        return 0.25 if index == 5 else 0.9
    return 0.8 if index < 2 or (run == "after" and index == 2) else 0.2


def write_runs(root: Path) -> Path:
    """``root/bench-results`` with the runs ``before`` and ``after``; returns the output folder."""
    output = root / "bench-results"
    written = 1_700_000_000 * 10**9
    for run in ("before", "after"):
        folder = output / "runs" / run
        folder.mkdir(parents=True)
        images = image_parts(folder) if run == "after" else []
        lines = []
        for index, task in enumerate(TASKS):
            for model in MODELS:
                answer = f"The capital is Town{index} ({run}) {HOSTILE}" if model == "bad" else f"Town{index} {HOSTILE}"
                lines.append(encode_record(record(model, task, index, scores(run, model, index), answer, images)))
        results = folder / "results.jsonl"
        results.write_text("\n".join(lines) + "\n{not a record}\n", encoding="utf-8")
        os.utime(results, ns=(written, written))  # "before" was written first: the runs page lists it first
        written += 10**9
    return output


@contextmanager
def serving(root: Path) -> Iterator[str]:
    """The runs under ``root`` served on a free loopback port; yields the runs page's address."""
    import threading

    site = Site(find_runs([str(root / "bench-results")], root / "bench-results"), root)
    site.warm()  # the statistics computed before any page is asked for (the server starts them in the background)
    server = ViewServer(site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
