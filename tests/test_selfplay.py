"""Self-play GRPO rounds end to end on a tiny model: rollouts, training (full and LoRA), fuse, pool, eval."""

import json

import numpy as np
import pytest
from tinyround import first_rollouts

from arena.core.config import ConfigError, from_mapping
from arena.core.hashing import digest_dir
from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.roundeval import evaluate_round
from arena.train.config import PoolConfig, SelfPlayConfig, TrainConfig
from arena.train.fuse import fuse_round
from arena.train.pool import build_pool, load_pool, sample_opponents
from arena.train.selfplay.rollouts import play_round, round_seeds, selfplay_schedule
from arena.train.selfplay.schedule import round_clip, round_learning_rate
from arena.train.selfplay.step import learner_decisions, train_round

SELFPLAY = SelfPlayConfig(deals_per_round=24, group_size=2)


@pytest.fixture(scope="module")
def round_zero(tmp_path_factory):
    return first_rollouts(tmp_path_factory.mktemp("selfplay"), SELFPLAY)


def test_schedule_plays_each_deal_from_both_seats():
    slots = selfplay_schedule(range(10, 12), 4)
    assert [(s.seed, s.first_seat, s.salt) for s in slots] == [
        (10, 0, 0), (10, 1, 0), (10, 0, 1), (10, 1, 1), (11, 0, 0), (11, 1, 0), (11, 0, 1), (11, 1, 1)]


def test_rollouts_are_self_play_with_logprobs(round_zero):
    records = [json.loads(line) for line in (round_zero / "roll1" / "games.jsonl").read_text().splitlines()]
    assert len(records) == SELFPLAY.games_per_round
    assert all(r["players"][0] == r["players"][1] for r in records)  # latest pool = itself
    data = learner_decisions(records, records[0]["players"][0], TrainConfig())
    assert np.all(data.logp_old <= 0)
    # Group-centred advantages cancel within each deal.
    by_seed = {}
    for record in records:
        seat = record["first_seat"]
        by_seed.setdefault(record["seed"], []).append(record["rewards"][seat])
    assert all(abs(sum(v) - len(v) * np.mean(v)) < 1e-12 for v in by_seed.values())


def _one_move_record(seed: int, seat: int, reward: float) -> dict:
    decision = {"player": seat, "text": "", "observation": "piles: 1 2\n", "legal": ["[0 1]", "[1 1]"],
                "action": "[0 1]", "logprob": -0.7}
    return {"errored": False, "game_id": "nim", "variant": {"piles": [1, 2]}, "seed": seed, "first_seat": seat,
            "players": ["mlx:learner", "mlx:learner"], "rewards": [reward, -reward] if seat == 0 else [-reward, reward],
            "invalid_moves": [0, 0], "decisions": [decision]}


def test_advantages_group_by_deal_or_by_deal_and_seat():
    # One deal, four games: seat 0 wins once and loses once, seat 1 loses twice.
    records = [_one_move_record(5, seat, reward) for seat, reward in ((0, 1.0), (1, -1.0), (0, -1.0), (1, -1.0))]
    by_deal = learner_decisions(records, "mlx:learner", TrainConfig())
    np.testing.assert_allclose(by_deal.advantages, [1.5, -0.5, -0.5, -0.5])
    # By seat, seat 0's two games are compared with each other; seat 1's equal losses carry no signal.
    by_seat = learner_decisions(records, "mlx:learner", TrainConfig(group_by="seat"))
    np.testing.assert_allclose(by_seat.advantages, [1.0, 0.0, -1.0, 0.0])
    assert by_seat.zero_group.tolist() == [False, True, False, True] and not by_deal.zero_group.any()


def test_learning_rate_decays_over_the_rounds_at_the_chosen_rate():
    # 64 steps a round: global step 192 is the start of round 4 (three rounds done).
    rates = {decay: [round_learning_rate(TrainConfig(lr=1.0e-3, lr_decay=decay), step, 64) for step in (0, 64, 192)]
             for decay in ("constant", "inverse_sqrt", "inverse")}
    np.testing.assert_allclose(rates["constant"], [1.0e-3, 1.0e-3, 1.0e-3])
    np.testing.assert_allclose(rates["inverse_sqrt"], [1.0e-3, 1.0e-3 / np.sqrt(2), 1.0e-3 / 2])
    np.testing.assert_allclose(rates["inverse"], [1.0e-3, 1.0e-3 / 2, 1.0e-3 / 4])
    with pytest.raises(ConfigError, match="train.lr_decay"):
        TrainConfig(lr_decay="cosine")


