"""Scripted negotiation policies over SimpleNegotiation's observation state: greedy, fair, never, degenerate ones.

Each reads ``Observation.state`` (own values and holdings, the standing offer) and the listed legal actions, and
judges offers by its own private values; where it needs the opponent's values it uses the public base values
(each private value lies within +-20% of them).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arena.games.negotiation import ACCEPT, DENY
from arena.games.negotiation_theory import BASE_VALUES, grammar, parsed_offers, worth
from arena.games.variants import NEGOTIATION_MAX_UNITS

Offer = tuple[tuple[int, ...], tuple[int, ...]]


def parse_listed_offer(action: str) -> Offer:
    """The (give, get) vectors of a listed single-resource offer ``[Offer: 2 Wheat -> 1 Ore]``."""
    return parsed_offers(NEGOTIATION_MAX_UNITS)[action]


def incoming_gain(state: Mapping[str, Any]) -> int | None:
    """What accepting the opponent's standing offer is worth to the player (None: no opponent offer stands)."""
    offer = state["offer"]
    if offer is None or offer["from"] != "them":
        return None
    return worth(state["values"], offer["give"]) - worth(state["values"], offer["get"])


def proposer_base_gain(state: Mapping[str, Any]) -> int:
    """The standing offer's gain to its proposer at the base values (the responder's estimate of it)."""
    offer = state["offer"]
    return worth(BASE_VALUES, offer["get"]) - worth(BASE_VALUES, offer["give"])


def _gains(values: Sequence[int], offer: tuple[int, int, int, int, str]) -> tuple[int, int]:
    """(own gain at own values, the opponent's gain at the base values) of a grammar offer."""
    give, n, get, m, _ = offer
    return values[get] * m - values[give] * n, BASE_VALUES[give] * n - BASE_VALUES[get] * m


def best_offer(state: Mapping[str, Any], legal: Sequence[str], key: Callable[[int, int], float]) -> str:
    """The listed offer with the largest ``key(own gain, opponent's base gain)`` among those positive for both
    (ties: the first listed); ``[Deny]`` when there is none."""
    best, best_key = DENY, None
    listed = set(legal)
    for offer in grammar(state["units"]):
        action = offer[4]
        if action not in listed:
            continue
        own, theirs = _gains(state["values"], offer)
        if own > 0 and theirs > 0 and (best_key is None or key(own, theirs) > best_key):
            best, best_key = action, key(own, theirs)
    return best


def greedy_move(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """Accept any offer that raises its own value; else propose the offer of largest own gain that the opponent
    would gain from at the base values."""
    gain = incoming_gain(state)
    if gain is not None and gain > 0 and ACCEPT in legal:
        return ACCEPT
    return best_offer(state, legal, lambda own, theirs: own)


def fair_move(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """Accept an offer that raises its own value by at least what the proposer gains (at the base values); else
    propose the offer with the largest smaller side of (own gain, opponent's base gain): the most even split."""
    gain = incoming_gain(state)
    if gain is not None and gain > 0 and gain >= proposer_base_gain(state) and ACCEPT in legal:
        return ACCEPT
    return best_offer(state, legal, lambda own, theirs: min(own, theirs))


def responder_move(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """Accept exactly the offers that raise its own value (the value best response to one offer); never propose."""
    gain = incoming_gain(state)
    return ACCEPT if gain is not None and gain > 0 and ACCEPT in legal else DENY


def accept_all_move(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """Accept whatever stands and can be paid for; else pass (degenerate)."""
    return ACCEPT if ACCEPT in legal else DENY


def offer_spam_move(legal: Sequence[str], rng: random.Random) -> str:
    """A uniformly random listed offer every move, never accepting (degenerate)."""
    offers = [action for action in legal if action.startswith("[Offer")]
    return offers[rng.randrange(len(offers))] if offers else DENY


# Games whose observation state names their own resources and public base values (negotiation with spiral: true:
# Wood and Gold) are judged with those instead of TextArena 0.7.4's five; the same policies otherwise.
def stated_best_offer(state: Mapping[str, Any], legal: Sequence[str], key: Callable[[int, int], float]) -> str:
    """``best_offer`` over the state's own resources, with the opponent's gain at the state's ``base`` values."""
    best, best_key = DENY, None
    listed, values, base = set(legal), state["values"], state["base"]
    for give, n, get, m, action in grammar(state["units"], tuple(state["resources"])):
        if action not in listed:
            continue
        own, theirs = values[get] * m - values[give] * n, base[give] * n - base[get] * m
        if own > 0 and theirs > 0 and (best_key is None or key(own, theirs) > best_key):
            best, best_key = action, key(own, theirs)
    return best


def stated_greedy_move(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """``greedy_move`` over the state's own resources and base values."""
    gain = incoming_gain(state)
    if gain is not None and gain > 0 and ACCEPT in legal:
        return ACCEPT
    return stated_best_offer(state, legal, lambda own, theirs: own)


def stated_fair_move(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """``fair_move`` over the state's own resources and base values."""
    gain, offer = incoming_gain(state), state["offer"]
    if gain is not None and gain > 0 and ACCEPT in legal and \
            gain >= worth(state["base"], offer["get"]) - worth(state["base"], offer["give"]):
        return ACCEPT
    return stated_best_offer(state, legal, lambda own, theirs: min(own, theirs))
