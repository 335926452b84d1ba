"""Scripted ultimatum policies over the iterated ultimatum game's observation state: greedy, fair, never, minimax.

Each reads ``Observation.state`` (phase, pool, the standing offer, the round, the player's lead in dollars) and
answers with one of the listed legal actions' texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.games.ultimatum import ACCEPT, REJECT, offer_text
from arena.games.ultimatum_theory import optimal_answers, optimal_offers, proposer, value


def greedy_split(state: Mapping[str, Any]) -> str:
    """The money maximiser (the one-shot game's subgame-perfect play): offers $1, accepts any positive offer."""
    if state["phase"] == "responding":
        return ACCEPT if state["offer"] > 0 else REJECT
    return offer_text(min(1, state["pool"]))


def fair_split(state: Mapping[str, Any]) -> str:
    """Offers half the pool (rounded down) and accepts any offer of at least that."""
    half = state["pool"] // 2
    if state["phase"] == "responding":
        return ACCEPT if state["offer"] >= half else REJECT
    return offer_text(half)


def never_split(state: Mapping[str, Any]) -> str:
    """Rejects every offer and offers nothing: no money ever changes hands."""
    return REJECT if state["phase"] == "responding" else offer_text(0)


def minimax_split(state: Mapping[str, Any]) -> str:
    """An optimal move for the win/draw/loss outcome (``ultimatum_theory``): as proposer, of the optimal offers the
    one best for it if accepted, then the largest (the likeliest accepted); as responder, accept when that is
    optimal and the offer is positive."""
    variant, index = state["variant"], state["round"]
    lead0 = state["lead"] if state["seat"] == 0 else -state["lead"]
    sign = 1 if state["seat"] == 0 else -1
    if state["phase"] == "responding":
        answers = optimal_answers(variant, index, lead0, state["offer"])
        return ACCEPT if True in answers and (state["offer"] > 0 or False not in answers) else REJECT
    by = proposer(variant, index)
    pool = variant["pool"]

    def if_accepted(x: int) -> int:
        moved = lead0 + (pool - 2 * x) * (1 if by == 0 else -1)
        return sign * value(variant, index + 1, moved)

    return offer_text(max(optimal_offers(variant, index, lead0), key=lambda x: (if_accepted(x), x)))
