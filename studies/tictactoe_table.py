"""Study: full-width NeuRD on TicTacToe's exact table: the pipeline's own targets, no network, by step and threshold.

    python studies/tictactoe_table.py [--rounds 8] [--iterations 20] [--model DIR] [--out FILE]

Each iteration replaces the policy at all 4,520 reachable positions by its full-width NeuRD target
(``arena.train.selfplay.fullwidth.full_width_targets``: exact self-play action values from the game tree), the magnet
moving to the policy at each round's start, as ``train.neurd_values: exact`` does before the fit. This is what the
network is fitted to, without the fit's lag, so it says which ``neurd_lr``, ``neurd_clip`` and weighting a TicTacToe
recipe can reach <= 1% from both seats with. Starts from uniform, or from ``--model``'s own policy. Prints, per setting
and round, the exact exploitability (NashConv / 2) and the exact probability of losing to the minimax oracle from
each seat.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tables import emit_table, exact_table_rounds, uniform_logp

from arena.games import tictactoe_theory as tt
from arena.train.config import TrainConfig
from arena.train.selfplay.fullwidth import as_table, info_states

# (neurd_lr, neurd_clip, neurd_weighting): the recipe's step and its neighbours, at the default's clip and at 12.
SETTINGS = ((4.0, 12.0, "counterfactual"), (8.0, 12.0, "counterfactual"), (16.0, 12.0, "counterfactual"),
            (16.0, 6.0, "counterfactual"), (16.0, 12.0, "onpolicy"))


def start_policy(model: Path | None) -> list[np.ndarray]:
    """Per position, the log-policy over its legal cells: uniform, or ``model``'s (the prompts it sees in play)."""
    if model is None:
        return uniform_logp("tictactoe")
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.train.selfplay.neurd import all_action_logp

    player = MLXPlayer(str(model), MLXPlayerConfig(view="compact", temperature=1.0, max_batch_tokens=65536))
    return all_action_logp(player, list(info_states("tictactoe").observations), 1.0, 65536, "train.max_batch_tokens")


def measures(current: list[np.ndarray]) -> tuple[float, float, float]:
    """Exploitability and the probabilities of losing to minimax from seat 0 and seat 1."""
    table = as_table("tictactoe", current)
    policy = tt.table_policy(table)
    return tt.exploitability(table), tt.loss_probability(policy, 0), tt.loss_probability(policy, 1)


def run(start: list[np.ndarray], lr: float, clip: float, weighting: str, rounds: int,
        iterations: int) -> list[tuple[float, float, float]]:
    """``measures`` at each round's end, stepping the table from ``start`` with the pipeline's targets."""
    config = TrainConfig(objective="neurd", neurd_values="exact", neurd_weighting=weighting, beta=1.0,
                         neurd_clip=clip)
    return [measures(current) for current in exact_table_rounds("tictactoe", start, lr, config, rounds, iterations)]


def table(args: argparse.Namespace) -> list[str]:
    """One row per setting of SETTINGS: each round's ``exploitability (seat 0 / seat 1)``."""
    start = start_policy(args.model)
    rows = ["| neurd_lr | clip | weighting | start | " + " | ".join(f"r{n}" for n in range(1, args.rounds + 1)) + " |",
            "|---" * (args.rounds + 4) + "|"]
    first = "{:.3f} ({:.3f} / {:.3f})".format(*measures(start))
    for lr, clip, weighting in SETTINGS:
        curve = run(start, lr, clip, weighting, args.rounds, args.iterations)
        rows.append(f"| {lr:g} | {clip:g} | {weighting} | {first} | "
                    + " | ".join(f"{e:.4f} ({l0:.4f} / {l1:.4f})" for e, l0, l1 in curve) + " |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=20, help="a round's iterations (the magnet moves each round)")
    parser.add_argument("--model", type=Path, help="start from this model's policy (default: uniform)")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    emit_table(table(args), "TicTacToe: full-width NeuRD on the exact table, exploitability (P(lose to minimax) "
               "seat 0 / seat 1) at each round's end", args, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
