"""A stage imports the `arena` package of the repository it belongs to, not an installed one (an editable install
of another checkout, or the workspace when DVC runs an experiment in a temporary copy), and refuses when it cannot:
its meta.json then records the code DVC tracked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from repo_copy import small_params

from arena.core.code import closure, code_digest

ROOT = Path(__file__).resolve().parents[1]


def _copy(dest: Path, *, with_arena: bool = True) -> Path:
    """The stage scripts (and the package, changed so its code differs from this checkout's) with small params."""
    shutil.copytree(ROOT / "stages", dest / "stages", ignore=shutil.ignore_patterns("__pycache__"))
    if with_arena:
        shutil.copytree(ROOT / "arena", dest / "arena", ignore=shutil.ignore_patterns("__pycache__"))
        errors = dest / "arena" / "core" / "errors.py"
        errors.write_text(errors.read_text() + "\n# this copy's code differs from the importing checkout's\n")
    (dest / "params.yaml").write_text(yaml.safe_dump(small_params(), sort_keys=False))
    return dest


def _stage(repo: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """``python stages/base.py`` in ``repo`` as DVC runs it, with another checkout's arena importable first
    (PYTHONPATH precedes site-packages, so this stands for an editable install of that checkout too)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
           "ARENA_CACHE_DIR": str(tmp / "arena-cache")}
    return subprocess.run([sys.executable, "stages/base.py", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_stage_records_and_runs_the_code_of_its_own_repository(tmp_path):
    repo = _copy(tmp_path / "copy")
    mine = code_digest(closure("stages/base.py", root=repo), root=repo)
    assert mine != code_digest(closure("stages/base.py"))  # the two checkouts' code really differs
    result = _stage(repo, tmp_path, "--out", "artifacts/models/base")
    assert result.returncode == 0, result.stderr
    meta = json.loads((repo / "artifacts" / "models" / "base" / "meta.json").read_text())
    assert meta["code"] == {"entry": "stages/base.py", "code_digest": mine}


def test_a_stage_whose_repository_has_no_arena_refuses_in_one_line(tmp_path):
    repo = _copy(tmp_path / "copy", with_arena=False)
    result = _stage(repo, tmp_path, "--out", "artifacts/models/base")
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    assert str(repo) in lines[0] and str(ROOT) in lines[0]
    assert not (repo / "artifacts" / "models" / "base").exists()
