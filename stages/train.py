"""DVC stage `train@rN`: GRPO on the round's rollouts, or (loop: rest) the audited win set and its LoRA SFT."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.core.config import load_section
from arena.pipeline.stage import checked_params, run
from arena.train.config import SelfPlayConfig, TrainConfig, check_loop
from arena.train.grpo.round import train_round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--round", type=int, required=True)
    parser.add_argument("--snapshot", required=True, help="the snapshot the round starts from")
    parser.add_argument("--base", required=True, help="the base model (reference when train.reference=base)")
    parser.add_argument("--rollouts", required=True)
    parser.add_argument("--previous-train", required=True,
                        help="the previous round's training output (ReST replays its wins)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params = checked_params(args.params)
    if check_loop(params) == "rest":
        from arena.train.config import RestConfig
        from arena.train.rest.round import train_rest_round

        train_rest_round(args.snapshot, args.base, args.rollouts, args.previous_train, args.round,
                         load_section(RestConfig, "rest", params), args.out)
        return
    config = load_section(TrainConfig, "train", params)
    reference = args.base if config.reference == "base" else args.snapshot
    train_round(args.snapshot, reference, args.rollouts, args.round, load_section(SelfPlayConfig, "selfplay", params),
                config, args.out)


if __name__ == "__main__":
    run(main)
