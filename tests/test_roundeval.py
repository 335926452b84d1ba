"""Per-round evaluation without card luck: duplicate deals, and exact expected chips beside the sampled ones."""

import pytest

from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.roundeval import deal_chips, evaluate_round, mean_interval
from arena.games.kuhn_theory import chips_per_hand, nash_policy, uniform_policy
from arena.players.policy import scripted_kuhn_policy


def test_chips_per_hand_averages_both_seats():
    assert chips_per_hand(nash_policy(0.0), uniform_policy()) == pytest.approx(1 / 9)
    assert chips_per_hand(uniform_policy(), nash_policy(0.0)) == pytest.approx(-1 / 9)
    assert chips_per_hand(nash_policy(0.0), nash_policy(1 / 3)) == pytest.approx(0.0, abs=1e-12)


def test_scripted_tables():
    assert scripted_kuhn_policy("random") == uniform_policy()
    assert set(scripted_kuhn_policy("first").values()) == {0.0}
    assert scripted_kuhn_policy("oracle") == nash_policy(0.0)
    mixed = scripted_kuhn_policy("eps-oracle:0.5")
    assert mixed["2p"] == pytest.approx(0.75) and mixed["0b"] == pytest.approx(0.25)
    assert scripted_kuhn_policy("staller") is None


def test_deal_chips_pools_both_seats_of_a_deal():
    records = [
        {"errored": False, "seed": 7, "players": ["a", "b"], "round_rewards": [[1, -1], [-2, 2]]},
        {"errored": False, "seed": 7, "players": ["b", "a"], "round_rewards": [[1, -1], [1, -1]]},
        {"errored": True, "seed": 8, "players": ["a", "b"], "round_rewards": None},
    ]
    assert deal_chips(records, "a") == [pytest.approx((1 - 2 - 1 - 1) / 4)]
    mean, low, high = mean_interval([0.0, 1.0, 2.0, 3.0])
    assert mean == 1.5 and low < mean < high


def test_sampled_chips_agree_with_the_exact_value_within_the_interval(base_model_dir, tmp_path):
    """The exact expected chips of the model's own policy lie inside the sampled duplicate-deal interval."""
    eval_config = EvalConfig.from_dict({"games": [{"id": "kuhn", "variant": {"rounds": 5}}],
                                        "seeds": [9_000_000, 9_000_400]})
    config = RoundEvalConfig(opponents=("random", "oracle", "first"), games=400)
    result = evaluate_round(base_model_dir, None, 0, config, eval_config, SeedsConfig().reserved(),
                            tmp_path / "r0.json")
    for opponent in config.opponents:
        row = result[f"kuhn[rounds=5]_vs_{opponent}"]
        assert row["games"] == 400
        assert row["chips_low"] <= row["exact_chips_per_hand"] <= row["chips_high"], (opponent, row)
    assert result["kuhn[rounds=5]_vs_first"]["exact_chips_per_hand"] != result["kuhn[rounds=5]_vs_oracle"][
        "exact_chips_per_hand"]


def _always_failing(monkeypatch):
    from arena.players.mlx import MLXPlayer

    def act_batch(self, observations):
        raise KeyError((34, 1))

    monkeypatch.setattr(MLXPlayer, "act_batch", act_batch)


def test_a_round_whose_games_all_error_stops_with_the_count_and_first_reason(base_model_dir, tmp_path, monkeypatch):
    from arena.core.errors import ArenaError

    _always_failing(monkeypatch)
    eval_config = EvalConfig.from_dict({"games": [{"id": "kuhn", "variant": {"rounds": 5}}],
                                        "seeds": [9_000_000, 9_000_400]})
    config = RoundEvalConfig(opponents=("random",), games=4)
    with pytest.raises(ArenaError, match=r"^round 3 evaluation: all 4 games of kuhn\[rounds=5\] vs random errored; "
                                         r"the first \(seed 9000000\): KeyError: \(34, 1\)$"):
        evaluate_round(base_model_dir, None, 3, config, eval_config, SeedsConfig().reserved(), tmp_path / "r3.json")
    assert not (tmp_path / "r3.json").exists()
    with pytest.raises(ValueError, match="at least one value"):
        mean_interval([])
