"""One table of `studies/games.py` runs on any games: each round's exact measures per game, win rates against
the scripted baselines, CPU and wall minutes and peak RSS.

    python studies/smollm2_arms/table.py RUN.json [RUN.json ...] > TABLE.md
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HEADER = ("| run | round | game | exact measure | win rate vs random | win rate vs oracle | CPU min | wall min "
          "| peak RSS MB |\n|---|---|---|---|---|---|---|---|---|")


def exact_cell(game: str, measures: Mapping[str, Any]) -> str:
    """A game's exact measures, named: exploitability (Kuhn, Leduc), loss to minimax by seat and optimal-move
    mass (TicTacToe), winning-move mass reached and held out (Nim)."""
    if game == "tictactoe":
        loss = measures["loss_vs_minimax"]
        return (f"loss to minimax {loss['seat0']:.4f} / {loss['seat1']:.4f} (seat 0 / 1), "
                f"optimal-move mass {measures['optimal_move_mass']:.4f}")
    if game == "nim":
        return (f"winning-move mass {measures['winning_move_mass']:.4f} reached, "
                f"{measures['winning_move_mass_held_out']:.4f} held out")
    return f"exploitability {measures['exploitability']:.5f}"


def _win_rate(row: Mapping[str, Any], game: str, opponent: str) -> str:
    played = row.get(f"{game}_vs_{opponent}")
    return f"{played['win_rate']:.3f}" if played else "-"


def rows(run: Path) -> list[str]:
    """One markdown row per round and game of ``run``."""
    out = []
    for row in json.loads(run.read_text())["evals"]:
        for game, measures in row["exact"].items():
            out.append(f"| {run.stem} | {row['round']} | {game} | {exact_cell(game, measures)} | "
                       f"{_win_rate(row, game, 'random')} | {_win_rate(row, game, 'oracle')} | "
                       f"{row['cpu_seconds'] / 60:.1f} | {row['seconds'] / 60:.1f} | {row.get('peak_rss_mb', '')} |")
    return out


def main(argv: list[str]) -> int:
    print(HEADER)
    for run in argv:
        print("\n".join(rows(Path(run))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
