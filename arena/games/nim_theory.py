"""Exact Nim (last object wins): nim-sums, winning moves, and a family of pile configurations split into those
a training run from a start position can reach and those it never sees."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache, reduce
from itertools import product
from operator import xor

import numpy as np

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


# --------------------------------------------------------------------------- the game tree (full-width NeuRD)
# Nim is impartial and the compact prompt shows only the piles, so a state is a configuration (pile sizes, zeros
# included) whoever moves. A self-play policy is a [positions, sum(start)] table: column offset_i + q - 1 is [i q].


@cache
def positions(start: Piles) -> tuple[Piles, ...]:
    """Every configuration a game from ``start`` reaches with an object left (each pile 0..its start size), the
    largest total first (a move only lowers the total, so a child always comes later)."""
    configurations = [c for c in product(*(range(size + 1) for size in start)) if sum(c)]
    return tuple(sorted(configurations, key=lambda c: (-sum(c), c)))


def column(start: Piles, pile: int, quantity: int) -> int:
    """The table column of the move [pile quantity]."""
    return sum(start[:pile]) + quantity - 1


@cache
def _tree(start: Piles) -> tuple[np.ndarray, np.ndarray]:
    """Per row and column: whether the move is legal, and the child's row (-1 where the move takes the last object:
    its mover wins)."""
    rows = {c: row for row, c in enumerate(positions(start))}
    legal = np.zeros((len(rows), sum(start)), bool)
    children = np.full((len(rows), sum(start)), -1)
    for c, row in rows.items():
        for pile, size in enumerate(c):
            for quantity in range(1, size + 1):
                after = c[:pile] + (size - quantity,) + c[pile + 1:]
                legal[row, column(start, pile, quantity)] = True
                children[row, column(start, pile, quantity)] = rows.get(after, -1)
    return legal, children


def _values(table: np.ndarray, start: Piles, best: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per row: each move's value Q and the position's value V for the mover when the mover plays ``table``
    (``best`` False) or a best response (True) and the opponent plays ``table``. Self-play (``best`` False) needs
    one value per row; a best response needs two (who moves), so it returns (V with the responder to move,
    V with ``table``'s player to move), both for the responder."""
    legal, children = _tree(start)
    count = len(table)
    if not best:
        q, v = np.zeros(table.shape), np.zeros(count)
        for row in range(count - 1, -1, -1):  # children come later in positions()
            q[row] = np.where(children[row] >= 0, -v[np.maximum(children[row], 0)], 1.0)
            v[row] = (table[row] * np.where(legal[row], q[row], 0.0)).sum()
        return q, v
    responder, player = np.zeros(count), np.zeros(count)  # the responder's value, it to move / table's to move
    for row in range(count - 1, -1, -1):
        child = np.maximum(children[row], 0)
        ends = children[row] < 0
        responder[row] = np.where(legal[row], np.where(ends, 1.0, player[child]), -np.inf).max()
        player[row] = (table[row] * np.where(legal[row], np.where(ends, -1.0, responder[child]), 0.0)).sum()
    return responder, player


def _reaches(table: np.ndarray, start: Piles) -> np.ndarray:
    """Per row and mover parity (0: the first player moves, 1: the second): the summed probability of the paths from
    ``start`` counting the mover's own moves only, the opponent's only, and both ([rows, 2, 3])."""
    legal, children = _tree(start)
    reach = np.zeros((len(table), 2, 3))
    reach[0, 0] = 1.0
    for row in range(len(table)):
        for col in np.flatnonzero(legal[row] & (children[row] >= 0)):
            p = table[row, col]
            for mover in (0, 1):
                own, opponent, both = reach[row, mover]
                # At the child the other player moves: this move was the child's opponent's.
                reach[children[row, col], 1 - mover] += (opponent, own * p, both * p)
    return reach


def action_gains(table: np.ndarray, start: Piles, on_policy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Self-play of ``table`` from ``start``: per position and move, the mover's Q(a) - V weighted by the
    opponent's reach (summed over both players to move: the prompt does not say who) and, where ``on_policy``, by
    the mover's own too; and each position's weight. Zero at illegal moves."""
    legal = _tree(start)[0]
    q, v = _values(table, start, best=False)
    reach = _reaches(table, start)
    weight = reach[:, :, 2].sum(axis=1) if on_policy else reach[:, :, 1].sum(axis=1)
    return np.where(legal, (q - v[:, None]) * weight[:, None], 0.0), weight


def exploitability(table: np.ndarray, start: Piles) -> float:
    """NashConv / 2 of ``table`` from ``start``: the mean over seats of a best response's value against it (the
    seats' game values, +1 and -1, cancel)."""
    responder, player = _values(table, start, best=True)
    return float((responder[0] + player[0]) / 2)
