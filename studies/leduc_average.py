"""Probe: how exploitable is the average of a run's Leduc snapshots, beside each snapshot alone?

    python studies/leduc_average.py RUN_DIR [--from N] [--out FILE.md]

RUN_DIR holds ``snapshots/r0 .. rN`` (a `studies/games.py` work directory's run, or the pipeline's ``artifacts``).
Each snapshot's exact Leduc policy is read as the round evaluation reads it (compact view, temperature 1), and for
every round n the probe prints that snapshot's exploitability and the exploitability of the average policy of
snapshots ``--from`` .. n (arena.games.leduc_cfr.average_policy: each info state weighted by the snapshot's own
reach, so it plays as picking one snapshot for a whole hand). The average is what an opponent pool, or distilling
the average into the next snapshot, could at best deliver; the last iterate is what the pipeline publishes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
import numpy as np  # noqa: E402


def snapshot_policies(run: Path) -> list[np.ndarray]:
    """Each snapshot's exact Leduc policy as a (936, 3) array, in round order."""
    from arena.games.leduc_theory import as_array
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.players.policy import exact_policy

    rounds = sorted((int(p.name[1:]), p) for p in (run / "snapshots").glob("r*") if p.name[1:].isdigit())
    if not rounds:
        raise SystemExit(f"no snapshots/r<N> directories under {run}; pass a run directory (a studies/games.py "
                         "work directory's run, or artifacts/)")
    config = MLXPlayerConfig(view="compact", temperature=1.0)
    return [as_array(exact_policy(MLXPlayer(path, config), "leduc")) for _, path in rounds]


def table(policies: list[np.ndarray], first: int) -> list[str]:
    """One markdown row a round: the snapshot's exploitability and the running average's from ``first`` on."""
    from arena.games.leduc_cfr import average_policy
    from arena.games.leduc_theory import exploitability

    rows = [f"| round | snapshot | average of r{first}..rN |", "|---|---|---|"]
    for n, policy in enumerate(policies):
        average = f"{exploitability(average_policy(policies[first:n + 1])):.3f}" if n >= first else "-"
        rows.append(f"| r{n} | {exploitability(policy):.3f} | {average} |")
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--from", dest="first", type=int, default=1, help="the first snapshot in the average")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    rows = table(snapshot_policies(args.run), args.first)
    print("\n".join(rows))
    if args.out:
        args.out.write_text(f"# Leduc: snapshots and their average ({args.run})\n\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
