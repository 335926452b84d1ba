"""SPIRAL's SimpleNegotiation-v1 (two resources, fixed opposite values) ported to TextArena 0.7.4's two-player state.

A line-by-line port of spiral-rl/spiral's ``spiral/envs/SimpleNegotiation/env.py`` (Apache-2.0; SPIRAL registers it
as ``SimpleNegotiation-v1`` with ``max_turns=10`` on TextArena 0.6.4), registered here as
``arena-SimpleNegotiation-v1``:

- both players start with 10 Wood and 10 Gold; player 0 values Wood 5, Gold 15, player 1 Wood 15, Gold 5;
- a move may ``[Accept]`` the offer made to the mover (it trades if both sides hold their parts; accepting an offer
  not made to you, or without holding what it asks, is invalid), ``[Deny]`` it (the offer is withdrawn), make an
  ``[Offer: 3 Wood -> 2 Gold]`` (a counter-offer implicitly denies the standing one; an offer naming more than the
  mover holds, or one it cannot parse, is invalid), or say anything else (a pass: an offer made to the mover stands);
- the game ends on move ``max_turns`` (SPIRAL checks ``turn + 1 >= max_turns`` before the move counts): 10 moves,
  5 each; the larger inventory-value gain at each player's own values wins (+1/-1), equal gains draw (0/0);
- invalid moves follow TextArena 0.6.4's ``State``, which SPIRAL ran on: the first is re-prompted (the message goes to
  both players), a second in a row ends the game with -1 for the offender and 0 for the other player.
"""

from __future__ import annotations

import re
from typing import Any

import textarena as ta
from textarena.envs.registration import ENV_REGISTRY

ENV_ID = "arena-SimpleNegotiation-v1"
RESOURCES = ("Wood", "Gold")
VALUES = ({"Wood": 5, "Gold": 15}, {"Wood": 15, "Gold": 5})
START = {"Wood": 10, "Gold": 10}
# SPIRAL's env declares base values {Wood: 10, Gold: 30} but never uses them or shows them; arena's traders estimate
# the opponent's values by the two players' mean, 10 and 10 (as TextArena 0.7.4's players know its base values).
BASE_VALUES = (10, 10)
_ADMIN = ta.ObservationType.GAME_ADMIN
_ACTION = ta.ObservationType.GAME_ACTION_DESCRIPTION


class SpiralState(ta.TwoPlayerState):
    """0.7.4's two-player state with TextArena 0.6.4's invalid-move rule (what SPIRAL's env ran under)."""

    def set_invalid_move(self, reason: str) -> None:
        player = self.current_player_id
        if self.error_allowance > self.error_count:
            self.error_count += 1
            self.made_invalid_move = True
            self.add_observation(message=f"Player {player} attempted an invalid move. Reason: {reason} Please resubmit "
                                 "a valid move and remember to follow the game rules to avoid penalties.",
                                 observation_type=_ADMIN)
        else:
            self.rewards = {player: -1, 1 - player: 0}
            for pid in range(2):
                self.game_info[pid]["reason"] = f"Invalid Move: {reason}"
            self.game_info[player]["invalid_move"] = True
            self.add_observation(message=f"Player {player} lost the game by way of invalid move. Reason: {reason}",
                                 observation_type=_ADMIN)
            self.done = True


