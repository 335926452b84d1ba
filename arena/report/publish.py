"""Publish results: leaderboard.json and headline metrics (DVC metrics) plus the HTML report, from the archive."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.eval.leaderboard import build_leaderboard, write_leaderboard
from arena.eval.scorecards import load_archive, load_excluded
from arena.report.html import write_report
from arena.report.thinkplots import has_reasoning


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


def round_history(eval_files: Sequence[str | Path], leaderboard: dict[str, Any], baseline: str) -> list[dict[str, Any]]:
    """Per-round rows for the report: each snapshot's held-out win rate against ``baseline`` from its eval@r
    file, its TrueSkill mu from the leaderboard (matched by model hash), and its exploitability."""
    ratings = {row["pin"].get("model_hash"): row for row in leaderboard["ranking"] if row["pin"].get("model_hash")}
    rows = []
    for path in eval_files:
        evaluation = json.loads(Path(path).read_text())
        versus = [key for key in evaluation if key.endswith(f"_vs_{baseline}")]
        rated = ratings.get(evaluation["model_hash"])
        if not versus or rated is None:
            continue
        score = evaluation[versus[0]]
        rows.append({
            "round": evaluation["round"], "player": f"snapshot vs {baseline}",
            "win_rate": score["win_rate"], "low": score["low"], "high": score["high"],
            "mu": rated["mu"], "sigma": rated["sigma"], "exploitability": evaluation.get("exploitability"),
        })
    return rows


def leaderboard_from(archives: Sequence[str | Path]) -> dict[str, Any]:
    """The leaderboard of the score-card archives, with the players they left out."""
    return build_leaderboard(load_archive(archives), excluded=load_excluded(archives), verified=True)


def publish(archives: Sequence[str | Path], eval_files: Sequence[str | Path], scores_dir: str | Path,
            report_dir: str | Path, baseline: str = "random") -> dict[str, Any]:
    """Build every published view from the score-card archives (and per-round evals); return the leaderboard."""
    leaderboard = leaderboard_from(archives)
    scores = Path(scores_dir)
    write_leaderboard(scores / "leaderboard.json", leaderboard)
    atomic_write_json(scores / "metrics.json", headline(leaderboard))
    evals = [json.loads(Path(path).read_text()) for path in eval_files]
    lsp = [e for e in evals if e.get("loop") == "lsp"]
    exact = [e for e in evals if e.get("exact")]
    thinking = [e for e in evals if has_reasoning(e)]
    write_report(leaderboard, report_dir, rounds=round_history(eval_files, leaderboard, baseline) or None,
                 lsp_rounds=lsp or None, exact_rounds=exact or None, reasoning_rounds=thinking or None)
    return leaderboard
