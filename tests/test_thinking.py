"""Thinking players: deterministic reasoning, legal moves whatever the reasoning says, the memory bound, replay."""

import json

import mlx.core as mx
import numpy as np
import pytest

from arena.core.config import ConfigError, as_dict
from arena.core.errors import ArenaError
from arena.eval.config import RoundEvalConfig
from arena.play.match import duplicate_schedule, play_match
from arena.play.records import verify_records
from arena.players import thinking
from arena.players.config import MLXPlayerConfig, ThinkConfig, sampling_config
from arena.players.mlx import MLXPlayer


def _player(path, **think):
    return MLXPlayer(path, MLXPlayerConfig(think=ThinkConfig(**{"max_tokens": 8, **think})))


def _play(player, game="kuhn", games=8):
    return play_match(game, (player, player), duplicate_schedule(list(range(games)), games), progress=False)


def test_default_configs_keep_their_bytes():
    assert "think" not in as_dict(MLXPlayerConfig())
    assert "think" not in as_dict(RoundEvalConfig())
    section = RoundEvalConfig(think={"max_tokens": 12})
    assert sampling_config(section).think == ThinkConfig(max_tokens=12)
    with pytest.raises(ConfigError, match="player.think.tokens"):
        sampling_config(RoundEvalConfig(think={"tokens": 12}))
    with pytest.raises(ConfigError, match="think.max_tokens"):
        ThinkConfig(max_tokens=0)


def test_same_seeds_same_bytes(standin_dir):
    first = _play(_player(standin_dir))
    second = _play(_player(standin_dir))
    assert json.dumps(first) == json.dumps(second)
    decisions = [d for record in first for d in record["decisions"]]
    assert all(isinstance(d["reasoning"], str) and len(d["reasoning_tokens"]) <= 8 for d in decisions)
    assert all(record["reasoning_digest"] for record in first)
    # Another thinking temperature draws other reasoning.
    assert json.dumps(_play(_player(standin_dir, temperature=2.0))) != json.dumps(first)


def test_a_row_samples_the_same_whatever_its_batch():
    keys = thinking.row_keys([11, 22, 33])
    alone = thinking.gumbel_noise(keys[1:2], 3, 50)
    batched = thinking.gumbel_noise(keys, 3, 50)
    assert mx.array_equal(alone[0], batched[1])
    assert not mx.array_equal(batched[0], batched[1])
    assert not mx.array_equal(thinking.gumbel_noise(keys, 4, 50)[1], batched[1])


def test_reasoning_towards_an_illegal_move_still_plays_a_legal_one(standin_dir, monkeypatch):
    player = _player(standin_dir)
    said = player.tokenizer.encode("I will play [raise] now", add_special_tokens=False)

    def scripted(model, shape, prompts, keys, think, stops, budget, keep=None):
        return [list(said) for _ in prompts]

    monkeypatch.setattr("arena.players.scoringpass.generate", scripted)
    records = _play(player, "kuhn") + _play(player, "tictactoe", 2)
    decisions = [d for record in records for d in record["decisions"]]
    assert decisions and all(d["action"] in d["legal"] for d in decisions)
    assert all("[raise]" in d["reasoning"] for d in decisions)
    assert not verify_records(records)


def test_reasoning_batches_keep_to_max_batch_tokens(standin_dir, monkeypatch):
    player = MLXPlayer(standin_dir, MLXPlayerConfig(max_batch_tokens=120, think=ThinkConfig(max_tokens=8)))
    calls = []
    real = thinking.generate_rows

    def spy(model, prompts, keys, max_tokens, temperature, stops, *rest):
        calls.append(len(prompts) * (max(map(len, prompts)) + max_tokens + player.shape.head_weight))
        return real(model, prompts, keys, max_tokens, temperature, stops, *rest)

    monkeypatch.setattr(thinking, "generate_rows", spy)
    _play(player)
    assert len(calls) > 4 and max(calls) <= 120
    with pytest.raises(ArenaError, match="player.max_batch_tokens = 20"):
        thinking.rows_per_batch(player.shape, 30, 8, 20)


def test_replay_detects_tampered_reasoning(standin_dir):
    records = _play(_player(standin_dir), games=4)
    assert not verify_records(records)
    tampered = json.loads(json.dumps(records))
    tampered[1]["decisions"][0]["reasoning"] += " [bet]"
    problems = verify_records(tampered)
    assert len(problems) == 1 and "game 1" in problems[0] and "reasoning digest" in problems[0]
    dropped = json.loads(json.dumps(records))
    del dropped[2]["decisions"][0]["reasoning"]
    assert verify_records(dropped)


def test_records_without_reasoning_have_no_digest(standin_dir):
    records = _play(MLXPlayer(standin_dir), games=2)
    assert all("reasoning_digest" not in r and "reasoning" not in r["decisions"][0] for r in records)
    assert not verify_records(records)


