"""DVC stage `code`: each stage script's import closure and its digest, one manifest per script in artifacts/code."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.pipeline.stage import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="artifacts/code")
    args = parser.parse_args()
    from arena.pipeline.deps import write_manifests

    write_manifests(args.out)


if __name__ == "__main__":
    run(main)
