"""DVC stage `cold` (realmodel/dvc.yaml): the base model's float32 copy, served by mlx_lm.server as the endpoint."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.pipeline.stage import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="the quantised model directory (the imported base)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    from arena.train.dequantise import dequantised_copy

    dequantised_copy(args.model, args.out)


if __name__ == "__main__":
    run(main)
