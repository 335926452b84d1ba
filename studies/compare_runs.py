"""Overlay one exact measure of several `studies/games.py` runs: one PNG of curves and a markdown table by round.

Usage (from the repository root):
    python studies/compare_runs.py [--game 'kuhn[rounds=5]'] [--key exploitability] --png OUT.png LABEL=RUN.json ...

Each RUN.json is a `studies/games.py` output (its ``evals``); the game label and the (dotted) measure are named as
`dvc metrics show` names them under ``exact``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from matplotlib.figure import Figure

from arena.report.gameplots import exact_series
from arena.report.plots import _png


def curve(run: Path, game: str, key: str) -> list[tuple[int, float]]:
    """The (round, value) points of ``game``'s exact measure ``key`` in one run's eval@r files."""
    series = exact_series(json.loads(run.read_text())["evals"])
    points = series.get(game, {}).get(key)
    if not points:
        raise SystemExit(f"{run}: no exact measure {key!r} of {game!r}; it has "
                         f"{ {g: sorted(m) for g, m in series.items()} }")
    return points


def table(curves: dict[str, list[tuple[int, float]]]) -> str:
    """A markdown table: a row per run, its values by round."""
    last = max(r for points in curves.values() for r, _ in points)
    lines = ["| run | " + " | ".join(str(r) for r in range(last + 1)) + " |",
             "|---|" + "---|" * (last + 1)]
    for label, points in curves.items():
        values = dict(points)
        lines.append(f"| {label} | " + " | ".join(f"{values[r]:.3f}" if r in values else "" for r in range(last + 1))
                     + " |")
    return "\n".join(lines)


def plot(curves: dict[str, list[tuple[int, float]]], measure: str) -> bytes:
    """The curves on one axis."""
    figure = Figure(figsize=(7.5, 4.2))
    ax = figure.subplots()
    for label, points in curves.items():
        ax.plot([r for r, _ in points], [v for _, v in points], marker=".", label=label)
    ax.set(xlabel="round", ylabel=measure)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    figure.tight_layout()
    return _png(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="kuhn[rounds=5]")
    parser.add_argument("--key", default="exploitability")
    parser.add_argument("--png", type=Path, required=True)
    parser.add_argument("runs", nargs="+", help="LABEL=RUN.json")
    args = parser.parse_args(argv)
    curves = {label: curve(Path(path), args.game, args.key)
              for label, _, path in (r.partition("=") for r in args.runs)}
    args.png.write_bytes(plot(curves, f"{args.game} {args.key}"))
    print(table(curves))
    return 0


if __name__ == "__main__":
    sys.exit(main())
