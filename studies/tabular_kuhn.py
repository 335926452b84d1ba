"""Compare self-play stabilisers for tabular GRPO on Kuhn poker: exact exploitability curves, a table, a PNG.

Usage (from the repository root):
    python studies/tabular_kuhn.py [--steps 3000] [--seeds 5] [--jobs 2] [--png curves.png] [--json runs.json]

Every preset in arena.train.tabular.STUDY_PRESETS is run for each seed; each evaluation records the
exact exploitability of the last iterate and of the snapshot pool's reach-weighted average policy.
The table shows seed means at three points of the budget, the mean over the last quarter of the
run (where cycling shows), the spread over seeds, and how many games the seed-mean curve needs to
reach 0.10 for the first time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before tabular imports mlx

# isort: split
import numpy as np  # noqa: E402
from tabular import STUDY_PRESETS, TabularRun, preset, train_tabular  # noqa: E402

from arena.core.artifacts import atomic_write_json  # noqa: E402

UNIFORM_EXPLOITABILITY = 11 / 24
TARGET = 0.10


def _run(job: tuple[str, int, int, int]) -> tuple[str, int, float, TabularRun]:
    name, seed, steps, eval_interval = job
    started = time.perf_counter()
    run = train_tabular(preset(name, steps=steps, seed=seed, eval_interval=eval_interval))
    return name, seed, time.perf_counter() - started, run


def _games_to_target(games: np.ndarray, curve: np.ndarray) -> str:
    below = np.flatnonzero(curve <= TARGET)
    return f"{games[below[0]] / 1000:.0f}k" if below.size else "never"


def summarise(runs: dict[str, list[TabularRun]]) -> list[dict[str, object]]:
    """One row per preset: seed-mean exploitability at 1/6, 1/2 and all of the budget, tail means, spread."""
    rows = []
    for name, seeded in runs.items():
        games = np.array([point.games for point in seeded[0].curve])
        last = np.array([[point.last for point in run.curve] for run in seeded])
        average = np.array([[point.average for point in run.curve] for run in seeded])
        checkpoints = [len(games) // 6, len(games) // 2, len(games) - 1]
        tail = slice(len(games) * 3 // 4, None)
        rows.append(
            {
                "preset": name,
                "checkpoint_games": [int(games[i]) for i in checkpoints],
                "last": [float(last[:, i].mean()) for i in checkpoints],
                "average": [float(average[:, i].mean()) for i in checkpoints],
                "last_tail": float(last[:, tail].mean()),
                "last_tail_seed_range": [
                    float(last[:, tail].mean(axis=1).min()),
                    float(last[:, tail].mean(axis=1).max()),
                ],
                "average_tail": float(average[:, tail].mean()),
                "last_games_to_target": _games_to_target(games, last.mean(axis=0)),
                "average_games_to_target": _games_to_target(games, average.mean(axis=0)),
            }
        )
    return rows


def print_table(rows: list[dict[str, object]], seeds: int) -> None:
    points = "/".join(f"{games // 1000}k" for games in rows[0]["checkpoint_games"])
    print(f"exact exploitability, mean over {seeds} seeds (uniform random = {UNIFORM_EXPLOITABILITY:.3f})")
    header = (
        f"{'preset':27s} {'last iterate @ ' + points:>28s} {'tail':>6s} {'tail range':>13s} {'to<=0.1':>8s}"
        f" | {'average policy @ ' + points:>28s} {'tail':>6s} {'to<=0.1':>8s}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        last = " ".join(f"{value:.3f}" for value in row["last"])
        average = " ".join(f"{value:.3f}" for value in row["average"])
        low, high = row["last_tail_seed_range"]
        print(
            f"{row['preset']:27s} {last:>28s} {row['last_tail']:6.3f} {f'{low:.3f}-{high:.3f}':>13s}"
            f" {row['last_games_to_target']:>8s} | {average:>28s} {row['average_tail']:6.3f}"
            f" {row['average_games_to_target']:>8s}"
        )


def plot(runs: dict[str, list[TabularRun]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    colours = plt.get_cmap("tab20").colors  # distinct colours for up to 20 presets
    for index, (name, seeded) in enumerate(runs.items()):
        games = np.array([point.games for point in seeded[0].curve]) / 1000
        for axis, field in zip(axes, ("last", "average"), strict=True):
            values = np.array([[getattr(point, field) for point in run.curve] for run in seeded])
            colour = colours[(2 * index) % 20 + (2 * index) // 20]
            axis.plot(games, values.mean(axis=0), label=name, linewidth=1.4, color=colour)
            axis.fill_between(games, values.min(axis=0), values.max(axis=0), color=colour, alpha=0.10)
    for axis, title in zip(axes, ("last iterate", "reach-weighted average of the snapshot pool"), strict=True):
        axis.axhline(UNIFORM_EXPLOITABILITY, color="grey", linestyle="--", linewidth=0.8)
        axis.set_yscale("log")
        axis.set_xlabel("games played (thousands)")
        axis.set_title(title)
        axis.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("exact exploitability (NashConv / 2); band = seed min-max")
    axes[1].legend(fontsize=8, loc="upper right")
    figure.suptitle("Tabular GRPO self-play on Kuhn poker")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="optimiser steps per run (64 games each)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per preset")
    parser.add_argument("--eval-interval", type=int, default=100)
    parser.add_argument("--presets", default=",".join(STUDY_PRESETS), help="comma-separated preset names")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--png", type=Path, help="write the curves here")
    parser.add_argument("--json", type=Path, help="write every run's config and curve here")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.presets.split(",") if name.strip()]
    unknown = [name for name in names if name not in STUDY_PRESETS]
    if unknown:
        parser.error(f"unknown presets {unknown}; choose from {', '.join(STUDY_PRESETS)}")
    jobs = [(name, seed, args.steps, args.eval_interval) for name in names for seed in range(args.seeds)]
    started = time.perf_counter()
    if args.jobs > 1:
        # spawn: MLX is already initialised in this process, and forking it is not safe.
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = pool.map(_run, jobs)
    else:
        results = [_run(job) for job in jobs]
    runs: dict[str, list[TabularRun]] = {name: [] for name in names}
    for name, _, _, run in results:
        runs[name].append(run)
    rows = summarise(runs)
    print_table(rows, args.seeds)
    run_seconds = [seconds for _, _, seconds, _ in results]
    print(
        f"\n{len(results)} runs in {time.perf_counter() - started:.0f} s wall "
        f"({np.mean(run_seconds):.1f} s per run of {args.steps} steps)"
    )
    if args.png:
        plot(runs, args.png)
        print(f"wrote {args.png}")
    if args.json:
        atomic_write_json(
            args.json,
            {"summary": rows, "runs": {name: [run.to_dict() for run in seeded] for name, seeded in runs.items()}},
        )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
