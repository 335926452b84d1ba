"""loop: lsp as a DVC experiment (slow): `dvc exp run -S loop=lsp` builds the whole pipeline from scratch, and a
second copy's `dvc repro` of the same params reproduces every output byte for byte."""

from __future__ import annotations

import json

import pytest
import yaml
from repo_copy import lock_outs, make_copy, repro_env, run_dvc, small_params

pytestmark = pytest.mark.slow


def test_lsp_experiment_builds_from_scratch_and_reproduces_byte_for_byte(tmp_path):
    experiment = make_copy(tmp_path / "experiment" / "repo", small_params())
    built = run_dvc(experiment, repro_env(experiment), "exp", "run", "-S", "loop=lsp", timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert yaml.safe_load((experiment / "params.yaml").read_text())["loop"] == "lsp"
    again = make_copy(tmp_path / "again" / "repo", small_params(loop="lsp"))
    rebuilt = run_dvc(again, repro_env(again), "repro", timeout=900)
    assert rebuilt.returncode == 0, rebuilt.stdout[-3000:] + rebuilt.stderr[-3000:]
    outs = lock_outs(experiment)
    assert "artifacts/rollouts/r1" in outs and "artifacts/evals/r1.json" in outs
    assert outs == lock_outs(again)
    evaluation = json.loads((experiment / "artifacts" / "evals" / "r1.json").read_text())
    assert evaluation["loop"] == "lsp" and evaluation["benchmark"]["all"]["n"] == 40
    assert evaluation["proposals"]["proposals"] == 8
    assert (experiment / "artifacts" / "report" / "lsp_rounds.png").exists()
