"""Publish results: leaderboard.json and headline metrics (DVC metrics) plus the HTML report, from the archive."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.artifacts import atomic_write_json
from arena.report import write_report
from arena.tournament import build_leaderboard, load_archive, load_excluded, write_leaderboard


def headline(leaderboard: dict[str, Any]) -> dict[str, Any]:
    """The few numbers `dvc metrics show` prints: per player rank, conservative rating and win rate."""
    return {
        row["player"]: {
            "rank": row["rank"],
            "mu": row["mu"],
            "conservative": row["conservative"],
            "win_rate": row["win_rate"]["rate"],
            "games": row["games"],
        }
        for row in leaderboard["ranking"]
    }


def load_rounds(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Per-round history rows (see arena.report.validate_rounds) from eval summary files."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        rows.extend(json.loads(Path(path).read_text())["history"])
    return rows


def publish(archives: Sequence[str | Path], rounds: Sequence[str | Path], scores_dir: str | Path,
            report_dir: str | Path) -> dict[str, Any]:
    """Build every published view from the score-card archives; return the leaderboard."""
    leaderboard = build_leaderboard(load_archive(archives), excluded=load_excluded(archives))
    scores = Path(scores_dir)
    write_leaderboard(scores / "leaderboard.json", leaderboard)
    atomic_write_json(scores / "metrics.json", headline(leaderboard))
    write_report(leaderboard, report_dir, rounds=load_rounds(rounds) or None)
    return leaderboard
