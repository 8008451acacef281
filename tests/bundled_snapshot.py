"""Digest of what `pytest suites/` writes, timing aside, so a refactor can show that nothing a user sees changed.

Regenerate after a deliberate change of output: ``python tests/bundled_snapshot.py --update``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "bundled_outputs.json"
# fields that measure the clock, not the benchmark
_TIMING_KEYS = {"duration_s", "latency_s", "elapsed_s", "mean_latency_s", "started_at", "timestamp"}
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?(?:#[0-9a-f]{6,})?")
_SECONDS = re.compile(r"\b\d+\.\d+ s\b")  # latency cells of report.md ("0.00 s")
_SKIPPED_FILES = {"report.html", "dashboard.html"}  # the dashboard is drawn from summary.json, which is checked


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in _TIMING_KEYS}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str):
        return _ISO_TIME.sub("<time>", value)
    return value


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def snapshot(output_dir: Path) -> dict[str, Any]:
    """Per file a digest of its normalised content; ``results.jsonl`` per case, keyed by node id."""
    files: dict[str, str] = {}
    cases: dict[str, str] = {}
    for path in sorted(output_dir.rglob("*")):
        rel = path.relative_to(output_dir).as_posix()
        if not path.is_file() or rel in _SKIPPED_FILES:
            continue
        text = path.read_text(encoding="utf-8")
        if rel == "results.jsonl":
            for line in text.splitlines():
                record = _scrub(json.loads(line))
                cases[record["nodeid"]] = _digest(json.dumps(record, sort_keys=True))
            continue
        if path.suffix == ".json":
            text = json.dumps(_scrub(json.loads(text)), sort_keys=True)
        else:
            text = _SECONDS.sub("<seconds>", _ISO_TIME.sub("<time>", text))
        files[rel] = _digest(text)
    return {"files": files, "cases": cases}


def run_bundled(output_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run the bundled suites as README says, into ``output_dir``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--bench-output", str(output_dir), "--bench-html", "off"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )


def diff(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Human-readable differences between two snapshots."""
    lines = []
    for section in ("files", "cases"):
        want, got = expected[section], actual[section]
        lines += [f"{section}: missing {k}" for k in want if k not in got]
        lines += [f"{section}: unexpected {k}" for k in got if k not in want]
        lines += [f"{section}: changed {k}" for k in want if k in got and want[k] != got[k]]
    return lines


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        result = run_bundled(Path(tmp))
        print(result.stdout.splitlines()[-1] if result.stdout else result.stderr)
        current = snapshot(Path(tmp))
    if "--update" in sys.argv:
        GOLDEN.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN.relative_to(REPO)}: {len(current['files'])} files, {len(current['cases'])} cases")
    else:
        problems = diff(json.loads(GOLDEN.read_text()), current)
        print("\n".join(problems) or "same outputs as tests/golden/bundled_outputs.json")
        sys.exit(1 if problems else 0)
