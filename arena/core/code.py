"""The code that produces a result: a script's transitive closure of project modules, and its digest.

The closure is computed from the source alone (every ``import`` of an ``arena`` module anywhere in a file,
function bodies included, plus the ``__init__.py`` of each package on the way), so it is the same on every
machine. dvc.yaml lists each stage's closure as its code dependencies, and every ``meta.json`` and score
card records the closure's digest, so a result names the exact code that made it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from arena.core.hashing import digest_config, digest_file

PACKAGE = "arena"


def project_root() -> Path:
    """The directory holding the ``arena`` package (the repository root in a checkout)."""
    return Path(__file__).resolve().parents[2]


def _module_path(name: str, root: Path) -> Path | None:
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(tree: ast.AST) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            # ``from arena.x import y`` may name a submodule y as well as an attribute of arena.x.
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _with_packages(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@cache
def _direct(path: Path, root: Path) -> frozenset[Path]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for name in _imported_names(tree):
        if name.split(".")[0] != PACKAGE:
            continue
        for module in _with_packages(name):
            located = _module_path(module, root)
            if located is not None:
                found.add(located)
    return frozenset(found)


def _package_data(modules: set[Path]) -> set[Path]:
    """Data files live in a ``data/`` folder beside the modules that read them; they belong to the closure too."""
    data_dirs = {module.parent / "data" for module in modules}
    return {path for folder in data_dirs if folder.is_dir() for path in folder.rglob("*") if path.is_file()}


def closure(entry: str | Path, root: Path | None = None) -> list[str]:
    """``entry``, every project module it imports (transitively) and their packages' ``data/`` files, as sorted
    paths relative to ``root``."""
    root = (root or project_root()).resolve()
    start = (root / entry).resolve() if not Path(entry).is_absolute() else Path(entry).resolve()
    seen, todo = {start}, [start]
    while todo:
        for module in _direct(todo.pop(), root):
            if module not in seen:
                seen.add(module)
                todo.append(module)
    return sorted(path.relative_to(root).as_posix() for path in seen | _package_data(seen))


def code_digest(files: Iterable[str], root: Path | None = None) -> str:
    """Digest of the files' relative paths and contents (renaming a module changes it too)."""
    root = root or project_root()
    return digest_config({rel: digest_file(root / rel) for rel in sorted(files)})


def producing_script() -> str:
    """The stage script this process runs (``stages/<name>.py``), else the CLI module (library and CLI use)."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    stages = project_root() / "stages"
    if main and Path(main).suffix == ".py" and Path(main).resolve().parent == stages:
        return f"stages/{Path(main).name}"
    return f"{PACKAGE}/cli.py"


def producing_code() -> dict[str, str]:
    """What ``meta.json`` and score cards record of the code that made them: the entry and its closure's digest."""
    entry = producing_script()
    return {"entry": entry, "code_digest": code_digest(closure(entry))}
