"""DVC stage `rollouts@rN`: GRPO self-play against the pool, or (loop: rest) the curriculum probe and ReST samples."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.core.config import load_section
from arena.core.seeds import SeedsConfig
from arena.pipeline.stage import checked_params, run
from arena.train.config import SelfPlayConfig
from arena.train.grpo.round import play_round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--round", type=int, required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params = checked_params(args.params)
    selfplay = load_section(SelfPlayConfig, "selfplay", params)
    seeds = load_section(SeedsConfig, "seeds", params)
    from arena.train.config import check_loop

    if check_loop(params) == "rest":
        from arena.train.config import CurriculumConfig, RestConfig
        from arena.train.rest.round import sample_round

        sample_round(args.snapshot, selfplay.game, load_section(RestConfig, "rest", params),
                     load_section(CurriculumConfig, "curriculum", params), seeds, args.round, args.out)
    else:
        play_round(args.snapshot, args.pool, selfplay, seeds, args.round, args.out)


if __name__ == "__main__":
    run(main)
