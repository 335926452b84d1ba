"""DVC stage `rollouts@rN`: the round's snapshot plays each deal against an opponent drawn from the pool."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.config import load_section
from arena.seeds import SeedsConfig
from arena.stage import checked_params, run
from arena.train.selfplay import SelfPlayConfig, play_round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--round", type=int, required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params = checked_params(args.params)
    play_round(args.snapshot, args.pool, load_section(SelfPlayConfig, "selfplay", params),
               load_section(SeedsConfig, "seeds", params), args.round, args.out)


if __name__ == "__main__":
    run(main)
