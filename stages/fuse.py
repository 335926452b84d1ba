"""DVC stage `fuse@rN`: previous snapshot + the round's trained weights -> a standalone, pinned snapshot."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.pipeline.stage import run
from arena.train.fuse import fuse_round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--previous", required=True)
    parser.add_argument("--trained", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    fuse_round(args.previous, args.trained, args.out)


if __name__ == "__main__":
    run(main)
