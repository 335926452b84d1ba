"""A model's exact policy over board games' positions: every reachable TicTacToe position, Nim configurations.

Each position is reached in a real game (TicTacToe by playing its moves, Nim as a game's starting piles), so
the prompt and the legal-action order are exactly what the model sees in play; all positions are scored in
batched passes (long full-view prompts in chains that reuse each other's prefixes: arena.players.chained).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from arena.games.base import Observation
from arena.games.nim_theory import Piles
from arena.games.registry import make_game
from arena.games.tictactoe_theory import MARKS, Board, reachable_positions
from arena.players.chained import exact_policy_probs
from arena.players.mlx import MLXPlayer


def cell_of(action: str) -> int:
    """The cell a TicTacToe action ('[4]') marks."""
    return int(action[1:-1])


def _nim_move(action: str) -> tuple[int, int]:
    pile, quantity = action[1:-1].split()
    return int(pile), int(quantity)


def _ttt_observation(board: Board) -> Observation:
    """Play O's and X's cells alternately (O first) from the empty board; the last position is ``board``."""
    cells = {mark: [i for i, c in enumerate(board) if c == mark] for mark in MARKS}
    game = make_game("tictactoe", 0)
    for turn in range(sum(len(v) for v in cells.values())):
        game.step(f"[{cells[MARKS[turn % 2]][turn // 2]}]")
    return game.observation()


@cache
def ttt_observations() -> dict[tuple[Board, str], Observation]:
    """One real observation per reachable non-terminal TicTacToe position (with the mark to move)."""
    return {(board, mark): _ttt_observation(board) for board, mark in reachable_positions()}


def ttt_model_policy(player: MLXPlayer) -> dict[tuple[Board, str], dict[int, float]]:
    """{(board, mark): {cell: probability}} at every reachable position."""
    observations = ttt_observations()
    probabilities = exact_policy_probs(player, list(observations.values()))
    return {key: {cell_of(a): float(p) for a, p in zip(obs.legal_actions, probs, strict=True)}
            for (key, obs), probs in zip(observations.items(), probabilities, strict=True)}


def nim_model_policy(player: MLXPlayer, configurations: Sequence[Piles]) -> dict[Piles, dict[tuple[int, int], float]]:
    """{piles: {(pile, quantity): probability}} at each configuration (the first move of a game from it)."""
    observations = [make_game("nim", 0, {"piles": list(piles)}).observation() for piles in configurations]
    probabilities = exact_policy_probs(player, observations)
    return {tuple(piles): {_nim_move(a): float(p) for a, p in zip(obs.legal_actions, probs, strict=True)}
            for piles, obs, probs in zip(configurations, observations, probabilities, strict=True)}
