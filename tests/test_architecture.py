"""The layout holds: stages import downward only, no circles, no import hidden in a function to dodge one."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bench_plugin"
# what each stage may import, besides itself; anything not listed is a higher floor
GROUND = {"errors", "chat", "endpoints", "transcript", "json_text", "registry", "hints", "frozen", "text_safety",
          "places", "utf8"}
ALLOWED = {
    "suite": GROUND,
    "providers": GROUND | {"suite", "http"},
    "http": GROUND | {"connection"},
    "connection": GROUND,
    "engines": GROUND | {"suite"},
    "scoring": GROUND | {"suite", "engines"},
    "report": GROUND | {"suite", "record", "store"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path) -> Iterator[tuple[ast.stmt, str, bool]]:
    """(statement, imported bench_plugin module, inside a function) for every import of ours."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = {
        id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules = _modules()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in modules else base
                if target.startswith("bench_plugin"):
                    yield node, target, id(node) in in_function
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("bench_plugin"):
                    yield node, alias.name, id(node) in in_function


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_two_packages_import_each_other() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in _modules().items():
        for _, target, _ in _imports(name, path):
            if _room(name) != _room(target):
                edges[_room(name)].add(_room(target))
    mutual = sorted({tuple(sorted((a, b))) for a, targets in edges.items() for b in targets if a in edges.get(b, ())})
    assert mutual == []


def test_stages_import_only_downward() -> None:
    wrong = []
    for name, path in _modules().items():
        allowed = ALLOWED.get(_room(name))
        if allowed is None:
            continue
        for node, target, _ in _imports(name, path):
            room = _room(target)
            if room not in allowed and room != _room(name) and room != "bench_plugin":
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {target}")
    assert wrong == []


def test_no_circle_of_files() -> None:
    modules = _modules()
    graph = {
        name: {t for _, t, _ in _imports(name, path) if t in modules and t != name} for name, path in modules.items()
    }
    circles = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*trail[trail.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_late_imports_say_why() -> None:
    unexplained = []
    for name, path in _modules().items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node, target, late in _imports(name, path):
            if late:
                around = " ".join(lines[max(0, node.lineno - 3) : node.lineno])
                if "start-up" not in around and "startup" not in around:
                    unexplained.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {target}")
    assert unexplained == []
