"""DVC stage `shards@N`: base-model rollout shard N (games vs a scripted opponent), artifacts/rollouts/base/shard-N."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core.config import load_section
from arena.core.seeds import SeedsConfig
from arena.pipeline.stage import checked_params, run
from arena.play.config import ShardsConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--shard", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    from arena.play.shards import build_shard
    from arena.players.build import player_configs

    params = checked_params(args.params)
    shards = load_section(ShardsConfig, "shards", params)
    build_shard(shards, load_section(SeedsConfig, "seeds", params), args.shard, args.out,
                configs=player_configs(params, shards))


if __name__ == "__main__":
    run(main)
