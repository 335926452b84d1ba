"""Negotiation's measures per round from a games study's JSON (studies/games.py): one markdown row per round.

    python studies/negotiation_measures.py studies/results/negotiation_rounds.json \
        [--out studies/results/negotiation_rounds_measures.md]

Per round and opponent (random, oracle = the greedy trader, the responder): win rate (draws half) with its Wilson
interval, the model's and the opponent's mean inventory-value gain, accepted trades, the Pareto-improving share, and
against the responder the value left on the table with its 95% interval.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from arena.core.artifacts import atomic_write_text


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(study: dict) -> str:
    """The table: a row per (round, opponent) of every negotiation entry in the study's evals."""
    lines = [f"Command: `{study['command']}`", "",
             "| round | opponent | win rate [95%] | value gain | opp. gain | trades | Pareto share | "
             "value left [95%] |",
             "|---|---|---|---|---|---|---|---|"]
    for evaluation in sorted(study["evals"], key=lambda e: e["round"]):
        for key, row in evaluation.items():
            if not (key.startswith("negotiation") and "_vs_" in key):
                continue
            left = row.get("value_left")
            left_cell = f"{left['left']:.1f} [{left['left_low']:.1f}, {left['left_high']:.1f}]" if left else "-"
            lines.append(f"| {evaluation['round']} | {key.split('_vs_')[1]} | {row['win_rate']:.3f} "
                         f"[{row['low']:.3f}, {row['high']:.3f}] | {_cell(row['value_gain'])} | "
                         f"{_cell(row['opponent_value_gain'])} | {row['accepted']} | {_cell(row['pareto_share'], 3)} | "
                         f"{left_cell} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("--out", type=Path, default=Path("studies/results/negotiation_rounds_measures.md"))
    args = parser.parse_args()
    text = render(json.loads(args.study.read_text()))
    atomic_write_text(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