class SpiralNegotiationEnv(ta.Env):
    """SPIRAL's SimpleNegotiation: Wood and Gold, 10 of each, opposite fixed values, ``max_turns`` moves."""

    def __init__(self, max_turns: int | None = 10) -> None:
        self.max_turns = max_turns
        self.resource_names = list(RESOURCES)
        self.accept_pattern = re.compile(r"\[Accept\]", re.IGNORECASE)
        self.deny_pattern = re.compile(r"\[Deny\]", re.IGNORECASE)
        self.offer_pattern = re.compile(r"\[Offer:\s*(?:I\s+(?:give|offer)\s+)?([^\[\]]+?)\s*\.*\]",
                                        re.IGNORECASE | re.DOTALL)

    def reset(self, num_players: int, seed: int | None = None) -> None:
        self.state = SpiralState(num_players=num_players, max_turns=self.max_turns, seed=seed)
        game_state: dict[str, Any] = {
            "current_offer": None, "player_resources": {0: dict(START), 1: dict(START)},
            "player_values": {0: dict(VALUES[0]), 1: dict(VALUES[1])}, "trade_history": [], "inventory_value": {}}
        for player in (0, 1):
            value = _worth(game_state, player)
            game_state["inventory_value"][player] = {"initial": value, "current": value, "change": 0}
        self.state.reset(game_state=game_state, player_prompt_function=self._prompt)

    def _prompt(self, player_id: int, game_state: dict[str, Any]) -> str:
        """SPIRAL's prompt, word for word."""
        listing = "\n\t+ ".join(
            f"{f'[{res}]':{' '}<8}  Qty: {game_state['player_resources'][player_id][res]:{' '}<2}   "
            f"Value: {game_state['player_values'][player_id][res]}"
            for res in game_state["player_resources"][player_id])
        prompt = (
            f"You are Player {player_id} in the Negotiation Game.\n"
            "You have some resources, and your task is to trade such that the total value of your resources "
            "increases.\n"
            f"The resources and associated values you currently have are:\n\t+ {listing}\n"
            "At each turn, you can talk to your opponent or make a trade offer.\n"
            "Use the following special tokens for actions:\n"
            "  - [Offer]: To make a trade offer.\n"
            "    Format: [Offer: Offered Resources -> Requested Resources]\n"
            "    Example: [Offer: 3 Wood -> 2 Gold]\n"
            "  - [Accept]: To accept an incoming offer.\n"
            "  - [Deny]: To deny an incoming offer (default).\n"
            "YOU CAN INCLUDE ADDITIONAL TEXT BEFORE AND/OR AFTER THESE TOKENS.\n"
            '    Example: "I\'m open to negotiation."\n'
        )
        return prompt + (f"The game lasts for {self.state.max_turns} turns in total.\n" if self.state.max_turns
                         else "The game has no turn limit.\n")

    def step(self, action: str) -> tuple[bool, dict]:
        player = self.state.current_player_id
        self.state.add_observation(from_id=player, message=action, observation_type=ta.ObservationType.PLAYER_ACTION)
        self._answer(player, action)
        self._new_offer(player, action)
        # SPIRAL: "Since turn starts at 0, we check if next turn would exceed limit" (an invalid move included).
        if self.state.max_turns is not None and self.state.turn + 1 >= self.state.max_turns and not self.state.done:
            self._determine_winner()
        return self.state.step()

    def _answer(self, player: int, action: str) -> None:
        """Accept or deny the standing offer (only its recipient may)."""
        offer = self.state.game_state["current_offer"]
        if not offer:
            return
        if player != offer["to_player"]:
            if self.accept_pattern.search(action):
                self.state.set_invalid_move(reason=f"Player {player} tried to accept an offer that was not made to "
                                            "them.")
            return
        if self.accept_pattern.search(action):
            self._trade(player)
        elif self.deny_pattern.search(action):
            self.state.add_observation(message=f"Player {player} denied the trade offer from Player "
                                       f"{offer['from_player']}.", observation_type=_ACTION)
            self._log(offer, player, "Denied")
            self.state.game_state["current_offer"] = None

    def _log(self, offer: dict[str, Any], to_player: int, outcome: str) -> None:
        self.state.game_state["trade_history"].append({
            "from_player": offer["from_player"], "to_player": to_player,
            "offered_resources": offer["offered_resources"],
            "requested_resources": offer["requested_resources"], "outcome": outcome})

    def _trade(self, acceptor: int) -> None:
        """Execute the standing offer if both sides hold their parts (SPIRAL's ``_attempt_to_execute_trade``)."""
        game_state = self.state.game_state
        offer, holdings = game_state["current_offer"], game_state["player_resources"]
        proposer = offer["from_player"]
        proposer_has = _covers(holdings[proposer], offer["offered_resources"])
        acceptor_has = _covers(holdings[acceptor], offer["requested_resources"])
        if proposer_has and acceptor_has:
            for resource, qty in offer["offered_resources"].items():
                holdings[proposer][resource] -= qty
                holdings[acceptor][resource] += qty
            for resource, qty in offer["requested_resources"].items():
                holdings[acceptor][resource] -= qty
                holdings[proposer][resource] += qty
            self.state.add_observation(message=f"Player {acceptor} accepted the trade offer from Player {proposer}.",
                                       observation_type=_ACTION)
            self._log(offer, acceptor, "Accepted")
            self._update_values()
            game_state["current_offer"] = None
        elif not acceptor_has and not proposer_has:
            self.state.add_observation(message="Trade cancelled: Neither player has sufficient resources for the "
                                       "trade.", observation_type=_ACTION)
            game_state["current_offer"] = None
        elif not acceptor_has:
            self.state.set_invalid_move(reason=f"Player {acceptor} tried accepting a trade without having the "
                                        "necessary resources.")
        else:
            self.state.add_observation(message=f"Trade cancelled: Player {proposer} no longer has the resources they "
                                       "offered.", observation_type=_ACTION)
            game_state["current_offer"] = None

    def _new_offer(self, player: int, action: str) -> None:
        """Register an ``[Offer: ...]`` in the action (SPIRAL's ``_check_for_new_offer``)."""
        if self.state.done:
            return
        match = self.offer_pattern.search(action)
        if not match:
            return
        parsed = parse_offer(match.group(1).strip())
        if parsed is None:
            self.state.set_invalid_move(reason=f"Player {player} made a trade offer in an incorrect format.")
            return
        if not _covers(self.state.game_state["player_resources"][player], parsed["offered_resources"]):
            self.state.set_invalid_move(reason=f"Player {player} tried to make a trade offer without having the "
                                        "necessary resources.")
            return
        previous = self.state.game_state["current_offer"]
        if previous is not None and previous["to_player"] == player:
            self.state.add_observation(message=f"Player {player} implicitly denied the previous offer by making a "
                                       "counter-offer.", observation_type=_ACTION)
            self._log(previous, player, "Implicitly Denied")
        self.state.game_state["current_offer"] = {
            "from_player": player, "to_player": 1 - player, "offered_resources": parsed["offered_resources"],
            "requested_resources": parsed["requested_resources"]}
        offered = ", ".join(f"{q} {r}" for r, q in parsed["offered_resources"].items())
        requested = ", ".join(f"{q} {r}" for r, q in parsed["requested_resources"].items())
        self.state.add_observation(message=f"Player {player} made the following offer to Player {1 - player}: "
                                   f"Offered items: {offered} -> Requested items: {requested}",
                                   observation_type=_ACTION)

    def _determine_winner(self) -> None:
        self._update_values()
        change = [self.state.game_state["inventory_value"][p]["change"] for p in (0, 1)]
        if change[0] == change[1]:
            self.state.set_draw(reason="Same change in inventory value for all players. Draw.")
        else:
            winner = 0 if change[0] > change[1] else 1
            self.state.set_winner(winner, reason=f"Player {winner} won by having a larger gain in inventory value.")

    def _update_values(self) -> None:
        for player in (0, 1):
            entry = self.state.game_state["inventory_value"][player]
            entry["current"] = _worth(self.state.game_state, player)
            entry["change"] = entry["current"] - entry["initial"]


