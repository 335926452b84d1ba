"""DVC stage `eval@rN` (and `eval0`): the snapshot vs fixed baselines on held-out seeds, exploitability, ReST extras."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.core.config import load_section
from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.roundeval import evaluate_round
from arena.pipeline.stage import checked_params, run
from arena.train.rest.round import round_metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--round", type=int, required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--pool")
    parser.add_argument("--rollouts", help="the round's rollouts (a ReST round's curriculum.json is recorded)")
    parser.add_argument("--trained", help="the round's training output (a ReST round's win-set size is recorded)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params = checked_params(args.params)
    reserved = load_section(SeedsConfig, "seeds", params).reserved()
    evaluate_round(args.snapshot, args.pool, args.round, load_section(RoundEvalConfig, "roundeval", params),
                   EvalConfig.from_dict(params.get("eval"), "eval"), reserved, args.out,
                   extra=round_metrics(args.rollouts, args.trained))


if __name__ == "__main__":
    run(main)