def test_the_clip_shrinks_round_by_round_at_the_chosen_rate():
    clips = {decay: [round_clip(TrainConfig(clip_eps=0.2, clip_decay=decay), n) for n in (1, 2, 4)]
             for decay in ("constant", "inverse_sqrt", "inverse")}
    np.testing.assert_allclose(clips["constant"], [0.2, 0.2, 0.2])
    np.testing.assert_allclose(clips["inverse_sqrt"], [0.2, 0.2 / np.sqrt(2), 0.1])
    np.testing.assert_allclose(clips["inverse"], [0.2, 0.1, 0.05])
    with pytest.raises(ConfigError, match="train.clip_decay"):
        TrainConfig(clip_decay="linear")


@pytest.mark.parametrize("method", ["full", "lora"])
def test_train_and_fuse_change_the_model_deterministically(round_zero, tmp_path, method):
    config = TrainConfig(method=method, steps=2, batch_size=16, lr=1.0e-3, lora_layers=1)
    base = round_zero / "base"
    summary = train_round(round_zero / "snap0", base, round_zero / "roll1", 1, SELFPLAY, config, tmp_path / "a",
                          progress=False)
    train_round(round_zero / "snap0", base, round_zero / "roll1", 1, SELFPLAY, config, tmp_path / "b",
                progress=False)
    assert digest_dir(tmp_path / "a") == digest_dir(tmp_path / "b")
    assert summary["steps"] == 2 and summary["method"] == method
    meta = fuse_round(round_zero / "snap0", tmp_path / "a", tmp_path / "snap1")
    assert meta["pin"]["model_hash"] != digest_dir(round_zero / "snap0")
    log = [json.loads(line) for line in (tmp_path / "a" / "train_log.jsonl").read_text().splitlines()]
    assert {"loss", "kl", "mean_reward", "zero_adv_fraction"} <= set(log[-1])


def test_pool_grows_and_eval_reports_exploitability(round_zero, tmp_path):
    config = TrainConfig(steps=1, batch_size=16)
    train_round(round_zero / "snap0", round_zero / "base", round_zero / "roll1", 1, SELFPLAY, config,
                tmp_path / "ad", progress=False)
    fuse_round(round_zero / "snap0", tmp_path / "ad", tmp_path / "snap1")
    pool = build_pool(round_zero / "pool0", tmp_path / "snap1", PoolConfig(), "kuhn", tmp_path / "pool1")
    assert len(pool["members"]) == 2 and all(len(m["kuhn_policy"]) == 12 for m in pool["members"])
    eval_config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [9_000_000, 9_000_010]})
    result = evaluate_round(tmp_path / "snap1", tmp_path / "pool1", 1, RoundEvalConfig(games=10), eval_config,
                            SeedsConfig().reserved(), tmp_path / "r1.json")
    assert 0 <= result["exploitability"] <= 1 and 0 <= result["pool_exploitability"] <= 1
    assert set(result["kuhn_vs_random"]) >= {"win_rate", "low", "high", "chips_per_hand", "exact_chips_per_hand"}


def test_pool_sampling_rules(round_zero):
    pool = load_pool(round_zero / "pool0")
    spec = pool["members"][0]["spec"]
    assert sample_opponents(pool, 3, seed=0) == [spec] * 3
    uniform = {**pool, "config": {**pool["config"], "sampling": "uniform", "scripted": ["random"]}}
    draws = sample_opponents(uniform, 200, seed=1)
    assert set(draws) == {spec, "random"} and draws == sample_opponents(uniform, 200, seed=1)


