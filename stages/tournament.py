"""DVC stages `baseline`, `tournament` and `headline`: a round robin on held-out seeds, as a score-card archive."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core.config import load_section
from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, TournamentConfig
from arena.pipeline.stage import checked_params, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--section", required=True, help="params section listing the players (baseline, tournament)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--serve", help="a local model directory to serve with mlx_lm.server while the players play")
    parser.add_argument("--port", type=int, default=18471, help="the port --serve listens on (127.0.0.1)")
    args = parser.parse_args()
    from arena.eval.runner import run_stage, run_stage_serving
    from arena.players.build import player_configs

    params = checked_params(args.params)
    seeds = load_section(SeedsConfig, "seeds", params)
    tournament = load_section(TournamentConfig, args.section, params)
    evaluation, configs = EvalConfig.from_dict(params.get("eval"), "eval"), player_configs(params, tournament)
    if args.serve:
        excluded = run_stage_serving(evaluation, tournament, seeds.reserved(), args.out, configs, args.serve,
                                     args.port)
    else:
        excluded = run_stage(evaluation, tournament, seeds.reserved(), args.out, configs)
    for spec, reason in excluded.items():
        print(f"excluded {spec}: {reason}")


if __name__ == "__main__":
    run(main)
