"""Probe: a TicTacToe snapshot's exact policy along the minimax oracle's line, where its loss to minimax comes from.

    python studies/tictactoe_line.py SNAPSHOT_DIR [SNAPSHOT_DIR ...] [--seat 0|1]

The minimax oracle is deterministic, so against it a policy's game is one tree: the oracle's one move, then each of
the model's moves with its probability. The probe prints the model's positions on the most likely path. At each, it
shows the mass on moves that keep the value (``optimal_cells``) and the model's favourite move. Then it prints
``loss_probability``, the figure `eval@rN` publishes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena.core.blas import ensure_fast_blas


def line(table: dict, seat: int) -> list[str]:
    """The most likely game of ``table``'s policy (seat ``seat``) against minimax, one entry a move."""
    from arena.games import tictactoe_theory as ttt

    board, mark, mine, moves = ("",) * 9, "O", ttt.MARKS[seat], []
    while not ttt.ttt_winner(board) and not all(board):
        if mark != mine:
            cell = ttt.ttt_best_move(board, mark)
            moves.append(f"minimax {cell}")
        else:
            policy, good = table[(board, mark)], ttt.optimal_cells(board, mark)
            cell = max(policy, key=policy.get)
            mass = sum(policy.get(c, 0.0) for c in good)
            moves.append(f"model: mass {mass:.3f} on {list(good)}, top {cell} ({policy[cell]:.2f})")
        board, mark = ttt.child(board, cell, mark), ttt.other(mark)
    return moves


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshots", nargs="+", type=Path)
    parser.add_argument("--seat", type=int, choices=(0, 1), default=1)
    args = parser.parse_args(argv)
    ensure_fast_blas()
    from arena.games.tictactoe_theory import loss_probability
    from arena.players.board_policy import ttt_model_policy
    from arena.players.mlx import MLXPlayer

    for snapshot in args.snapshots:
        table = ttt_model_policy(MLXPlayer(snapshot))
        lost = loss_probability(lambda board, mark, table=table: table[(board, mark)], args.seat)
        print(f"{snapshot} (seat {args.seat}): P(lose to minimax) {lost:.3f}")
        for move in line(table, args.seat):
            print(f"  {move}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
