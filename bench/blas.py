"""Figure blas: MLX sgemm GFLOP/s with arena's in-process OpenBLAS against numpy's, and MLX's own reference BLAS.

Run as a script (``python bench/blas.py SHAPES [--reps N] [--budget S]``) it prints MLX's GFLOP/s per shape as
JSON with whatever BLAS its environment chooses: the figure measures the reference BLAS that way, in a child.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

from common import Row, calibrated_calls, interleaved, log, paired_speedup, repeated, throughput_row

from arena.core.blas import ensure_fast_blas


def _shape_name(shape: Sequence[int]) -> str:
    return "x".join(str(n) for n in shape)


def _gflops(shape: Sequence[int], seconds: float) -> float:
    m, k, n = shape
    return 2.0 * m * k * n / seconds / 1e9


def mlx_sgemm_candidates(shapes: Sequence[Sequence[int]], budget_s: float) -> dict[str, Callable[[], float]]:
    """Per shape (M, K, N), a candidate timing one MLX float32 product (M x K) @ (K x N), evaluated."""
    import mlx.core as mx
    import numpy as np

    rng = np.random.default_rng(0)
    out = {}
    for m, k, n in shapes:
        a = mx.array(rng.standard_normal((m, k), dtype=np.float32))
        b = mx.array(rng.standard_normal((k, n), dtype=np.float32))
        mx.eval(a, b)
        product = lambda a=a, b=b: mx.eval(a @ b)  # noqa: E731
        out[_shape_name((m, k, n))] = repeated(product, calibrated_calls(product, budget_s))
    return out


def numpy_sgemm_candidates(shapes: Sequence[Sequence[int]], budget_s: float) -> dict[str, Callable[[], float]]:
    """Per shape (M, K, N), a candidate timing one numpy float32 product (numpy's own OpenBLAS)."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = {}
    for m, k, n in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        product = lambda a=a, b=b: a @ b  # noqa: E731
        out[_shape_name((m, k, n))] = repeated(product, calibrated_calls(product, budget_s))
    return out


def reference_blas_gflops(shapes: Sequence[Sequence[int]], reps: int, budget_s: float) -> dict[str, float]:
    """MLX's bundled reference BLAS, measured in a subprocess (the BLAS is chosen when mlx is imported)."""
    env = {**os.environ, "ARENA_BLAS": "reference"}
    spec = ",".join(_shape_name(s) for s in shapes)
    done = subprocess.run([sys.executable, __file__, spec, "--reps", str(reps), "--budget", str(budget_s)],
                          env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(done.stdout)


def _shape_rows(shape: Sequence[int], times: Mapping[str, list[float]], reference: Mapping[str, float],
                overhead_us: Mapping[str, float], ours_label: str) -> list[Row]:
    """One shape's rows: MLX against numpy (the target), and against MLX's reference BLAS (context)."""
    key = _shape_name(shape)
    mlx_s, numpy_s = statistics.median(times[f"mlx {key}"]), statistics.median(times[f"numpy {key}"])
    note = (f"per-call overhead (a 1x1x1 product): MLX {overhead_us['mlx']:.0f} us, numpy "
            f"{overhead_us['numpy']:.0f} us; a call at this shape took {mlx_s * 1e6:.0f} us in MLX")
    return [
        throughput_row("blas", f"sgemm {key} (MxKxN)", "GFLOP/s", _gflops(shape, mlx_s), _gflops(shape, numpy_s),
                       (ours_label, "numpy (its own OpenBLAS)"), 0.8, note,
                       paired_speedup(times[f"mlx {key}"], times[f"numpy {key}"]),
                       samples_ours=times[f"mlx {key}"], samples_reference=times[f"numpy {key}"],
                       overhead_us=overhead_us),
        throughput_row("blas", f"sgemm {key}, MLX reference BLAS", "GFLOP/s", _gflops(shape, mlx_s), reference[key],
                       (ours_label, "MLX bundled reference BLAS"), None,
                       "context: what ARENA_BLAS=reference (or no OpenBLAS) would cost"),
    ]


def figure(quick: bool) -> list[Row]:
    """MLX and numpy products alternating at each shape, then MLX's reference BLAS in a child process."""
    from arena.core.blas import blas_info

    # 2048x768x768: a transformer-sized product; 168x128x384: the embedded model's MLP up-projection on a
    # Kuhn scoring batch (12 distinct prompts x 14 tokens, hidden 128, ffn 384).
    shapes = [(512, 256, 256), (168, 128, 384)] if quick else [(2048, 768, 768), (168, 128, 384)]
    reps, budget = (3, 0.05) if quick else (7, 0.3)
    # A 1x1x1 product costs nothing to compute: its time is each library's per-call overhead (for MLX: building
    # the graph and handing it to its CPU stream), which small shapes pay on top of the BLAS.
    overhead = (1, 1, 1)
    numpy_candidates = numpy_sgemm_candidates((*shapes, overhead), budget)
    mlx_candidates = mlx_sgemm_candidates((*shapes, overhead), budget)
    candidates = {}
    for key in mlx_candidates:
        candidates[f"mlx {key}"] = mlx_candidates[key]
        candidates[f"numpy {key}"] = numpy_candidates[key]
    log(f"blas: {', '.join(mlx_candidates)} x {reps} (alternating MLX / numpy)")
    times = interleaved(candidates, reps)
    log("blas: MLX with its reference BLAS (subprocess)")
    reference = reference_blas_gflops(shapes, max(1, reps // 2), budget)
    info = blas_info()
    ours_label = f"MLX + {info['blas'].split()[0]} ({info['threads']} thread)"
    overhead_us = {lib: statistics.median(times[f"{lib} {_shape_name(overhead)}"]) * 1e6 for lib in ("mlx", "numpy")}
    return [row for shape in shapes for row in _shape_rows(shape, times, reference, overhead_us, ours_label)]


def main(argv: Sequence[str] | None = None) -> int:
    """Print MLX GFLOP/s per shape as JSON (the BLAS is whatever ``ensure_fast_blas`` chose in this process)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("shapes", help="comma-separated MxKxN shapes, e.g. 512x256x256,168x128x384")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of products per timed call")
    args = parser.parse_args(argv)
    shapes = [tuple(int(n) for n in part.split("x")) for part in args.shapes.split(",")]
    times = interleaved(mlx_sgemm_candidates(shapes, args.budget), args.reps)
    print(json.dumps({_shape_name(s): _gflops(s, statistics.median(times[_shape_name(s)])) for s in shapes}))
    return 0


if __name__ == "__main__":
    ensure_fast_blas()  # before anything imports mlx (ARENA_BLAS=reference in the environment keeps MLX's own)
    sys.exit(main())
