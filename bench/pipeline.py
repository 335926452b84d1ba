"""Figure pipeline: a no-op ``dvc repro`` of the repository's pipeline (when up to date) against DVC's start-up."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from common import ROOT, Row, latency_row, log


def _dvc() -> str:
    beside = Path(sys.executable).parent / "dvc"
    found = str(beside) if beside.exists() else shutil.which("dvc")
    if found is None:
        raise RuntimeError("dvc is not installed in this environment (pip install -e '.[dev]')")
    return found


def _timed_run(args: Sequence[str], timeout: float) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - start, done


def figure(quick: bool) -> list[Row]:
    """`dvc --version`, `dvc status -q`, then no-op `dvc repro` runs (skipped when the pipeline is not built)."""
    dvc = _dvc()
    reps = 1 if quick else 3
    startup = statistics.median(_timed_run([dvc, "--version"], 60)[0] for _ in range(reps))
    labels = ("dvc repro (nothing to run)", "dvc --version (start-up only)")
    log("pipeline: dvc status -q")
    status_s, status = _timed_run([dvc, "status", "-q"], 600)
    if status.returncode != 0:
        why = ("pipeline not built" if status.returncode == 1
               else f"dvc status failed (exit {status.returncode}): {status.stderr.strip()[-200:]}")
        return [latency_row("pipeline", "no-op dvc repro", "s", None, startup, labels, 2.0, f"skipped: {why}",
                            skipped=why, status_s=status_s)]
    log(f"pipeline: no-op dvc repro x {reps}")
    times = []
    for _ in range(reps):
        elapsed, done = _timed_run([dvc, "repro"], 600)
        output = done.stdout + done.stderr
        if done.returncode != 0 or "Running stage" in output:
            raise RuntimeError(f"dvc repro was not a no-op (exit {done.returncode}): {output[-500:]}")
        times.append(elapsed)
    stages = len(re.findall(r"^Stage '.+' didn't change", output, re.MULTILINE))
    return [latency_row("pipeline", f"no-op dvc repro ({stages} stages)", "s", statistics.median(times), startup,
                        labels, 2.0, f"dvc status -q took {status_s:.2f} s", samples=times, status_s=status_s)]
