"""DVC stage `snapshot0`: round 0's snapshot is the base model, placed where every round reads snapshots."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.pipeline.stage import run
from arena.train.fuse import copy_snapshot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    copy_snapshot(args.base, args.out)


if __name__ == "__main__":
    run(main)
