"""SimpleNegotiation on TextArena's ``SimpleNegotiation-v0``: private values, offers, [Accept] and [Deny] in turn.

Each player holds 5..25 of five resources and values each within +-20% of a base value known to all; only its own
values are shown to it. A move is ``[Accept]`` (execute the opponent's standing offer), ``[Deny]`` (pass; a
standing offer stays on the table until it is accepted or replaced) or ``[Offer: 2 Wheat -> 1 Ore]``. The game ends
after ``turns + 1`` moves (TextArena checks its limit before counting the move: ``max_turns`` 10 plays 11 moves,
6 by seat 0); the larger inventory-value gain wins (+1/-1, equal gains draw).

The listed legal actions are a grammar of masked choices, so a local model's move is always well formed and
accepted: ``[Accept]`` only when the opponent's offer stands and the player holds what it asks for; ``[Deny]``
always; offers give one resource for one other, 1..``units`` of each, only what the player holds. Frontier
players write TextArena's own text (bundles included), judged by TextArena's invalid-move rule.

Variant ``spiral: true`` plays SPIRAL's SimpleNegotiation-v1 instead (``arena.games.spiral_negotiation``: Wood and
Gold, 10 of each, fixed opposite values, ``turns`` moves in all, a denied offer withdrawn) with the same grammar over
its two resources; its observation state adds ``resources`` and the traders' public estimate ``base`` of values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.games import spiral_negotiation as spiral
from arena.games.base import Game
from arena.games.negotiation_theory import RESOURCES, Vector, grammar, vector, worth
from arena.games.variants import negotiation_variant

ENV_ID = "SimpleNegotiation-v0"
ACCEPT, DENY = "[Accept]", "[Deny]"


def legal_actions(holdings: Vector, requested: Vector | None, units: int,
                  resources: tuple[str, ...] = RESOURCES) -> tuple[str, ...]:
    """``[Accept]`` when an opponent's offer asking ``requested`` stands and ``holdings`` cover it, ``[Deny]``,
    then every single-resource offer the holder can pay for."""
    accept = (ACCEPT,) if requested is not None and all(h >= n for h, n in zip(holdings, requested, strict=True)) \
        else ()
    offers = tuple(text for give, count, _, _, text in grammar(units, resources) if holdings[give] >= count)
    return accept + (DENY,) + offers


def _side(counts: Vector, resources: tuple[str, ...] = RESOURCES) -> str:
    return ", ".join(f"{n} {r}" for r, n in zip(resources, counts, strict=True) if n) or "nothing"


class NegotiationGame(Game):
    """SimpleNegotiation; variant ``turns`` (TextArena's ``max_turns``, default 10) and ``units`` (the most of one
    resource an offer's side may name, default 3)."""

    validate_variant = staticmethod(negotiation_variant)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {"max_turns": variant["turns"]}

    @property
    def resources(self) -> tuple[str, ...]:
        """The game's resources, in the order of its count vectors."""
        return spiral.RESOURCES if self.variant.get("spiral") else RESOURCES

    def _vector(self, counts: Mapping[str, int]) -> Vector:
        return vector(counts, self.resources) if self.variant.get("spiral") else vector(counts)

    def _holdings(self, game_state: Mapping[str, Any], player: int) -> Vector:
        return self._vector(game_state["player_resources"][player])

    def _values(self, game_state: Mapping[str, Any], player: int) -> Vector:
        return self._vector(game_state["player_values"][player])

    def _offer(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any] | None:
        """The standing offer from ``player``'s side: who made it, what its proposer gives and gets."""
        offer = game_state["current_offer"]
        if not offer:
            return None
        mine = offer["from_player"] == player
        return {"from": "me" if mine else "them", "give": self._vector(offer["offered_resources"]),
                "get": self._vector(offer["requested_resources"])}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        player = self.current_player
        offer = self._offer(game_state, player)
        requested = offer["get"] if offer is not None and offer["from"] == "them" else None
        if not self.variant.get("spiral"):
            return legal_actions(self._holdings(game_state, player), requested, self.variant["units"])
        return legal_actions(self._holdings(game_state, player), requested, self.variant["units"], self.resources)

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        offer = self._offer(game_state, player)
        if offer is None:
            standing = "none"
        elif offer["from"] == "them":
            standing = f"you get {_side(offer['give'], self.resources)} for {_side(offer['get'], self.resources)}"
        else:
            standing = (f"yours stands: {_side(offer['give'], self.resources)} for "
                        f"{_side(offer['get'], self.resources)}")
        held = ", ".join(f"{r} {n} ({v})" for r, n, v in zip(
            self.resources, self._holdings(game_state, player), self._values(game_state, player), strict=True))
        return f"you hold (value each): {held}\noffer: {standing}\nmoves left: {self._moves_left()}\n"

    def _moves_left(self) -> int:
        """Moves left in the game, this one included (SPIRAL's game ends on move ``turns``, 0.7.4's on turns + 1)."""
        return self.variant["turns"] + (0 if self.variant.get("spiral") else 1) - self._ta_state.turn

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        state = {"values": self._values(game_state, player), "have": self._holdings(game_state, player),
                 "offer": self._offer(game_state, player), "moves_left": self._moves_left(),
                 "units": self.variant["units"]}
        return {**state, "resources": spiral.RESOURCES, "base": spiral.BASE_VALUES} if self.variant.get("spiral") \
            else state

    def _start(self, env_kwargs: dict) -> Any:
        if self.variant.get("spiral"):
            self.env_id = spiral.ENV_ID
        env = super()._start(env_kwargs)
        self._start_holdings = [list(self._holdings(env.state.game_state, p)) for p in (0, 1)]
        return env

    def _details(self) -> dict[str, Any]:
        """Both players' values, starting and final holdings, value gains and executed trades (self-accepted
        no-op trades, which TextArena logs but which move nothing, left out)."""
        game_state = self._ta_state.game_state
        values = [list(self._values(game_state, p)) for p in (0, 1)]
        end = [list(self._holdings(game_state, p)) for p in (0, 1)]
        trades = [{"from": int(t["from_player"]), "give": list(self._vector(t["offered_resources"])),
                   "get": list(self._vector(t["requested_resources"]))}
                  for t in game_state["trade_history"]
                  if t["outcome"] == "Accepted" and t["from_player"] != t["to_player"]]
        start = self._start_holdings
        gains = [worth(values[p], end[p]) - worth(values[p], start[p]) for p in (0, 1)]
        return {"values": values, "start": start, "end": end, "value_gain": gains, "trades": trades}


class SpiralNegotiationGame(NegotiationGame):
    """``textarena:SimpleNegotiation-v1``: SPIRAL's game, which is negotiation with ``spiral: true`` forced."""

    @staticmethod
    def validate_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
        return negotiation_variant({**variant, "spiral": True})