def test_a_pool_of_diluted_oracles_plays_them_as_opponents(round_zero, tmp_path):
    """pool.scripted takes eps-oracle:EPS (a ladder of opponent strengths); uniform sampling draws them."""
    config = PoolConfig(sampling="uniform", scripted=("oracle", "eps-oracle:0.5"))
    build_pool(None, round_zero / "snap0", config, "kuhn", tmp_path / "pool")
    play_round(round_zero / "snap0", tmp_path / "pool", SELFPLAY, SeedsConfig(), 1, tmp_path / "roll")
    records = [json.loads(line) for line in (tmp_path / "roll" / "games.jsonl").read_text().splitlines()]
    opponents = {r["players"][1 - r["first_seat"]] for r in records}
    assert {"oracle", "eps-oracle:0.5"} <= opponents and not any(r["errored"] for r in records)


@pytest.mark.parametrize(
    ("cls", "section", "values", "pattern"),
    [
        (TrainConfig, "train", {"beta": -0.1}, r"train\.beta = -0\.1 is invalid: must be >= 0"),
        (TrainConfig, "train", {"lr": "slow"}, r"train\.lr = 'slow' must be a float"),
        (TrainConfig, "train", {"steps": 0}, r"train\.steps = 0 is invalid"),
        (TrainConfig, "train", {"method": "qlora"}, r"train\.method = 'qlora' is invalid: expected one of full, lora"),
        (SelfPlayConfig, "selfplay", {"group_size": 3}, r"selfplay\.group_size = 3 is invalid"),
        (SelfPlayConfig, "selfplay", {"group_size": 0}, r"selfplay\.group_size = 0 is invalid"),
        (SelfPlayConfig, "selfplay", {"temperature": 0.0}, r"selfplay\.temperature = 0\.0 is invalid"),
        (SelfPlayConfig, "selfplay", {"deals_per_round": 8, "mix": [{"id": "nim", "deals": 9}]},
         r"selfplay\.mix\[0\]\.deals = 9 is invalid: must be an int in \[1, 8\]"),
        (PoolConfig, "pool", {"sampling": "best"}, r"pool\.sampling = 'best' is invalid"),
        (PoolConfig, "pool", {"scripted": ["eps-oracle:2"]},
         r"pool\.scripted = 'eps-oracle:2' is invalid: expected scripted players from .* or eps-oracle:EPS"),
    ],
)
def test_bad_hyperparameters_name_the_key(cls, section, values, pattern):
    with pytest.raises(ConfigError, match=pattern):
        from_mapping(cls, values, section)



def test_a_round_on_several_games_groups_each_games_deals_apart(round_zero, tmp_path):
    """selfplay.mix: one model, several games in one round; a deal's group never mixes two games; a mixed game
    may play fewer deals (the first of the round's block)."""
    config = SelfPlayConfig(deals_per_round=4, group_size=2,
                            mix=({"id": "nim", "variant": {"piles": [1, 2]}, "deals": 2},))
    assert config.deals == (4, 2) and config.games_per_round == 12
    play_round(round_zero / "snap0", round_zero / "pool0", config, SeedsConfig(), 1, tmp_path / "roll")
    records = [json.loads(line) for line in (tmp_path / "roll" / "games.jsonl").read_text().splitlines()]
    assert [r["game_id"] for r in records] == ["kuhn"] * 8 + ["nim"] * 4
    seeds = {game: sorted({r["seed"] for r in records if r["game_id"] == game}) for game in ("kuhn", "nim")}
    assert seeds["kuhn"][:2] == seeds["nim"]
    data = learner_decisions(records, f"mlx:{(round_zero / 'snap0').as_posix()}", TrainConfig())
    assert {o.game_id for o in data.observations} == {"kuhn", "nim"}
    summary = train_round(round_zero / "snap0", round_zero / "base", tmp_path / "roll", 1, config,
                          TrainConfig(steps=1, batch_size=32), tmp_path / "trained", progress=False)
    assert summary["steps"] == 1


@pytest.mark.parametrize("game, variant", [("tictactoe", {}), ("tictactoe", {"opening": 6}), ("nim", {"piles": [2, 3]}),
                                           ("nim", {"opening": 6}), ("liarsdice", {"dice": 1}), ("leduc", {})])
