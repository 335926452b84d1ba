"""Each stage's code dependency: a manifest of its script's import closure, written by the ``code`` stage.

dvc.yaml's ``code`` stage depends on the whole ``arena`` and ``stages`` trees and writes one small JSON per
stage script (``artifacts/code/<script>.json``: the closure's files and their digest); every other stage
depends on its own script's manifest. An edit anywhere reruns ``code`` (a fraction of a second), and a
stage reruns exactly when its manifest changed, that is when a module it imports changed. One dependency
per stage instead of ~50 keeps dvc.lock small, and DVC's own time with it (bench/results/pipeline_scale.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir, dump_json
from arena.core.code import closure, code_digest, project_root


def stage_scripts(root: Path | None = None) -> list[str]:
    """The stage scripts under ``stages/``, relative to the project root."""
    root = root or project_root()
    return sorted(path.relative_to(root).as_posix() for path in (root / "stages").glob("*.py"))


def manifest(script: str, root: Path | None = None) -> dict[str, Any]:
    """What a stage's code is: its script, the closure's files, and their digest."""
    files = closure(script, root)
    return {"entry": script, "code_digest": code_digest(files, root), "files": files}


def write_manifests(out_dir: str | Path, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """The ``code`` stage: one manifest per stage script, named after it (``round.json``), written atomically."""
    manifests = {Path(script).stem: manifest(script, root) for script in stage_scripts(root)}
    with atomic_dir(out_dir) as tmp:
        for name, content in manifests.items():
            (tmp / f"{name}.json").write_text(dump_json(content))
    return manifests
