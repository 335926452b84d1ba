"""DVC stage `report`: leaderboard.json, headline metrics, plots and index.html, all from the score-card archive."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.pipeline.stage import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archive", action="append", required=True, help="score-card directory (repeatable)")
    parser.add_argument("--evals", help="directory of per-round eval@r metrics files (r0.json, r1.json, ...)")
    parser.add_argument("--scores", default="artifacts/scores")
    parser.add_argument("--report", default="artifacts/report")
    args = parser.parse_args()
    from arena.report.publish import publish

    evals = sorted(Path(args.evals).glob("r*.json"), key=lambda p: int(p.stem[1:])) if args.evals else []
    publish(args.archive, evals, args.scores, args.report)


if __name__ == "__main__":
    run(main)
