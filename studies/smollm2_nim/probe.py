"""Probe: what a Nim snapshot's policy does at every configuration of issue 14's family (piles of 1..6).

    python studies/smollm2_nim/probe.py SNAPSHOT [SNAPSHOT ...] [--out FILE.json]

Per snapshot, over the reached configurations and the held-out ones: the winning-move mass; how often the most
probable move wins; the mass on each pile and on each quantity taken (a position bias shows as the same split
everywhere); the mass on the largest pile and on emptying a pile; and studies/nim_heldout.py's split of the
held-out mass (an unseen pile size, a reached position reordered, the rest). The table is scored once per snapshot
in the compact view (arena.players.board_policy), as `arena exact --view compact` scores it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/, for nim_heldout

from arena.core.blas import ensure_fast_blas  # noqa: E402

Table = Mapping[tuple[int, ...], Mapping[tuple[int, int], float]]


def _mean(values: Sequence[float]) -> float:
    return round(math.fsum(values) / len(values), 4)


def describe(table: Table, configs: Sequence[tuple[int, ...]]) -> dict[str, object]:
    """The measures above over ``configs``."""
    from arena.games.nim_theory import winning_moves

    def mass(piles, keep):
        return sum(p for move, p in table[piles].items() if keep(piles, move))

    top = [max(table[c], key=table[c].get) in winning_moves(c) for c in configs]
    return {
        "configurations": len(configs),
        "winning_move_mass": _mean([mass(c, lambda piles, m: m in winning_moves(piles)) for c in configs]),
        "top_move_wins": _mean([float(t) for t in top]),
        "mass_by_pile": [_mean([mass(c, lambda piles, m, i=i: m[0] == i) for c in configs]) for i in range(3)],
        "winning_share_by_pile": [_mean([sum(m[0] == i for m in winning_moves(c)) / len(winning_moves(c))
                                         for c in configs]) for i in range(3)],
        "mass_by_quantity": [_mean([mass(c, lambda piles, m, q=q: m[1] == q) for c in configs]) for q in range(1, 7)],
        "mass_on_a_largest_pile": _mean([mass(c, lambda piles, m: piles[m[0]] == max(piles)) for c in configs]),
        "mass_emptying_a_pile": _mean([mass(c, lambda piles, m: piles[m[0]] == m[1]) for c in configs]),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshots", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    ensure_fast_blas()
    import nim_heldout

    from arena.players.board_policy import nim_model_policy
    from arena.players.mlx import MLXPlayer

    split = nim_heldout.groups([3, 4, 5])
    held = [c for name, configs in split.items() if name != "reached" for c in configs]
    out = {}
    for snapshot in args.snapshots:
        table = nim_model_policy(MLXPlayer(snapshot), [c for configs in split.values() for c in configs])
        out[str(snapshot)] = {"reached": describe(table, split["reached"]), "held_out": describe(table, held),
                              "held_out_split": nim_heldout.report(table, split)}
        print(json.dumps({str(snapshot): out[str(snapshot)]}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
