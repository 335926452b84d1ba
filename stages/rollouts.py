"""DVC stage `rollouts@N`: play one shard of games and write artifacts/rollouts/shard-N."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.core.config import load_section
from arena.core.seeds import SeedsConfig
from arena.pipeline.stage import checked_params, run
from arena.play.config import RolloutsConfig
from arena.play.shards import build_shard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--shard", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params = checked_params(args.params)
    build_shard(load_section(RolloutsConfig, "rollouts", params), load_section(SeedsConfig, "seeds", params),
                args.shard, args.out)


if __name__ == "__main__":
    run(main)
