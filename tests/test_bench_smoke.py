"""Smoke test of the benchmark suite: `bench/run.py --quick` runs every figure and writes a complete JSON table.

It never asserts a timing or a ratio (those depend on the machine); it asserts that every figure ran and
produced numbers, so the suite cannot rot between the runs that publish its figures.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # not a package: scripts import each other

# isort: split
import pytest
from common import latency_row, paired_speedup, throughput_row, write_keeping_notes
from rollouts import parse_action
from run import FIGURES

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "bench" / "run.py"


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "bench.json"
    # Module-scoped, so it runs before conftest's per-test cache isolation: isolate the cache here.
    env = {**os.environ, "ARENA_CACHE_DIR": str(tmp / "arena-cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(RUN), "--quick", "--json", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| figure | ours | reference | ratio | target | pass/fail | peak RSS |" in done.stdout
    return json.loads(out.read_text())


def test_every_figure_reports_numbers(quick_results):
    rows = quick_results["rows"]
    assert {row["figure"] for row in rows} == set(FIGURES)
    for row in rows:
        assert not row["note"].startswith("error:"), row
        assert _number(row["peak_rss_mib"]) and row["peak_rss_mib"] > 0, row
        assert _number(row["reference"]), row
        if row["ours"] is None:
            # Only the pipeline figure may be skipped, and only because the pipeline is not built here.
            assert row["figure"] == "pipeline" and row["note"].startswith("skipped:"), row
            assert row["passed"] is None
            continue
        assert _number(row["ours"]) and _number(row["ratio"]), row
        assert row["passed"] in (True, False) if row["target"] else row["passed"] is None, row


def test_machine_is_described(quick_results):
    machine = quick_results["machine"]
    assert quick_results["quick"] is True
    assert machine["cores"] >= 1 and machine["cpu"]
    assert machine["mlx_blas"]["blas"] and machine["numpy_blas"]


def test_parse_action_takes_the_first_legal_action_named():
    legal = ("[check]", "[bet]")
    assert parse_action("I will [BET] now, not [check]", legal) == "[bet]"
    assert parse_action("[check][bet]", legal) == "[check]"
    assert parse_action("[call]", legal) is None
    assert parse_action("", legal) is None


def test_ratio_direction_and_verdicts():
    faster = throughput_row("f", "n", "x/s", 90.0, 100.0, ("a", "b"), 0.8)
    assert math.isclose(faster.ratio, 0.9) and faster.passed is True and faster.target == ">= 0.8x"
    assert throughput_row("f", "n", "x/s", 70.0, 100.0, ("a", "b"), 0.8).passed is False
    assert throughput_row("f", "n", "x/s", 70.0, 100.0, ("a", "b"), None).passed is None
    quick = latency_row("f", "n", "ms", 2.0, 300.0, ("a", "b"), 10.0)
    assert math.isclose(quick.ratio, 150.0) and quick.passed is True and quick.target == "<= 10 ms"
    assert latency_row("f", "n", "s", 3.0, 0.5, ("a", "b"), 2.0).passed is False
    skipped = latency_row("f", "n", "s", None, 0.5, ("a", "b"), 2.0)
    assert skipped.ratio is None and skipped.passed is None


def test_paired_speedup_compares_adjacent_samples_only():
    # The machine slows down 10x between pairs; each pair still says ours is twice as fast.
    assert paired_speedup([1.0, 10.0, 1.0], [2.0, 20.0, 2.0]) == 2.0
    # 512 games in 1 s against 64 games in 2 s: 512 / (64 / 2) = 16x.
    assert paired_speedup([1.0], [2.0], ours_work=512, reference_work=64) == 16.0


def test_rewritten_results_keep_their_notes(tmp_path):
    results = tmp_path / "figure.md"
    write_keeping_notes(results, "# Figure\n\n| old table |")
    assert results.read_text() == "# Figure\n\n| old table |\n"
    results.write_text(results.read_text() + "\n## Notes\n\nWhy the old table looks as it does.\n")
    write_keeping_notes(results, "# Figure\n\n| new table |\n")
    assert results.read_text() == "# Figure\n\n| new table |\n\n## Notes\n\nWhy the old table looks as it does.\n"
    assert not list(tmp_path.glob("*.tmp"))
