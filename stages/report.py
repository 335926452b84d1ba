"""DVC stage `report`: leaderboard.json, headline metrics, plots and index.html, all from the score-card archive."""

import argparse

import arena  # noqa: F401 -- loads OpenBLAS before mlx
from arena.publish import publish


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archive", action="append", required=True, help="score-card directory (repeatable)")
    parser.add_argument("--rounds", action="append", default=[], help="per-round eval summary JSON (repeatable)")
    parser.add_argument("--scores", default="artifacts/scores")
    parser.add_argument("--report", default="artifacts/report")
    args = parser.parse_args()
    publish(args.archive, args.rounds, args.scores, args.report)


if __name__ == "__main__":
    main()
