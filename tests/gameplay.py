"""Test-only helper: play one game between two players (the real batched runner is arena/match.py)."""

from __future__ import annotations

import dataclasses

from arena.games.base import Game, GameResult
from arena.players.base import Player


def play_game(game: Game, players: tuple[Player, Player], sample_seed: int) -> GameResult:
    """Step ``game`` to the end; each decision's sample key is a function of the seed and the move index."""
    while not game.done:
        observation = game.observation()
        key = sample_seed * 1_000 + len(game.actions)
        decision = players[observation.player_id].act(dataclasses.replace(observation, sample_key=key))
        game.step(decision.action)
    return game.result()
