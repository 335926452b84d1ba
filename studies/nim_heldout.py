"""Probe: where a Nim snapshot's held-out winning-move mass comes from: unseen pile sizes, or seen positions reordered.

    python studies/nim_heldout.py [SNAPSHOT_DIR ...] [--piles 3 4 5]

`eval@rN` publishes two means (``arena.eval.exact``): the policy's mass on winning moves over the configurations a
game from ``--piles`` reaches, and over the held-out rest of the family (piles of 1..max + 1). The probe splits the
held-out ones. Those with a pile of max + 1 hold a size no training game shows. Most others are a reached position
with its piles in another order, which Nim's value ignores (the nim-sum is the same), so their mass against the
reached order's says whether the policy carries what it learned across pile positions.

First it prints a ceiling that needs no snapshot: the held-out mass of a policy that plays the nim-sum perfectly at
every configuration whose pile sizes training shows, and reads each unseen size as whichever shown size suits the
configuration best (``blind_ceiling``). A model trained only on games from ``--piles`` never reads the unseen size,
so this is what learning the game perfectly, without knowing what that numeral means, can reach.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path

from arena.core.blas import ensure_fast_blas


def reached_orders(held_out: Sequence[tuple[int, ...]], seen: Sequence[tuple[int, ...]]
                   ) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]]:
    """Each held-out configuration with every reached one that holds the same piles in another order."""
    by_multiset: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for configuration in seen:
        by_multiset.setdefault(tuple(sorted(configuration)), []).append(configuration)
    return [(c, by_multiset[tuple(sorted(c))]) for c in held_out if tuple(sorted(c)) in by_multiset]


def groups(start: Sequence[int]) -> dict[str, list[tuple[int, ...]]]:
    """The reached configurations, and the held-out ones split: an unseen pile size; a reached position's piles in
    another order; the rest (seen sizes, but more large piles than any reached position holds)."""
    from arena.games import nim_theory

    seen, held_out = nim_theory.split_by_start(nim_theory.family(max(start) + 1, len(start)), start)
    unseen_size = [c for c in held_out if max(c) > max(start)]
    reordered = [c for c, _ in reached_orders([c for c in held_out if c not in unseen_size], seen)]
    return {"reached": seen, "held out, a pile of an unseen size": unseen_size,
            "held out, a reached position reordered": reordered,
            "held out, seen sizes in no reached order": [c for c in held_out
                                                         if c not in unseen_size and c not in reordered]}


def blind_ceiling(configuration: tuple[int, ...], read_sizes: Sequence[int]) -> float:
    """The most winning-move mass a perfect nim-sum player can put on ``configuration`` when it reads each pile of a
    size outside ``read_sizes`` as one of them (the best reading for this configuration). It plays the winning
    moves of the configuration it reads, uniformly, or any of its legal moves uniformly where it reads a lost one."""
    from arena.games.nim_theory import winning_moves

    unread = [i for i, size in enumerate(configuration) if size not in read_sizes]
    winning, best = set(winning_moves(configuration)), 0.0
    for reading in product(sorted(read_sizes), repeat=len(unread)):
        read = list(configuration)
        for index, size in zip(unread, reading, strict=True):
            read[index] = size
        moves = winning_moves(read) or [(i, q) for i, size in enumerate(read) for q in range(1, size + 1)]
        best = max(best, sum(move in winning for move in moves) / len(moves))
    return best


def ceiling_lines(split: Mapping[str, list[tuple[int, ...]]]) -> list[str]:
    """``blind_ceiling`` over the group with an unseen size, and over all held-out configurations (mass 1 on the
    others, whose sizes training shows)."""
    read_sizes = sorted({size for configuration in split["reached"] for size in configuration})
    unseen = split["held out, a pile of an unseen size"]
    masses = [blind_ceiling(c, read_sizes) for c in unseen]
    held = sum(len(configs) for name, configs in split.items() if name != "reached")
    return [f"  ceiling, reading sizes {read_sizes} perfectly and an unseen size as the best of them: "
            f"{math.fsum(masses) / len(masses):.3f} on the {len(unseen)} with an unseen size, "
            f"{(math.fsum(masses) + held - len(unseen)) / held:.3f} over all {held} held out"]


def report(table: Mapping[tuple[int, ...], Mapping[tuple[int, int], float]],
           split: Mapping[str, list[tuple[int, ...]]]) -> list[str]:
    """One line per group of ``split`` (its size and mean winning-move mass), then the reordered positions against
    their reached orders."""
    from arena.games.nim_theory import winning_mass

    policy = table.__getitem__
    lines = [f"  {name}: {len(configs)} configurations, mass {winning_mass(policy, configs):.3f}"
             for name, configs in split.items() if configs]
    pairs = reached_orders(split["held out, a reached position reordered"], split["reached"])
    if pairs:
        held = winning_mass(policy, [h for h, _ in pairs])
        reached = math.fsum(winning_mass(policy, orders) for _, orders in pairs) / len(pairs)
        lines.append(f"  those {len(pairs)} positions: mass {held:.3f} reordered, {reached:.3f} in reached orders")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshots", nargs="*", type=Path)
    parser.add_argument("--piles", nargs="+", type=int, default=[3, 4, 5])
    args = parser.parse_args(argv)
    ensure_fast_blas()
    from arena.players.board_policy import nim_model_policy
    from arena.players.mlx import MLXPlayer

    split = groups(args.piles)
    print(f"piles {args.piles}:")
    print("\n".join(ceiling_lines(split)))
    for snapshot in args.snapshots:
        table = nim_model_policy(MLXPlayer(snapshot), [c for configs in split.values() for c in configs])
        print(f"{snapshot} (piles {args.piles}):")
        print("\n".join(report(table, split)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
