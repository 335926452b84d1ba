"""DVC stage `train0`: round 0's training output, an empty win set (the start of ReST's replay buffer chain)."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.pipeline.stage import run
from arena.train.rest.round import empty_win_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    empty_win_set(args.out)


if __name__ == "__main__":
    run(main)
