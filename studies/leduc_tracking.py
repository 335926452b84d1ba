"""Probe: round by round, how much of the exact tabular method's progress does the network keep?

    python studies/leduc_tracking.py RUN_DIR [--lr 8.0] [--decay 20] [--beta 0.5] [--weight visits] [--out FILE.md]

RUN_DIR holds ``snapshots/r0 .. rN`` (a `studies/games.py` work directory's run); the flags are that run's
``train.neurd_lr``, ``train.neurd_decay``, ``train.beta`` and ``train.neurd_weighting`` (visits = onpolicy), and
``--iterations`` its ``selfplay.iterations_per_round``. For each round n the probe starts the exact table
(studies/leduc_neurd.py) from snapshot r(n-1)'s own exact Leduc policy, with that policy as the magnet, and runs the
round's iterations as exact steps (the table's step is half the network's ``neurd_lr``: see that module). It prints
the snapshot's exploitability at the round's start, the table twin's after the round, and the network's after the
round. Where the twin gains and the network does not, the round lost what sampling and the fit cost, not what the
method's schedule allows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
import numpy as np  # noqa: E402
from leduc_average import snapshot_policies  # noqa: E402
from leduc_neurd import run  # noqa: E402
from tables import emit_table  # noqa: E402


def table(policies: list[np.ndarray], args: argparse.Namespace) -> list[str]:
    """One markdown row a round: the network's start, the exact twin's end, the network's end."""
    from arena.games.leduc_theory import exploitability

    rows = ["| round | network at its start | exact table, one round from there | network after the round |",
            "|---|---|---|---|"]
    steps = args.iterations
    network = [exploitability(policy) for policy in policies]  # each snapshot ends one round and starts the next
    for n in range(1, len(policies)):
        twin = run(steps, args.lr / 2, args.beta, steps, args.weight, (steps,), args.decay, policies[n - 1],
                   (n - 1) * steps)
        rows.append(f"| r{n} | {network[n - 1]:.3f} | {twin[steps]:.3f} | {network[n]:.3f} |")
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--lr", type=float, default=8.0, help="the run's train.neurd_lr")
    parser.add_argument("--decay", type=float, default=20.0, help="the run's train.neurd_decay (0: constant)")
    parser.add_argument("--beta", type=float, default=0.5, help="the run's train.beta")
    parser.add_argument("--weight", choices=["visits", "counterfactual"], default="visits")
    parser.add_argument("--iterations", type=int, default=20, help="the run's selfplay.iterations_per_round")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    rows = table(snapshot_policies(args.run), args)
    emit_table(rows, "Leduc: the network against its exact twin, round by round", args, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
