"""MLX's CPU JIT through arena's vector g++ (arena.core.jit) against MLX's plain build: speed, and the same bits.

Usage: ``python bench/jit.py [--repeats N] [--skip-exhaustive]``; writes ``bench/results/jit.md``.

Each side runs in its own child process (``ARENA_JIT=plain`` for MLX's own build), since a process picks its JIT
compiler once. The exhaustive check runs SiLU (the compiled ``x * sigmoid(x)`` of mlx-lm's SwiGLU, with a unit up
projection) on every one of the 2^32 float32 bit patterns on both sides and compares each 2^26-input chunk's
blake3 digest. The speed rows alternate the sides, ``--repeats`` times each, and show each side's median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, Row, log, render_table, throughput_row, write_keeping_notes

CHUNK = 1 << 26


def _exhaustive(_model_dir: str) -> dict:
    """Per chunk of the 2^32 float32 bit patterns, the blake3 digest of compiled SiLU's output bits (no model)."""
    import blake3
    import mlx.core as mx
    import numpy as np
    from mlx_lm.models.activations import swiglu

    ones = mx.ones((CHUNK,), dtype=mx.float32)
    digests = []
    for start in range(0, 1 << 32, CHUNK):
        x = mx.array(np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32))
        digests.append(blake3.blake3(np.array(swiglu(x, ones)).view(np.uint8)).hexdigest())
    return {"chunks": digests}


def _timed(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _speed(model_dir: str) -> dict:
    """SwiGLU ns an element on a [3072, 384] input, and one [64, 48] forward pass of the model in ms."""
    import mlx.core as mx
    import numpy as np
    from mlx_lm import load
    from mlx_lm.models.activations import swiglu

    rng = np.random.default_rng(0)
    gate, up = (mx.array(rng.standard_normal((3072, 384), dtype=np.float32) * 4) for _ in range(2))
    model, _ = load(model_dir)
    tokens = mx.array(rng.integers(0, 1000, (64, 48)))
    for _ in range(2):  # compile and warm
        mx.eval(swiglu(gate, up), model(tokens))
    swiglu_s = _timed(lambda: mx.eval(swiglu(gate, up)), 20)
    forward_s = _timed(lambda: mx.eval(model(tokens)), 5)
    return {"swiglu_ns": swiglu_s / gate.size * 1e9, "forward_ms": forward_s * 1e3}


def _games(model_dir: str) -> dict:
    """Liar's Dice compact, 64 concurrent games of the model against random: games/s (scoring.py's case)."""
    from scoring import run_case

    return {"games_per_s": run_case(Path(model_dir), "liarsdice", "compact", "new", 64, 64)["games_per_s"]}


def _child(side: str, task: str, model_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ARENA_JIT"}
    if side == "plain":
        env["ARENA_JIT"] = "plain"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([sys.executable, __file__, "--child", task, model_dir, out.name], env=env, check=True,
                       cwd=ROOT)
        return json.loads(Path(out.name).read_text())


def _alternating(task: str, model_dir: str, repeats: int) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {"vector": [], "plain": []}
    for _ in range(repeats):
        for side in runs:
            runs[side].append(_child(side, task, model_dir))
    return runs


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _speed_rows(model_dir: str, label: str, repeats: int) -> list[Row]:
    speed = _alternating("speed", model_dir, repeats)
    games = _alternating("games", model_dir, repeats)
    labels = ("vector JIT", "plain JIT")
    rows = []
    for key, name in (("swiglu_ns", "SwiGLU, [3072, 384]"), ("forward_ms", f"forward pass [64, 48], {label}")):
        vector, plain = _median(speed["vector"], key), _median(speed["plain"], key)
        unit = "ns/element" if key == "swiglu_ns" else "ms"
        rows.append(throughput_row("jit", name, unit, vector, plain, labels, None, ratio=plain / vector,
                                   runs={side: [round(r[key], 3) for r in speed[side]] for side in speed}))
    vector, plain = _median(games["vector"], "games_per_s"), _median(games["plain"], "games_per_s")
    rows.append(throughput_row("jit", f"Liar's Dice compact, 64 games vs random, {label}", "games/s", vector, plain,
                               labels, None, runs={s: [round(r["games_per_s"], 2) for r in games[s]] for s in games}))
    return rows


def _exhaustive_row() -> Row:
    log("jit: SiLU on all 2^32 float32 inputs, each side (about 2 minutes)")
    vector, plain = _child("vector", "exhaustive", "-"), _child("plain", "exhaustive", "-")
    differing = sum(a != b for a, b in zip(vector["chunks"], plain["chunks"], strict=True))
    return Row("jit", "SiLU on every float32 input (2^32), output bits", "chunks differing", differing, None,
               "vector JIT vs plain JIT", "", target="0 of 64", passed=differing == 0)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("TASK", "MODEL", "OUT"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-exhaustive", action="store_true")
    args = parser.parse_args(argv)
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    if args.child:
        task, model_dir, out = args.child
        Path(out).write_text(json.dumps({"exhaustive": _exhaustive, "speed": _speed, "games": _games}[task](model_dir)))
        return 0
    from common import base_model

    with base_model() as (model_dir, label):
        rows = _speed_rows(str(model_dir), label, args.repeats)
    if not args.skip_exhaustive:
        rows.append(_exhaustive_row())
    table = render_table([row.__dict__ for row in rows])
    print(table)
    details = "\n".join(f"- {row.name}: runs {json.dumps(row.details.get('runs'))}" for row in rows if row.details)
    write_keeping_notes(ROOT / "bench" / "results" / "jit.md",
                        f"# MLX's CPU JIT: vector g++ vs plain\n\n`python bench/jit.py`\n\n{table}\n\n{details}\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
