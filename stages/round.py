"""DVC stages `round0` and `round@rN`: one self-improvement round, each of its outputs its own artifact."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.pipeline.stage import checked_params, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--artifacts", default="artifacts")
    parser.add_argument("--round", type=int, required=True, help="the round to build (0: the base model's snapshot)")
    parser.add_argument("--prev", type=int, default=0, help="the snapshot round N starts from")
    args = parser.parse_args()
    params = checked_params(args.params)
    from arena.pipeline.rounds import RoundPaths, round_n, round_zero

    paths = RoundPaths(Path(args.artifacts), args.round, args.prev)
    (round_zero if args.round == 0 else round_n)(paths, params)


if __name__ == "__main__":
    run(main)
