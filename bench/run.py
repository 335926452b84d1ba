"""arena's performance figures, each measured side by side with a reference in one run, as ratios against targets.

Usage (from the repository root):
    python bench/run.py [--quick] [--json OUT] [--only FIGURE ...]

Figures (each in bench/FIGURE.py and run in its own subprocess, so one figure's memory and warm caches never touch
another's, and its peak RSS -- the largest resident set of any process in its tree -- is read from ``wait4``):

  blas       MLX sgemm GFLOP/s with arena's in-process OpenBLAS vs numpy's sgemm on the same shapes
             (target >= 0.8x); MLX with its bundled reference BLAS (ARENA_BLAS=reference, a subprocess) for context.
  rollouts   Kuhn games/s of arena.play.match.play_match (64 concurrent games, MLXPlayer vs random) vs a naive loop
             calling mlx_lm.generate once per move on the same model (target >= 10x).
  hashing    blake3 pin (arena.core.hashing.digest_file, uncached) vs hashlib md5 (DVC's hash) of a 1 GiB file
             (target >= 5x); a cached re-pin of the unchanged file (target <= 10 ms).
  pipeline   a no-op ``dvc repro`` of the repository's pipeline, only when ``dvc status -q`` says it is up to
             date (target <= 2 s); ``dvc --version`` (DVC's start-up alone) for context.
  training   tokens/s of arena's GRPO step (arena.train.selfplay.update.GRPOUpdate) vs mlx-lm's LoRA training step
             (iterate_batches + default_loss + its compiled update) on the same model, decisions and batch size
             (target >= 0.8x).
  scoring    games/s and peak RSS of arena's prefix-shared, head-only scoring vs the old full-row scoring, on a
             real-vocabulary stand-in (Kuhn and Liar's Dice full view) and the embedded model (Liar's Dice compact).
  qlora      a GRPO step on full-view Kuhn decisions with the q4 stand-in and LoRA: tokens/s, and its peak RSS
             against the bound the token budget predicts (arena.train.memory; target: measured <= predicted).
  data_parallel  a GRPO step (arena.train.selfplay.update.GRPOUpdate) in two processes (mlx.launch, ring backend on
             127.0.0.1) vs one, same decisions and global batch: steps/s, and whether both trained the same bytes.

Ours and the reference are timed in alternation (ours, reference, ours, ...). The table shows each side's median;
the ratio is the median over repetitions of the ratio of the two adjacent measurements, so a machine whose load
changes mid-run (shared cores) slows both sides of each pair alike. ``--quick`` uses small sizes (the test
suite's smoke run); its numbers are not the published figures. Timings are wall clock; no number is hard-coded.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from common import ROOT, Row, log, render_table

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx: the figures measure arena's BLAS

# Each one a module here with figure(quick).
FIGURES = ("blas", "rollouts", "hashing", "pipeline", "training", "scoring", "qlora", "data_parallel")


def run_figure_child(name: str, quick: bool, result: Path) -> None:
    """``--figure``: measure one figure in this process and write its rows as JSON."""
    rows = importlib.import_module(name).figure(quick)
    result.write_text(json.dumps([asdict(row) for row in rows]))


def run_figure(name: str, quick: bool, tmp: Path) -> list[dict[str, Any]]:
    """One figure in a subprocess; its peak RSS (largest process in its tree) comes from wait4."""
    result = tmp / f"{name}.json"
    args = [sys.executable, __file__, "--figure", name, "--result", str(result)] + (["--quick"] if quick else [])
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    peak_mib = usage.ru_maxrss / 1024  # Linux reports KiB
    if child.returncode != 0 or not result.exists():
        return [asdict(Row(name, name, "", None, None, "", "", note=f"error: exit code {child.returncode}",
                           passed=False, peak_rss_mib=peak_mib))]
    rows = json.loads(result.read_text())
    for row in rows:
        row["peak_rss_mib"] = peak_mib
        row["details"]["figure_wall_s"] = elapsed
    return rows


def _first(path: Path, pattern: str) -> str:
    try:
        match = re.search(pattern, path.read_text(), re.MULTILINE)
    except OSError:
        return "unknown"
    return match.group(1).strip() if match else "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, Any]:
    """Where the figures came from: CPU, cores, memory, load, BLAS, versions."""
    import numpy as np

    from arena.core.blas import blas_info

    numpy_blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    mem_kib = _first(Path("/proc/meminfo"), r"^MemTotal:\s+(\d+)")
    return {
        "cpu": _first(Path("/proc/cpuinfo"), r"^model name\s*:\s*(.+)$") if sys.platform == "linux"
        else platform.processor(),
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem_kib) / 1024**2, 1) if mem_kib.isdigit() else None,
        "load_average_at_start": list(os.getloadavg()),
        "platform": f"{sys.platform}-{platform.machine()}",
        "python": platform.python_version(),
        "mlx_blas": blas_info(),
        "numpy_blas": f"{numpy_blas.get('name')} {numpy_blas.get('version')}",
        "versions": {p: _version(p) for p in ("mlx", "mlx-lm", "numpy", "blake3", "dvc")},
    }



def _print_results(host: dict[str, Any], rows: Sequence[dict[str, Any]]) -> None:
    """The machine line, the Markdown table, and each measured row's note."""
    print(f"Machine: {host['cpu']}, {host['cores']} cores, MLX BLAS: {host['mlx_blas']['blas']} "
          f"({host['mlx_blas']['threads']} thread, {host['mlx_blas']['coretype']}), numpy BLAS: {host['numpy_blas']}; "
          f"load average {host['load_average_at_start'][0]:.2f} -> {host['load_average_at_end'][0]:.2f}")
    print(render_table(rows))
    for row in rows:
        if row["note"] and row["ours"] is not None:
            print(f"- {row['name']}: {row['note']}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not the published figures)")
    parser.add_argument("--json", type=Path, help="also write the table and the machine description here")
    parser.add_argument("--only", nargs="+", choices=FIGURES, help="run only these figures")
    parser.add_argument("--figure", choices=FIGURES, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.figure:
        run_figure_child(args.figure, args.quick, args.result)
        return 0
    host = machine()
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-results-") as tmp:
        for name in args.only or FIGURES:
            log(f"figure {name}")
            rows.extend(run_figure(name, args.quick, Path(tmp)))
    host["load_average_at_end"] = list(os.getloadavg())
    _print_results(host, rows)
    if args.json:
        from arena.core.artifacts import atomic_write_json

        atomic_write_json(args.json, {"quick": args.quick, "machine": host, "rows": rows,
                                      "wall_s": time.perf_counter() - started})
    # A missed target is a finding (reported in the table), not a crash; a figure that could not run is.
    return 1 if any(row["note"].startswith("error:") for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
