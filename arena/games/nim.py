"""Nim on TextArena's ``Nim-v0``: remove at least one object from one pile; whoever takes the last object wins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.games.base import Game
from arena.games.variants import nim_variant

ENV_ID = "Nim-v0"


def legal_actions(piles: Sequence[int]) -> tuple[str, ...]:
    """Every ``[pile quantity]`` with 1 <= quantity <= that pile's size."""
    return tuple(f"[{i} {q}]" for i, size in enumerate(piles) for q in range(1, size + 1))


def opening_moves(piles: Sequence[int]) -> list[str]:
    """The moves an opening may play: every legal move but those taking the last object (the game runs on)."""
    total = sum(piles)
    return [f"[{i} {q}]" for i, size in enumerate(piles) for q in range(1, min(size, total - 1) + 1)]


class NimGame(Game):
    """Nim; variant ``piles``: a non-empty list of pile sizes, each >= 1 (TextArena's default [3, 4, 5]); ``opening``:
    up to that many random moves before the players' first decision."""

    validate_variant = staticmethod(nim_variant)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        # A copy: the env keeps the list and must never share it with the variant.
        return {"piles": list(variant["piles"])}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return legal_actions(game_state["piles"])

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        return f"piles: {' '.join(map(str, game_state['piles']))}\n"

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        return {"piles": list(game_state["piles"])}

    def _opening_moves(self, game_state: Mapping[str, Any]) -> list[str]:
        return opening_moves(game_state["piles"])
