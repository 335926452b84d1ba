"""DVC stage `headline_table` (realmodel/dvc.yaml): the headline's table from its score-card archives."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.pipeline.stage import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archive", action="append", required=True, help="a score-card archive (repeatable)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    from arena.eval.headline import write_headline

    rows = write_headline(args.archive, args.out)
    print(f"headline: {len(rows)} rows in {args.out}/headline.md", file=sys.stderr)


if __name__ == "__main__":
    run(main)