def test_a_thinking_grpo_step_changes_the_adapter(standin_dir):
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten

    from arena.train.config import TrainConfig
    from arena.train.lora import attach_lora
    from arena.train.thinking import RoleBaseline, reasoning_stats, reference_logps, replies, thinking_step

    player = _player(standin_dir)
    attach_lora(player.model, TrainConfig(lora_layers=2, lora_rank=4))
    records = _play(player, games=4)
    batch = replies(records, player)
    assert len(batch) == sum(len(r["decisions"]) for r in records)
    before = {k: mx.array(v) for k, v in tree_flatten(player.model.trainable_parameters())}
    baseline = RoleBaseline()
    reference = reference_logps(player.model, batch)
    loss = thinking_step(player.model, optim.Adam(learning_rate=1e-2), batch, baseline, reference)
    after = dict(tree_flatten(player.model.trainable_parameters()))
    assert np.isfinite(loss) and any(not mx.array_equal(before[k], after[k]) for k in before)
    assert set(baseline.means) == {("kuhn", 0), ("kuhn", 1)}
    from arena.train.thinking import rest_step, winning

    winners = winning(batch)
    assert winners and all(r.reward > 0 for r in winners) and len(winners) < len(batch)
    trained = dict(tree_flatten(player.model.trainable_parameters()))
    trained = {k: mx.array(v) for k, v in trained.items()}
    assert np.isfinite(rest_step(player.model, optim.Adam(learning_rate=1e-2), winners))
    assert any(not mx.array_equal(trained[k], v) for k, v in tree_flatten(player.model.trainable_parameters()))
    stats = reasoning_stats(records)
    assert stats["reasoning_decisions"] == len(batch) and 0 <= stats["names_a_move_rate"] <= 1


def test_last_named_move():
    from arena.train.thinking import last_named_move

    legal = ["[check]", "[bet]"]
    assert last_named_move("I could bet, but I will check.", legal) == "[check]"
    assert last_named_move("check? no: [bet]", legal) == "[bet]"
    assert last_named_move("betting is fun", legal) is None


def test_pins_state_the_thinking_budget(standin_dir):
    assert _player(standin_dir, max_tokens=12).pin()["think"] == {"max_tokens": 12, "temperature": 1.0}
    assert "think" not in MLXPlayer(standin_dir).pin()


def test_the_move_is_scored_on_the_reasonings_own_keys_and_values(standin_dir):
    from arena.players.policy import canonical_observations

    player = _player(standin_dir, max_tokens=12)
    observations = list(canonical_observations().values())
    reasonings = player.reason(observations)
    hits = player.turns.hits
    reused = player.thought_log_policy(observations, reasonings)
    assert player.turns.hits - hits == len(observations) and not player.turns.entries
    fresh = player.thought_log_policy(observations, reasonings)  # nothing stored now: every token encoded again
    assert player.turns.hits - hits == len(observations)
    for a, b in zip(reused, fresh, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_params_errors_name_the_section():
    import copy

    from arena.core.config import load_params
    from arena.pipeline.params import validate_all

    params = load_params("params.yaml")
    for bad, expected in [({"max_tokens": 0}, "tournament.think.max_tokens = 0"),
                          ({"tokens": 3}, "unknown key tournament.think.tokens")]:
        broken = copy.deepcopy(params)
        broken["tournament"]["think"] = bad
        with pytest.raises(ConfigError, match=expected):
            validate_all(broken)
    training = copy.deepcopy(params)
    training["selfplay"]["think"] = {"tokens": 4}
    with pytest.raises(ConfigError, match="unknown key selfplay.think.tokens"):
        validate_all(training)


def test_arena_play_think_and_replay(standin_dir, tmp_path):
    from click.testing import CliRunner

    from arena.cli import main

    shard = tmp_path / "games.jsonl"
    played = CliRunner().invoke(main, ["play", "kuhn", "--p0", f"mlx:{standin_dir}", "--p1", "random", "--games", "4",
                                       "--think", "6", "--out", str(shard), "--json"])
    assert played.exit_code == 0, played.output
    assert CliRunner().invoke(main, ["replay", str(shard)]).exit_code == 0
    lines = shard.read_text().splitlines()
    record = json.loads(lines[0])
    thought = next(d for d in record["decisions"] if "reasoning" in d)
    thought["reasoning_tokens"] = thought["reasoning_tokens"][:-1]
    shard.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    replayed = CliRunner().invoke(main, ["replay", str(shard)])
    assert replayed.exit_code == 1 and "MISMATCH" in replayed.output and "reasoning digest" in replayed.output


GAMES = ["kuhn", "leduc", "tictactoe", "nim", "liarsdice", "negotiation", "ultimatum"]


@pytest.mark.parametrize("game", GAMES)
def test_every_game_plays_legal_moves_after_reasoning(standin_dir, game):
    records = _play(_player(standin_dir, max_tokens=4), game, 2)
    decisions = [d for record in records for d in record["decisions"]]
    assert all(not r["errored"] for r in records) and all(d["action"] in d["legal"] for d in decisions)
    assert all("reasoning" in d for d in decisions) and not verify_records(records)


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory):
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    model = tmp_path_factory.mktemp("smollm2") / "model"
    build_base(BaseConfig(source="smollm2"), model)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("game", GAMES)
