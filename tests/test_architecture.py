"""The layout holds: stages import downward only, no circles, no import hidden in a function to dodge one."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bench_plugin"
# the floors, lowest first, and what each may import besides itself: declared once, for every module of the package
FLOORS = {
    "core": set(),                                  # the shared words
    "suite": {"core"},                              # YAML to frozen specs
    "providers": {"core", "suite"},                 # one wire format each, and the HTTP transport
    "engines": {"core", "suite"},                   # a case to a transcript
    "scoring": {"core", "suite", "engines"},        # a transcript to scores
    "calls": {"core", "providers"},                 # one call's way out: attempts, rate limits, cache, prices
    "results": {"core"},                            # the record, the results file, the journals
    "report": {"core", "suite", "results"},         # records to reports
    "run": {"core", "suite", "providers", "engines", "scoring", "calls", "results"},
    "mock": {"core", "providers"},                  # the mock server, a tool beside the floors
    "plugin": {"core", "suite", "providers", "engines", "scoring", "calls", "results", "report", "run", "mock",
               "bench_plugin"},                     # the pytest glue (and the facade's __version__)
    "view": {"core", "results", "report"},        # bench view: the runs in the browser
    "cli": {"core", "suite", "providers", "engines", "scoring", "calls", "results", "report", "run", "mock",
            "plugin", "view", "bench_plugin"},      # the bench command
    "bench_plugin": {"core", "suite", "providers", "engines", "scoring", "calls", "results", "mock"},  # the facade
}
LOOSE = {"bench_plugin", "bench_plugin.cli"}  # the only modules at the package's top: the facade and the command


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


def test_every_module_sits_on_a_declared_floor() -> None:
    modules = _modules()
    homeless = sorted(name for name in modules if _room(name) not in FLOORS)
    loose = {name for name, path in modules.items() if path.parent == PACKAGE}
    assert homeless == []
    assert loose == LOOSE


def test_stages_import_only_downward() -> None:
    wrong = []
    for name, path in _modules().items():
        allowed = FLOORS[_room(name)]
        for node, target, _ in _imports(name, path):
            room = _room(target)
            if room not in allowed and room != _room(name):
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


def test_the_facade_exports_every_public_name_and_loads_it_on_demand() -> None:
    import importlib

    import bench_plugin

    public = set(bench_plugin.__all__) - {"__version__"}
    assert public == set(bench_plugin._PUBLIC)
    for name in sorted(public):
        assert getattr(bench_plugin, name) is getattr(importlib.import_module(bench_plugin._PUBLIC[name]), name)


def test_docs_and_the_projects_own_conftest_import_only_the_facade() -> None:
    root = PACKAGE.parent
    texts = {path: path.read_text(encoding="utf-8") for path in [root / "conftest.py", *root.glob("docs/*.md")]}
    internal = [
        f"{path.relative_to(root)}: {line.strip()}"
        for path, text in texts.items() for line in text.splitlines()
        if line.lstrip().startswith(("from bench_plugin.", "import bench_plugin."))
    ]
    assert internal == []


def test_no_name_a_package_loads_on_demand_is_also_a_module_of_it() -> None:
    """Importing a submodule sets the package's attribute of that name: a lazy name of the same would be shadowed."""
    import importlib

    for package, table in (("bench_plugin", "_PUBLIC"), ("bench_plugin.report.statistics", "_NAMES")):
        names = set(getattr(importlib.import_module(package), table))
        folder = PACKAGE.parent.joinpath(*package.split("."))
        assert names.isdisjoint(path.stem for path in folder.iterdir()), package
