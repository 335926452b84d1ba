"""DVC stage `base`: build or resolve the base model into artifacts/models/base."""

import argparse

from arena.core.config import load_section
from arena.pipeline.stage import checked_params, run
from arena.train.config import BaseConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", default="artifacts/models/base")
    args = parser.parse_args()
    from arena.train.basemodel import build_base

    build_base(load_section(BaseConfig, "base", checked_params(args.params)), args.out)


if __name__ == "__main__":
    run(main)
