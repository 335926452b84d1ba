"""SimpleNegotiation's arithmetic: offers as count vectors, value gains, Pareto share, and the value left on the table.

A trade is ``(proposer, give, get)`` with ``give``/``get`` count vectors in ``RESOURCES`` order: the proposer hands
over ``give`` and receives ``get``. Values are linear (quantity times the owner's private value), so a trade's gain
to each side is a dot product and a sequence's gain is the sum of its trades' gains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache

RESOURCES = ("Wheat", "Wood", "Sheep", "Brick", "Ore")
# TextArena's base values; each player's private value is drawn within +-20% of these (SimpleNegotiationEnv.reset).
BASE_VALUES = (5, 10, 15, 25, 40)

Vector = tuple[int, ...]


def vector(counts: Mapping[str, int], resources: Sequence[str] = RESOURCES) -> Vector:
    """A resource -> count mapping as a vector in ``resources`` order (missing resources: 0)."""
    unknown = set(counts) - set(resources)
    if unknown:
        raise ValueError(f"unknown resource(s) {sorted(unknown)}; resources are {list(resources)}")
    return tuple(int(counts.get(r, 0)) for r in resources)


def worth(values: Sequence[int], counts: Sequence[int]) -> int:
    """What ``counts`` are worth at ``values``."""
    return sum(v * n for v, n in zip(values, counts, strict=True))


def offer_text(give: Sequence[int], get: Sequence[int], resources: Sequence[str] = RESOURCES) -> str:
    """TextArena's offer syntax for a give/get pair: ``[Offer: 2 Wheat -> 1 Ore]``."""
    def side(counts: Sequence[int]) -> str:
        return ", ".join(f"{n} {r}" for r, n in zip(resources, counts, strict=True) if n)

    return f"[Offer: {side(give)} -> {side(get)}]"


def single_offers(units: int, size: int = len(RESOURCES)) -> list[tuple[Vector, Vector]]:
    """The offer grammar: one resource given for one other resource, 1..``units`` of each, in a fixed order (over
    ``size`` resources)."""
    return [(_unit(a, n, size), _unit(b, m, size)) for a in range(size) for n in range(1, units + 1)
            for b in range(size) if b != a for m in range(1, units + 1)]


@cache
def grammar(units: int, resources: tuple[str, ...] = RESOURCES) -> tuple[tuple[int, int, int, int, str], ...]:
    """The offer grammar as (given resource index, count, requested resource index, count, text), in the order of
    ``single_offers``; built once per bound (and resource list: SPIRAL's game trades Wood and Gold)."""
    size = len(resources)
    return tuple((a, n, b, m, offer_text(_unit(a, n, size), _unit(b, m, size), resources))
                 for a in range(size) for n in range(1, units + 1)
                 for b in range(size) if b != a for m in range(1, units + 1))


@cache
def parsed_offers(units: int, resources: tuple[str, ...] = RESOURCES) -> dict[str, tuple[Vector, Vector]]:
    """Each grammar offer's text -> its (give, get) vectors."""
    size = len(resources)
    return {text: (_unit(a, n, size), _unit(b, m, size)) for a, n, b, m, text in grammar(units, resources)}


@cache
def _unit(index: int, count: int, size: int = len(RESOURCES)) -> Vector:
    return tuple(count if i == index else 0 for i in range(size))


def trade_gains(values: Sequence[Sequence[int]], proposer: int, give: Sequence[int], get: Sequence[int]
                ) -> tuple[int, int]:
    """Each seat's inventory-value change from one executed trade (seat order, not proposer order)."""
    mine = worth(values[proposer], get) - worth(values[proposer], give)
    theirs = worth(values[1 - proposer], give) - worth(values[1 - proposer], get)
    return (mine, theirs) if proposer == 0 else (theirs, mine)


def pareto_counts(details: Iterable[Mapping]) -> tuple[int, int]:
    """(accepted trades that raise both sides' values strictly, accepted trades) over games' ``details``."""
    improving = total = 0
    for game in details:
        for trade in game["trades"]:
            gains = trade_gains(game["values"], trade["from"], trade["give"], trade["get"])
            total += 1
            improving += gains[0] > 0 and gains[1] > 0
    return improving, total


def answerable_offers(seat: int, turns: int) -> int:
    """How many of ``seat``'s offers the other seat can still answer in a game of ``turns`` moves in all.

    Seat 0 moves at moves 1, 3, 5, ...; an offer on the game's last move is never answered.
    """
    own = [move for move in range(1, turns + 1) if (move - 1) % 2 == seat]
    return sum(move < turns for move in own)


def best_extraction(values: Sequence[Sequence[int]], holdings: Sequence[Sequence[int]], seat: int, offers: int,
                    units: int) -> int:
    """The most ``seat`` can gain with up to ``offers`` grammar offers to a responder who accepts exactly the
    offers that raise its own value strictly and that it can pay for (an offer's giver must hold what it gives).

    Exact: depth-first over sequences, best-gain offers first, pruned by (gain so far + offers left x the best
    single offer's gain), which bounds every completion because values are linear and holdings only restrict.
    """
    mine, theirs = values[seat], values[1 - seat]
    candidates = sorted(
        ((worth(mine, get) - worth(mine, give), give, get)
         for give, get in single_offers(units, len(mine))
         if worth(mine, get) > worth(mine, give) and worth(theirs, give) > worth(theirs, get)),
        key=lambda c: -c[0])
    if not candidates:
        return 0
    top = candidates[0][0]
    best = 0

    def search(own: Vector, other: Vector, left: int, gained: int) -> None:
        nonlocal best
        best = max(best, gained)
        if left == 0 or gained + left * top <= best:
            return
        for gain, give, get in candidates:
            if gained + gain + (left - 1) * top <= best:
                break
            if all(h >= n for h, n in zip(own, give, strict=True)) and all(
                    h >= n for h, n in zip(other, get, strict=True)):
                search(_moved(own, get, give), _moved(other, give, get), left - 1, gained + gain)

    search(tuple(holdings[seat]), tuple(holdings[1 - seat]), offers, 0)
    return best


def _moved(holding: Sequence[int], gets: Sequence[int], gives: Sequence[int]) -> Vector:
    return tuple(h + g - d for h, g, d in zip(holding, gets, gives, strict=True))


def value_left(details: Mapping, seat: int, turns: int, units: int) -> tuple[int, int]:
    """(best extraction, realised gain) of ``seat`` in one game it played against the responder."""
    best = best_extraction(details["values"], details["start"], seat, answerable_offers(seat, turns), units)
    return best, int(details["value_gain"][seat])
