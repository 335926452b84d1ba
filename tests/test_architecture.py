"""The tree shows the architecture: each subpackage imports only the rooms below it (ARCHITECTURE.md's table)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Lowest first; a room may import itself and any room before it, never one after it.
LAYERS = ("core", "games", "players", "play", "train", "eval", "report", "pipeline", "cli")
MAX_LINES = 400


def _layer(name: str) -> str:
    """A top-level module is its own room, except ``cli_*.py``: more commands of the cli room (cli.py is full)."""
    return "cli" if name.startswith("cli_") else name


def _room(path: Path) -> str:
    parts = path.relative_to(ROOT / "arena").parts
    return parts[0] if len(parts) > 1 else _layer(path.stem)


def _imports(path: Path) -> set[str]:
    rooms = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        rooms.update(_layer(name.split(".")[1]) for name in names if name.startswith("arena.") and name.count(".") >= 1)
    return rooms


MODULES = sorted(p for p in (ROOT / "arena").rglob("*.py") if p.name != "__init__.py" or p.parent != ROOT / "arena")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_imports_point_only_down_the_layers(path):
    room = _room(path)
    assert room in LAYERS, f"{path}: room {room!r} is not in ARCHITECTURE.md's layers {LAYERS}"
    upward = sorted(other for other in _imports(path) if LAYERS.index(other) > LAYERS.index(room))
    assert not upward, f"{path.relative_to(ROOT)} ({room}) imports {upward}, which sit above it"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_modules_open_with_a_docstring_and_stay_small(path):
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path.relative_to(ROOT)} has no module docstring"
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES})"


def test_package_inits_import_nothing():
    """Importing a subpackage must not pull in its logic: stage code closures rely on light ``__init__`` files."""
    for init in (ROOT / "arena").rglob("__init__.py"):
        body = ast.parse(init.read_text()).body
        assert not [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))], init


def test_architecture_md_names_every_room():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    rooms = {p.name for p in (ROOT / "arena").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    missing = sorted(room for room in rooms if f"`arena/{room}/`" not in text)
    assert not missing, f"ARCHITECTURE.md does not describe {missing}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_NAMES = {_module_name(p): p for p in (ROOT / "arena").rglob("*.py")}


def _imported_modules(path: Path) -> set[str]:
    """The arena modules ``path`` imports anywhere in its body (lazy imports inside functions count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in MODULE_NAMES and not MODULE_NAMES[name].name == "__init__.py"}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), or a module that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1 or node in graph.get(node, ()):
                circles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_import_graph_has_no_circles():
    """No two modules import each other, directly or round a longer loop (lazy imports included): each module
    sits below the modules that import it, so it can be read, tested and moved on its own."""
    graph = {name: _imported_modules(path) - {name} for name, path in MODULE_NAMES.items()}
    assert not _circles(graph), f"import circles: {_circles(graph)}"


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
