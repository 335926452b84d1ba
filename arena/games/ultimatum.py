"""The iterated ultimatum game on TextArena's ``IteratedUltimatumGame-v0``: offers of the pool, accept or reject.

Each round the proposer offers ``[Offer: $X]`` of a ``pool`` (0 <= X <= pool) and the responder answers ``[Accept]``
(the proposer keeps pool - X, the responder gets X) or ``[Reject]`` (both get nothing). Player 0 proposes every
round, or (``alternate``) the responder proposes next. After ``rounds`` rounds the player with more money wins
(+1/-1; equal totals draw). The game draws nothing at random: every seed deals the same game.

The listed legal actions are the whole move grammar (every offer, or the two answers), so a local model's move is
always well formed; they are TextArena's own text, which frontier players write too. Its exact theory
(``ultimatum_theory``) scores every decision as optimal or not for the win/draw/loss outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.games.base import Game
from arena.games.variants import ultimatum_variant

ENV_ID = "IteratedUltimatumGame-v0"
ACCEPT, REJECT = "[Accept]", "[Reject]"


def offer_text(offer: int) -> str:
    """TextArena's offer syntax: ``[Offer: $3]``."""
    return f"[Offer: ${offer}]"


class UltimatumGame(Game):
    """Iterated ultimatum; variant ``pool`` (default 50), ``rounds`` (default 5), ``alternate`` (default false)."""

    validate_variant = staticmethod(ultimatum_variant)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {"pool": variant["pool"], "max_turns": 2 * variant["rounds"], "alternate_roles": variant["alternate"]}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        if game_state["phase"] == "responding":
            return ACCEPT, REJECT
        return tuple(offer_text(x) for x in range(game_state["pool"] + 1))

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        totals = game_state["player_totals"]
        head = f"round {game_state['round_number']} of {self.variant['rounds']}, pool ${game_state['pool']}"
        if game_state["phase"] == "responding":
            offer = game_state["current_offer"]
            move = f"they offer you ${offer}, keeping ${game_state['pool'] - offer}"
        else:
            move = "you propose"
        return f"{head}: {move}\nmoney: you ${totals[player]}, them ${totals[1 - player]}\n"

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        totals = game_state["player_totals"]
        return {"phase": game_state["phase"], "pool": game_state["pool"], "offer": game_state["current_offer"],
                "round": game_state["round_number"] - 1, "lead": totals[player] - totals[1 - player],
                "seat": player, "variant": dict(self.variant)}

    def _details(self) -> dict[str, Any]:
        """Each round's proposer, offer and answer, and both players' money."""
        game_state = self._ta_state.game_state
        rounds = [{"proposer": int(r["proposer"]), "offer": int(r["offer"]), "accepted": r["decision"] == "Accept"}
                  for r in game_state["round_history"]]
        return {"rounds": rounds, "money": [int(game_state["player_totals"][p]) for p in (0, 1)]}
