"""Writes a comparison's two files, compare.json and compare.md, into a folder."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_plugin.report.compare.markdown import render_compare_markdown
from bench_plugin.results.store import write_atomically


def write_comparison(comparison: Mapping[str, Any], folder: Path) -> dict[str, Path]:
    """Write compare.json and compare.md (each whole or not at all) and return their paths.

    Raises:
        OSError: a file cannot be written (``filename`` names it).
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "compare.json", "markdown": folder / "compare.md"}
    write_atomically(paths["json"], json.dumps(comparison, indent=2, ensure_ascii=False) + "\n")
    write_atomically(paths["markdown"], render_compare_markdown(comparison))
    return paths
