"""Nim on TextArena's ``Nim-v0``: remove at least one object from one pile; whoever takes the last object wins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.errors import ArenaError
from arena.games.base import Game, reject_unknown_keys, require_int

ENV_ID = "Nim-v0"


def legal_actions(piles: Sequence[int]) -> tuple[str, ...]:
    """Every ``[pile quantity]`` with 1 <= quantity <= that pile's size."""
    return tuple(f"[{i} {q}]" for i, size in enumerate(piles) for q in range(1, size + 1))


class NimGame(Game):
    """Nim; variant ``piles``: a non-empty list of pile sizes, each >= 1 (TextArena's default [3, 4, 5])."""

    DEFAULTS: Mapping[str, Any] = {"piles": [3, 4, 5]}

    @staticmethod
    def validate_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
        reject_unknown_keys("nim", variant, NimGame.DEFAULTS)
        piles = variant.get("piles", NimGame.DEFAULTS["piles"])
        if isinstance(piles, (str, bytes)) or not isinstance(piles, Sequence) or len(piles) == 0:
            raise ArenaError(f"nim variant 'piles' must be a non-empty list of ints >= 1, got {piles!r}")
        return {"piles": [require_int("nim", "piles", size, 1) for size in piles]}

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
