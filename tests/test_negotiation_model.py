"""Negotiation with the embedded tiny model: masked play, self-play rounds alone and in a mix, round evaluation."""

import pytest
from tinyround import TINY

from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.roundeval import evaluate_round
from arena.games.registry import replay
from arena.play.match import duplicate_schedule, play_match
from arena.players.mlx import MLXPlayer
from arena.players.scripted import make_scripted
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig, PoolConfig, SelfPlayConfig, TrainConfig
from arena.train.fuse import copy_snapshot
from arena.train.pool import build_pool
from arena.train.selfplay.rollouts import play_round
from arena.train.selfplay.step import train_round


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("negotiation")
    build_base(BaseConfig(**TINY), root / "base")
    copy_snapshot(root / "base", root / "snap0")
    build_pool(None, root / "snap0", PoolConfig(), "negotiation", root / "pool0")
    return root


def test_the_model_plays_only_listed_moves_and_its_games_replay(tiny):
    player = MLXPlayer(tiny / "snap0")
    records = play_match("negotiation", (player, make_scripted("greedy")), duplicate_schedule([3], 2), progress=False)
    for record in records:
        assert not record["errored"] and record["invalid_moves"] == [0, 0]
        assert all(d["action"] in d["legal"] for d in record["decisions"])
        result = replay("negotiation", record["variant"], record["seed"], record["actions"])
        assert result.transcript_digest == record["transcript_digest"]
        assert dict(result.details) == record["details"]
    again = play_match("negotiation", (player, make_scripted("greedy")), duplicate_schedule([3], 2), progress=False)
    assert [r["actions"] for r in again] == [r["actions"] for r in records]  # same seed, same keys, same moves


@pytest.mark.parametrize("mix", [(), ({"id": "kuhn", "deals": 2},)], ids=["alone", "mixed"])
def test_a_grpo_round_trains_on_negotiation(tiny, tmp_path, mix):
    config = SelfPlayConfig(game="negotiation", variant={"units": 1}, mix=mix, deals_per_round=2, group_size=2)
    play_round(tiny / "snap0", tiny / "pool0", config, SeedsConfig(), 1, tmp_path / "roll")
    summary = train_round(tiny / "snap0", tiny / "base", tmp_path / "roll", 1, config,
                          TrainConfig(steps=1, batch_size=16), tmp_path / "trained", progress=False)
    assert summary["steps"] == 1


def test_round_evaluation_reports_trades_and_value_left(tiny, tmp_path):
    eval_config = EvalConfig.from_dict({"games": [{"id": "negotiation", "variant": {"units": 1}}],
                                        "seeds": [9_000_000, 9_000_010]})
    result = evaluate_round(tiny / "snap0", None, 0, RoundEvalConfig(games=2), eval_config, SeedsConfig().reserved(),
                            tmp_path / "r0.json")
    label = "negotiation[units=1]"
    assert set(result[f"{label}_vs_oracle"]) >= {"win_rate", "value_gain", "pareto_share", "accepted"}
    left = result[f"{label}_vs_responder"]["value_left"]
    assert left["games"] == 2 and left["left"] >= 0 and left["best"] >= left["gain"]
