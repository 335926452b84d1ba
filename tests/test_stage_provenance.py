"""A stage imports the `arena` package of the repository it belongs to, not an installed one (an editable install
of another checkout, or the workspace when DVC runs an experiment in a temporary copy), and refuses when it cannot:
its meta.json then records the code DVC tracked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from repo_copy import make_copy, repro_env, run_dvc, small_params

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


@pytest.mark.slow
def test_a_queued_experiment_records_its_own_code_not_the_workspaces(tmp_path):
    """`dvc exp run --queue` + `dvc queue start` runs the stages in a temporary copy; with the workspace's arena on
    PYTHONPATH (as an editable install of the workspace puts it), the experiment must still run its own code."""
    repo = make_copy(tmp_path / "repo", small_params())
    env = repro_env(repo)  # PYTHONPATH = the workspace, as an editable install of it would
    queued = code_digest(closure("stages/base.py", root=repo), root=repo)
    assert run_dvc(repo, env, "exp", "run", "--queue", "-n", "own-code", "base").returncode == 0
    errors = repo / "arena" / "core" / "errors.py"  # the workspace moves on after queueing
    errors.write_text(errors.read_text() + "\n# edited in the workspace after the experiment was queued\n")
    assert code_digest(closure("stages/base.py", root=repo), root=repo) != queued
    try:
        assert run_dvc(repo, env, "queue", "start", "-j", "1").returncode == 0
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = run_dvc(repo, env, "queue", "status").stdout
            if "Queued" not in status and "Running" not in status:
                break
            time.sleep(2)
    finally:
        run_dvc(repo, env, "queue", "stop")
    assert "Success" in status, (status, run_dvc(repo, env, "queue", "logs", "own-code").stdout[-3000:])
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/exps"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.split()
    assert len(refs) == 1, refs
    manifest = json.loads(subprocess.run(["git", "show", f"{refs[0]}:artifacts/code/base.json"], cwd=repo,
                                         check=True, capture_output=True, text=True).stdout)
    assert manifest["code_digest"] == queued