def test_grpo_rounds_run_on_every_game(round_zero, tmp_path, game, variant):
    config = SelfPlayConfig(game=game, variant=variant, deals_per_round=4, group_size=2)
    play_round(round_zero / "snap0", round_zero / "pool0", config, SeedsConfig(), 1, tmp_path / "roll")
    summary = train_round(round_zero / "snap0", round_zero / "base", tmp_path / "roll", 1, config,
                          TrainConfig(steps=1, batch_size=16), tmp_path / "trained", progress=False)
    assert summary["steps"] == 1


def test_the_pools_kuhn_policy_is_measured_through_the_runs_view(standin_dir, tmp_path):
    from arena.players.config import MLXPlayerConfig, sampling_config
    from arena.players.mlx import MLXPlayer
    from arena.players.policy import model_policy

    full = sampling_config(SelfPlayConfig(view="full"))
    pool = build_pool(None, standin_dir, PoolConfig(), "kuhn", tmp_path / "pool", full)
    measured = pool["members"][0]["kuhn_policy"]
    assert measured == model_policy(MLXPlayer(standin_dir, full))
    compact = model_policy(MLXPlayer(standin_dir, MLXPlayerConfig()))
    assert max(abs(measured[k] - compact[k]) for k in compact) > 1e-3  # the view changes what the model is shown
    assert pool["members"][0]["pin"] == MLXPlayer(standin_dir, full).pin()


def test_a_round_of_several_iterations_trains_on_fresh_deals_deterministically(round_zero, tmp_path):
    """selfplay.iterations_per_round: the live policy plays each later iteration's own deals, then trains on them."""
    config = SelfPlayConfig(deals_per_round=8, group_size=2, iterations_per_round=3, memo_prompts=64)
    blocks = [round_seeds(SeedsConfig(), config, r, i) for r in (1, 2) for i in range(3)]
    assert [b.start for b in blocks] == [blocks[0].start + 8 * k for k in range(6)]
    play_round(round_zero / "snap0", round_zero / "pool0", config, SeedsConfig(), 1, tmp_path / "roll")
    train = TrainConfig(steps=2, batch_size=16, lr=1.0e-3)
    for out in ("a", "b"):
        train_round(round_zero / "snap0", round_zero / "base", tmp_path / "roll", 1, config, train, tmp_path / out,
                    progress=False, pool_file=round_zero / "pool0", seeds=SeedsConfig())
    assert digest_dir(tmp_path / "a") == digest_dir(tmp_path / "b")
    log = [json.loads(line) for line in (tmp_path / "a" / "train_log.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in log] == [0, 0, 1, 1, 2, 2] and [row["step"] for row in log] == list(range(6))
    assert all(row["rows"] <= 16 for row in log if "rows" in row)
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert "pool" in meta["inputs"] and meta["config"]["selfplay"]["iterations_per_round"] == 3
    with pytest.raises(ValueError, match="needs the round's pool"):
        train_round(round_zero / "snap0", round_zero / "base", tmp_path / "roll", 1, config, train, tmp_path / "c",
                    progress=False)


def test_a_rounds_deals_must_stay_below_the_rest_block():
    with pytest.raises(ConfigError, match="would reach the ReST block"):
        round_seeds(SeedsConfig(), SelfPlayConfig(deals_per_round=1000, iterations_per_round=20), 8)


def test_lookahead_publishes_a_fraction_of_the_rounds_step(round_zero, tmp_path):
    import mlx.core as mx

    weights = {}
    for alpha in (1.0, 0.5):
        config = TrainConfig(steps=2, batch_size=16, lr=1.0e-3, lookahead=alpha)
        train_round(round_zero / "snap0", round_zero / "base", round_zero / "roll1", 1, SELFPLAY, config,
                    tmp_path / str(alpha), progress=False)
        weights[alpha] = mx.load(str(tmp_path / str(alpha) / "weights.safetensors"))
    start = mx.load(str(round_zero / "snap0" / "model.safetensors"))
    moved = [name for name in start if not mx.array_equal(start[name], weights[1.0][name])]
    assert moved
    for name in moved:
        half = start[name] + 0.5 * (weights[1.0][name] - start[name])
        assert mx.allclose(weights[0.5][name], half, atol=1e-6).item(), name
    with pytest.raises(ConfigError, match="needs method full"):
        from_mapping(TrainConfig, {"lookahead": 0.5, "method": "lora"}, "train")
