"""Exact Nim (last object wins): nim-sums, winning moves, and a family of pile configurations split into those
a training run from a start position can reach and those it never sees."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from itertools import product
from operator import xor

Piles = tuple[int, ...]
# A policy maps piles to a probability per move (pile index, quantity).
NimPolicy = Callable[[Piles], Mapping[tuple[int, int], float]]


def nim_move(piles: Sequence[int]) -> tuple[int, int]:
    """(pile, quantity): a move to nim-sum 0 when one exists; from a lost position, take 1 from the largest pile."""
    nim_sum = 0
    for size in piles:
        nim_sum ^= size
    if nim_sum:
        for index, size in enumerate(piles):
            if size ^ nim_sum < size:
                return index, size - (size ^ nim_sum)
    largest = max(range(len(piles)), key=lambda i: (piles[i], -i))
    return largest, 1


def nim_sum(piles: Sequence[int]) -> int:
    """XOR of the pile sizes: 0 exactly at the positions the player to move loses."""
    return reduce(xor, piles, 0)


def winning_moves(piles: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Every (pile, quantity) that leaves nim-sum 0; empty at a lost position."""
    total = nim_sum(piles)
    return tuple((i, size - (size ^ total)) for i, size in enumerate(piles) if total and size ^ total < size)


def family(max_size: int, count: int) -> list[Piles]:
    """Every configuration of ``count`` piles of 1..``max_size`` objects that has a winning move."""
    return [piles for piles in product(range(1, max_size + 1), repeat=count) if nim_sum(piles)]


def split_by_start(configurations: Sequence[Piles], start: Sequence[int]) -> tuple[list[Piles], list[Piles]]:
    """(reachable from ``start``: every pile no larger than its start size; held out: the rest)."""
    seen = [c for c in configurations if len(c) == len(start) and all(a <= b for a, b in zip(c, start, strict=True))]
    return seen, [c for c in configurations if c not in seen]


def winning_mass(policy: NimPolicy, configurations: Sequence[Piles]) -> float:
    """Mean over ``configurations`` of the probability the policy puts on winning moves."""
    masses = [sum(policy(piles).get(move, 0.0) for move in winning_moves(piles)) for piles in configurations]
    return math.fsum(masses) / len(masses)