def test_smollm2_thinks_and_plays_legal_moves_in_every_game(smollm2_dir, game):
    # Kuhn reads TextArena's own text; the other games their compact view, which keeps this test to minutes (a
    # full-view Liar's Dice or negotiation prompt is ~1,000 tokens a decision).
    view = "full" if game == "kuhn" else "compact"
    player = MLXPlayer(smollm2_dir, MLXPlayerConfig(view=view, think=ThinkConfig(max_tokens=4)))
    assert not player.think_prompts.block  # SmolLM2's template has no thinking block: the instruction mode
    # Negotiation at units 1 (22 listed moves, as its presets train it): its reasoning prompt lists the legal moves.
    variant = {"units": 1} if game == "negotiation" else None
    records = play_match(game, (player, player), duplicate_schedule([0], 1), variant=variant, progress=False)
    decisions = [d for record in records for d in record["decisions"]]
    assert all(not r["errored"] for r in records)
    assert all(d["action"] in d["legal"] and len(d["reasoning_tokens"]) <= 4 for d in decisions)
    assert not verify_records(records)


def test_a_thinking_round_evaluation_reports_reasoning_and_estimated_exploitability(standin_dir, tmp_path):
    from arena.core.seeds import SeedsConfig
    from arena.eval.config import EvalConfig
    from arena.eval.roundeval import evaluate_round

    eval_config = EvalConfig.from_dict({"games": [{"id": "kuhn"}, {"id": "nim"}], "seeds": [9_000_000, 9_000_400]})
    config = RoundEvalConfig(opponents=("random",), games=4, think={"max_tokens": 4})
    result = evaluate_round(standin_dir, None, 1, config, eval_config, SeedsConfig().reserved(), tmp_path / "r1.json")
    assert result["reasoning"]["reasoning_decisions"] > 0 and result["reasoning"]["reasoning_tokens_mean"] <= 4
    kuhn = json.loads((tmp_path / "r1.json").read_text())
    assert "reasoning" in kuhn and "kuhn_policy" in kuhn
    with pytest.raises(ArenaError, match="thinks before it moves"):
        _player(standin_dir).policy([])


def test_nim_winning_mass_is_estimated_over_sampled_reasoning(standin_dir):
    from arena.eval.thinkexact import nim_thinking_samples, winning_mass_interval

    configurations = [(1, 2, 1), (3, 4, 5), (2, 2, 1)]
    player = _player(standin_dir, max_tokens=4)
    samples = nim_thinking_samples(player, configurations, 2)
    assert samples == nim_thinking_samples(_player(standin_dir, max_tokens=4), configurations, 2)  # same keys
    assert list(samples) == configurations and all(len(v) == 2 and all(0 <= x <= 1 for x in v)
                                                   for v in samples.values())
    estimate = winning_mass_interval(samples, boot=200)
    assert estimate["interval"][0] <= estimate["winning_move_mass"] <= estimate["interval"][1]
    flat = winning_mass_interval({(1, 2): [0.25, 0.25], (3, 1): [0.75, 0.75]}, boot=50)
    assert flat["winning_move_mass"] == 0.5 and flat["interval"] == [0.5, 0.5]


def test_repeated_prompts_are_prefilled_once_and_sample_as_alone(standin_dir, monkeypatch):
    """Several reasonings of one position (thinkexact's samples) share its prefill; each row still samples as if
    it were generated with its prompt alone."""
    from mlx_lm.models import cache as mlx_cache

    from arena.players.policy import canonical_observations

    player = _player(standin_dir)
    a, b = (player.think_prompts.prompt_ids(o) for o in list(canonical_observations().values())[:2])
    keys = thinking.row_keys([5, 6, 7, 8])
    together = thinking.generate_rows(player.model, [a, a, b, a], keys, 6, 1.0, set())
    alone = [thinking.generate_rows(player.model, [p], keys[i:i + 1], 6, 1.0, set())[0]
             for i, p in enumerate([a, a, b, a])]
    assert together == alone and together[0] != together[1]  # own keys: the repeats reason differently
    prefilled = []

    class Spy(mlx_cache.BatchKVCache):
        def __init__(self, left_padding):
            prefilled.append(len(left_padding))
            super().__init__(left_padding)

    monkeypatch.setattr(mlx_cache, "BatchKVCache", Spy)
    thinking.generate_rows(player.model, [a, a, b, a], keys, 2, 1.0, set())
    assert set(prefilled) == {2}  # every layer's cache was prefilled with the 2 distinct prompts, then expanded
