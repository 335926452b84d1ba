"""DVC stage `base`: build or resolve the base model into artifacts/models/base."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
