"""The iterated ultimatum game solved exactly: its win/draw/loss value by backward induction, and optimal moves.

TextArena scores the game by who ends with more money (+1/-1, equal totals draw), so it is a finite zero-sum game
of perfect information: the state at a round's start is (round, player 0's lead in dollars), the proposer offers x
of the pool, an accepted offer moves the lead by (pool - 2x) toward the proposer, a rejected one leaves it. Values
are player 0's (+1 win, 0 draw, -1 loss); player 1 minimises them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache


def proposer(variant: Mapping, round_index: int) -> int:
    """Who proposes in round ``round_index`` (0-based): player 0 every round, or alternating from player 0."""
    return round_index % 2 if variant["alternate"] else 0


def _moved(lead: int, by: int, offer: int, pool: int) -> int:
    """Player 0's lead after ``by``'s offer of ``offer`` is accepted."""
    return lead + (pool - 2 * offer) * (1 if by == 0 else -1)


@cache
def _value(pool: int, rounds: int, alternate: bool, round_index: int, lead: int) -> int:
    if round_index == rounds:
        return (lead > 0) - (lead < 0)
    by = round_index % 2 if alternate else 0
    answers = [_answer(pool, rounds, alternate, round_index, lead, x) for x in range(pool + 1)]
    return max(answers) if by == 0 else min(answers)


@cache
def _answer(pool: int, rounds: int, alternate: bool, round_index: int, lead: int, offer: int) -> int:
    by = round_index % 2 if alternate else 0
    accept = _value(pool, rounds, alternate, round_index + 1, _moved(lead, by, offer, pool))
    reject = _value(pool, rounds, alternate, round_index + 1, lead)
    return max(accept, reject) if by == 1 else min(accept, reject)  # the responder's best


def value(variant: Mapping, round_index: int = 0, lead: int = 0) -> int:
    """Player 0's game value at the start of round ``round_index`` with ``lead`` dollars (the whole game: 0, 0)."""
    return _value(variant["pool"], variant["rounds"], variant["alternate"], round_index, lead)


def optimal_offers(variant: Mapping, round_index: int, lead: int) -> tuple[int, ...]:
    """Every offer that keeps the proposer's game value."""
    pool, rounds, alternate = variant["pool"], variant["rounds"], variant["alternate"]
    best = value(variant, round_index, lead)
    return tuple(x for x in range(pool + 1) if _answer(pool, rounds, alternate, round_index, lead, x) == best)


def optimal_answers(variant: Mapping, round_index: int, lead: int, offer: int) -> tuple[bool, ...]:
    """The answers (True: accept) that keep the responder's game value against ``offer``."""
    by = proposer(variant, round_index)
    accept = value(variant, round_index + 1, _moved(lead, by, offer, variant["pool"]))
    reject = value(variant, round_index + 1, lead)
    best = max(accept, reject) if by == 1 else min(accept, reject)
    return tuple(answer for answer, v in ((True, accept), (False, reject)) if v == best)


def optimal_moves(details: Mapping, variant: Mapping) -> tuple[list[int], list[int]]:
    """Per seat, (optimal decisions, decisions) over one game's ``details`` (its rounds: proposer, offer,
    accepted)."""
    good, seen, lead = [0, 0], [0, 0], 0
    for index, played in enumerate(details["rounds"]):
        by, offer = played["proposer"], played["offer"]
        seen[by] += 1
        good[by] += offer in optimal_offers(variant, index, lead)
        seen[1 - by] += 1
        good[1 - by] += played["accepted"] in optimal_answers(variant, index, lead, offer)
        if played["accepted"]:
            lead = _moved(lead, by, offer, variant["pool"])
    return good, seen


def optimal_share(games: Iterable[tuple[Mapping, Mapping, int]]) -> float | None:
    """The share of a player's decisions that keep its game value, over (details, variant, seat) triples."""
    good = seen = 0
    for details, variant, seat in games:
        g, s = optimal_moves(details, variant)
        good, seen = good + g[seat], seen + s[seat]
    return good / seen if seen else None
