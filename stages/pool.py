"""DVC stage `pool@rN` (and `pool0`): the opponent pool after round N, listing snapshot pins."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.core.config import load_section
from arena.pipeline.stage import checked_params, run
from arena.train.config import PoolConfig, SelfPlayConfig
from arena.train.pool import build_pool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--previous", help="the previous pool (omit for the initial pool)")
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params = checked_params(args.params)
    game = load_section(SelfPlayConfig, "selfplay", params).game
    build_pool(args.previous, args.snapshot, load_section(PoolConfig, "pool", params), game, args.out)


if __name__ == "__main__":
    run(main)
