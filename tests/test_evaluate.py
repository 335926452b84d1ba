"""Tournament stages with real players: score cards, excluded players, and the published views."""

import json

import pytest

from arena.core.errors import ArenaError
from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.runner import run_stage
from arena.eval.scorecards import load_archive
from arena.report.publish import publish

EVAL = EvalConfig.from_dict({"games": [{"id": "kuhn", "variant": {"rounds": 2}}], "seeds": [9_000_000, 9_000_040]})


def test_round_robin_writes_pinned_cards_and_leaves_out_a_broken_player(base_model_dir, tmp_path):
    config = TournamentConfig(players=(f"mlx:{base_model_dir}", "random", "oracle", f"mlx:{tmp_path / 'missing'}"))
    excluded = run_stage(EVAL, config, [range(0, 1_000_000)], tmp_path / "cards")
    assert list(excluded) == [f"mlx:{tmp_path / 'missing'}"]
    assert "model directory not found" in excluded[f"mlx:{tmp_path / 'missing'}"]
    cards = load_archive([tmp_path / "cards"])
    assert len(cards) == 3  # three working players: every pair once
    model_card = next(c for c in cards if any(p["spec"].startswith("mlx:") for p in c["players"]))
    pin = next(p["pin"] for p in model_card["players"] if p["spec"].startswith("mlx:"))
    assert {"model_hash", "quant", "config_hash", "versions"} <= set(pin)
    assert model_card["eval_config_hash"] == EVAL.digest()


def test_overlapping_seeds_are_refused(tmp_path):
    with pytest.raises(ArenaError, match="overlap"):
        run_stage(EVAL, TournamentConfig(players=("random", "oracle")), [range(9_000_000, 9_000_010)],
                  tmp_path / "cards")


def test_publish_builds_leaderboard_metrics_and_report(tmp_path):
    run_stage(EVAL, TournamentConfig(players=("random", "first", "oracle")), [], tmp_path / "cards")
    board = publish([tmp_path / "cards"], [], tmp_path / "scores", tmp_path / "report")
    metrics = json.loads((tmp_path / "scores" / "metrics.json").read_text())
    assert set(metrics) == {"random", "first", "oracle"} and metrics["oracle"]["rank"] == board["ranking"][0]["rank"]
    assert (tmp_path / "scores" / "leaderboard.json").exists()
    html = (tmp_path / "report" / "index.html").read_text()
    assert "oracle" in html and "http://" not in html and "https://" not in html
