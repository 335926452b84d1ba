"""The iterated ultimatum game: TextArena's env, the masked offer list, its exact theory and scripted baselines."""

import pytest
from tinyround import TINY

from arena.core.errors import ArenaError
from arena.games.registry import make_game, replay
from arena.games.ultimatum import ACCEPT, REJECT
from arena.games.ultimatum_theory import optimal_moves, value
from arena.play.match import duplicate_schedule, play_match
from arena.play.stats import summarize_match
from arena.players.scripted import make_scripted

SMALL = {"pool": 4, "rounds": 3}


def brute_value(variant, actions=()):
    """Player 0's minimax value by playing TextArena's env itself through every legal action (no theory)."""
    game = make_game("ultimatum", 0, variant)
    for action in actions:
        game.step(action)
    if game.done:
        return game.result().rewards[0]
    obs = game.observation()
    values = [brute_value(variant, (*actions, a)) for a in obs.legal_actions]
    return max(values) if obs.player_id == 0 else min(values)


@pytest.mark.parametrize("alternate", [False, True])
def test_the_solver_agrees_with_the_env_played_out(alternate):
    variant = {**SMALL, "alternate": alternate}
    assert value(variant) == brute_value(variant) == 0


def test_legal_actions_views_and_state():
    game = make_game("ultimatum", 0, SMALL)
    first = game.observation()
    assert first.legal_actions == tuple(f"[Offer: ${x}]" for x in range(5))
    assert first.compact == "round 1 of 3, pool $4: you propose\nmoney: you $0, them $0\n"
    assert "Iterated Ultimatum Game" in first.text
    game.step("[Offer: $1]")
    answer = game.observation()
    assert answer.player_id == 1 and answer.legal_actions == (ACCEPT, REJECT)
    assert answer.compact.startswith("round 1 of 3, pool $4: they offer you $1, keeping $3")
    assert answer.state["offer"] == 1 and answer.state["phase"] == "responding"


def test_every_listed_move_is_valid_the_game_is_the_same_per_seed_and_replays():
    players = (make_scripted("random"), make_scripted("random"))
    records = play_match("ultimatum", players, duplicate_schedule([0, 1, 2], 6), variant={"alternate": True},
                         progress=False)
    again = play_match("ultimatum", players, duplicate_schedule([0, 1, 2], 6), variant={"alternate": True},
                       progress=False)
    assert [r["transcript_digest"] for r in again] == [r["transcript_digest"] for r in records]
    for record in records:
        assert record["invalid_moves"] == [0, 0] and len(record["actions"]) == 10
        result = replay("ultimatum", record["variant"], record["seed"], record["actions"])
        assert result.transcript_digest == record["transcript_digest"] and dict(result.details) == record["details"]


def test_the_minimax_oracle_never_loses_and_plays_only_optimal_moves():
    oracle = make_scripted("oracle")
    for name in ("random", "greedy", "fair", "never"):
        records = play_match("ultimatum", (oracle, make_scripted(name)), duplicate_schedule(range(4), 8),
                             variant={"pool": 10, "rounds": 3}, progress=False)
        for record in records:
            seat = record["players"].index("oracle")
            assert record["rewards"][seat] >= 0
            good, seen = optimal_moves(record["details"], record["variant"])
            assert good[seat] == seen[seat]


def test_the_match_summary_measures_money_and_optimal_moves():
    records = play_match("ultimatum", (make_scripted("oracle"), make_scripted("greedy")),
                         duplicate_schedule([0], 2), variant={"pool": 10, "rounds": 3}, progress=False)
    splits = summarize_match(records, "oracle", "greedy")["splits"]
    assert splits["optimal_share"]["p0"] == 1.0 and splits["optimal_share"]["p1"] < 1.0
    # proposing, the oracle offers 4 of 10 (greedy accepts: a $2 lead), then 5 and 5 (keeping the lead): $16 to $14;
    # greedy's $1 offers are refused: $0 each; means $8 and $7
    assert splits["mean_money"] == {"p0": 8.0, "p1": 7.0}


def test_variant_validation():
    for bad, match in (({"pool": 0}, "pool"), ({"pool": 101}, "at most 100"), ({"alternate": 1}, "true or false"),
                       ({"rounds": 201}, "action cap"), ({"turns": 3}, "turns")):
        with pytest.raises(ArenaError, match=match):
            make_game("ultimatum", 0, bad)


def test_a_local_model_plays_only_listed_moves(tmp_path):
    from arena.players.mlx import MLXPlayer
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    build_base(BaseConfig(**TINY), tmp_path / "base")
    records = play_match("ultimatum", (MLXPlayer(tmp_path / "base"), make_scripted("fair")),
                         duplicate_schedule([0], 2), variant={"pool": 10, "rounds": 2}, progress=False)
    for record in records:
        assert record["invalid_moves"] == [0, 0] and all(d["action"] in d["legal"] for d in record["decisions"])


def test_a_grpo_round_trains_on_ultimatum_and_its_evaluation_runs(tmp_path):
    from arena.core.seeds import SeedsConfig
    from arena.eval.config import EvalConfig, RoundEvalConfig
    from arena.eval.roundeval import evaluate_round
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig, PoolConfig, SelfPlayConfig, TrainConfig
    from arena.train.fuse import copy_snapshot
    from arena.train.pool import build_pool
    from arena.train.selfplay.rollouts import play_round
    from arena.train.selfplay.step import train_round

    build_base(BaseConfig(**TINY), tmp_path / "base")
    copy_snapshot(tmp_path / "base", tmp_path / "snap0")
    build_pool(None, tmp_path / "snap0", PoolConfig(), "ultimatum", tmp_path / "pool0")
    config = SelfPlayConfig(game="ultimatum", variant={"pool": 10, "rounds": 2}, deals_per_round=2, group_size=2)
    play_round(tmp_path / "snap0", tmp_path / "pool0", config, SeedsConfig(), 1, tmp_path / "roll")
    summary = train_round(tmp_path / "snap0", tmp_path / "base", tmp_path / "roll", 1, config,
                          TrainConfig(steps=1, batch_size=16), tmp_path / "trained", progress=False)
    assert summary["steps"] == 1
    eval_config = EvalConfig.from_dict({"games": [{"id": "ultimatum", "variant": {"pool": 10, "rounds": 2}}],
                                        "seeds": [9_000_000, 9_000_010]})
    result = evaluate_round(tmp_path / "snap0", None, 0, RoundEvalConfig(games=2), eval_config,
                            SeedsConfig().reserved(), tmp_path / "r0.json")
    row = result["ultimatum[pool=10,rounds=2]_vs_oracle"]
    assert row["games"] == 2 and 0.0 <= row["win_rate"] <= 0.5  # the minimax oracle never loses
    assert row["opponent_optimal_share"] == 1.0 and 0.0 <= row["optimal_share"] <= 1.0