def parse_offer(text: str) -> dict[str, dict[str, int]] | None:
    """SPIRAL's ``_parse_offer``: ``3 Wood -> 2 Gold`` (lists split by commas or "and") as offered and requested
    counts; None for anything else (a missing side, an unknown resource, a count below 1)."""
    text = re.sub(r"[.,!?]+$", "", " ".join(text.split()))
    text = re.sub(r"^(I\s+(?:give|offer)\s+)", "", text, flags=re.IGNORECASE)
    parts = re.split(r"\s*->\s*", text)
    if len(parts) != 2:
        return None
    offered, requested = _resources(parts[0].strip()), _resources(parts[1].strip())
    if not offered or not requested:
        return None
    return {"offered_resources": offered, "requested_resources": requested}


def _resources(text: str) -> dict[str, int] | None:
    counts: dict[str, int] = {}
    for item in re.split(r",\s*|\s+and\s+", text, flags=re.IGNORECASE):
        item = item.strip()
        if not item:
            continue
        match = re.match(r"^(\d+)\s+(.+)$", item)
        if not match:
            return None
        qty, name = int(match.group(1)), match.group(2).strip().title()
        name = {"Woods": "Wood", "Golds": "Gold"}.get(name, name)
        if name not in RESOURCES or qty <= 0:
            return None
        counts[name] = counts.get(name, 0) + qty
    return counts


def _covers(holdings: dict[str, int], needed: dict[str, int]) -> bool:
    return all(holdings.get(resource, 0) >= qty for resource, qty in needed.items())


def _worth(game_state: dict[str, Any], player: int) -> int:
    values = game_state["player_values"][player]
    return sum(qty * values[res] for res, qty in game_state["player_resources"][player].items())


if ENV_ID not in ENV_REGISTRY:
    ta.register(id=ENV_ID, entry_point=SpiralNegotiationEnv, default_wrappers=[ta.wrappers.LLMObservationWrapper],
                max_turns=10)
