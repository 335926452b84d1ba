"""Two-player Liar's Dice on TextArena's ``LiarsDice-v0-small`` (3 dice each by default, no wild ones).

TextArena accepts a bid that raises quantity or face (neither may drop), and a ``[Call]`` once a bid
stands. It also accepts bids of quantity 0 (vacuous: they cannot even be called) and quantities above the
dice in play (certainly false); the listed legal actions leave both out, so quantities run 1..dice in play.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.games.base import Game
from arena.games.variants import liarsdice_variant

ENV_ID = "LiarsDice-v0-small"
FACES = range(1, 7)


def current_bid(game_state: Mapping[str, Any]) -> tuple[int, int] | None:
    """The standing bid as (quantity, face), or None before the first bid of a round."""
    if game_state["last_bidder_id"] is None:
        return None
    return game_state["current_bid"]["quantity"], game_state["current_bid"]["face_value"]


def legal_actions(bid: tuple[int, int] | None, dice_in_play: int) -> tuple[str, ...]:
    """``[Call]`` when a callable bid stands, then every raising ``[Bid: q, f]`` (1 <= q <= dice in play).

    A raise keeps both quantity and face at least the standing bid's and differs from it. TextArena
    refuses to call a quantity-0 bid.
    """
    low_q, low_f = bid if bid is not None else (1, 1)
    bids = tuple(
        f"[Bid: {q}, {f}]"
        for q in range(max(1, low_q), dice_in_play + 1)
        for f in FACES
        if f >= low_f and (q, f) != bid
    )
    return (("[Call]",) if bid is not None and bid[0] > 0 else ()) + bids


class LiarsDiceGame(Game):
    """Liar's Dice for two; variant ``dice``: dice per player at the start (default 3)."""

    validate_variant = staticmethod(liarsdice_variant)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {"num_dice": variant["dice"]}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return legal_actions(current_bid(game_state), sum(game_state["remaining_dice"].values()))

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        bid = current_bid(game_state)
        return (
            f"dice: {' '.join(map(str, game_state['dice_rolls'][player]))}\n"
            f"opponent dice: {game_state['remaining_dice'][1 - player]}\n"
            f"bid: {'none' if bid is None else f'{bid[0]} of {bid[1]}'}\n"
        )

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        return {
            "dice": list(game_state["dice_rolls"][player]),
            "dice_counts": [game_state["remaining_dice"][0], game_state["remaining_dice"][1]],
            "bid": current_bid(game_state),
        }
