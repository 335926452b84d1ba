"""Exact Leduc theory against OpenSpiel, CFR+ to 1e-3, the shipped Nash table, and a model's policy export."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.games import leduc_theory as lt
from arena.games.leduc_cfr import (
    NASH_PATH,
    action_gains,
    average_policy,
    cfr_plus,
    nash_array,
    nash_digest,
    write_nash,
)

UNIFORM_EXPLOITABILITY = 2.3736111111111112  # OpenSpiel: nash_conv(leduc_poker, uniform random) / 2
NASH_VALUE = -0.0856  # the game value for player 0 (published: -0.0856 chips per hand)


def random_array(rng: np.random.Generator) -> np.ndarray:
    raw = rng.random((len(lt.info_states()), 3)) * lt.tree().info_legal
    return raw / raw.sum(axis=1, keepdims=True)


def test_tree_sizes():
    t = lt.tree()
    assert len(lt.DEALS) == 120 and len(t.actor) == 36 and len(t.histories) - len(t.actor) == 49
    keys = lt.info_states()
    assert len(keys) == 936 == len(set(keys))
    assert sum("[Round 1]" in key for key in keys) == 36 and sum("[Round 2]" in key for key in keys) == 900
    assert lt.legal_action_names(keys[0]) == ("call", "raise")
    assert lt.MAX_HAND_LOSS == 13


def test_uniform_random_nash_conv_is_openspiels_constant():
    assert lt.nash_conv(lt.uniform_array()) == pytest.approx(lt.UNIFORM_NASH_CONV, abs=1e-12)
    assert lt.UNIFORM_NASH_CONV == pytest.approx(4.7472, abs=1e-4)
    assert lt.exploitability(lt.uniform_policy()) == pytest.approx(UNIFORM_EXPLOITABILITY, abs=1e-12)


def test_best_response_is_achieved_and_never_beaten():
    rng = np.random.default_rng(3)
    sigma = random_array(rng)
    for player in (0, 1):
        value, choice = lt.best_response(sigma, player)
        owned = lt.tree().info_owner == player
        assert np.all(choice[owned] >= 0) and np.all(choice[~owned] == -1)
        response = sigma.copy()
        response[owned] = np.eye(3)[choice[owned]]
        seats = (response, sigma) if player == 0 else (sigma, response)
        sign = 1.0 if player == 0 else -1.0
        assert sign * lt.expected_value(*seats) == pytest.approx(value, abs=1e-12)
        for _ in range(5):  # no other policy does better against sigma
            other = random_array(rng)
            seats = (other, sigma) if player == 0 else (sigma, other)
            assert sign * lt.expected_value(*seats) <= value + 1e-12


def test_report_and_zero_sum_consistency():
    report = lt.exploitability_report(random_array(np.random.default_rng(5)))
    value = report["self_play_value_first_player"]
    assert report["best_response_value"]["player0"] >= value
    assert report["best_response_value"]["player1"] >= -value
    assert report["exploitability"] == pytest.approx(report["nash_conv"] / 2)
    json.dumps(report)


def test_tables_round_trip_and_validation_names_the_problem(tmp_path):
    sigma = random_array(np.random.default_rng(1))
    table = lt.policy_to_table(sigma)
    assert np.allclose(lt.validate_policy(table), sigma)
    key = lt.info_states()[0]
    broken = dict(table)
    del broken[key]
    with pytest.raises(lt.PolicyError, match="1 missing info states"):
        lt.validate_policy(broken)
    with pytest.raises(lt.PolicyError, match=r"legal actions \['call', 'raise'\]"):
        lt.validate_policy({**table, key: {"fold": 0.5, "call": 0.5}})
    with pytest.raises(lt.PolicyError, match="sum to"):
        lt.validate_policy({**table, key: {"call": 0.5, "raise": 0.6}})
    with pytest.raises(lt.PolicyError, match="must be a number >= 0"):
        lt.validate_policy({**table, key: {"call": True, "raise": 0.0}})
    with pytest.raises(lt.PolicyError, match="does not exist"):
        lt.load_policy(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(lt.PolicyError, match="not valid JSON"):
        lt.load_policy(tmp_path / "bad.json")
    with pytest.raises(lt.PolicyError, match="shape"):
        lt.as_array(np.ones((3, 3)))


def _to_openspiel(game, sigma: np.ndarray):
    from open_spiel.python.policy import TabularPolicy

    tabular = TabularPolicy(game)
    for key, row in tabular.state_lookup.items():
        tabular.action_probability_array[row] = sigma[lt.info_index()[key]]
    return tabular


def test_info_states_and_nash_conv_match_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms.exploitability import nash_conv
    from open_spiel.python.policy import TabularPolicy

    game = pyspiel.load_game("leduc_poker")
    tabular = TabularPolicy(game)
    assert set(tabular.state_lookup) == set(lt.info_states())
    # Legal actions agree at every info state (OpenSpiel's mask over fold, call, raise).
    for key, row in tabular.state_lookup.items():
        assert np.array_equal(tabular.legal_actions_mask[row].astype(bool), lt.tree().info_legal[lt.info_index()[key]])
    rng = np.random.default_rng(11)
    for sigma in [lt.uniform_array(), nash_array()] + [random_array(rng) for _ in range(3)]:
        assert lt.nash_conv(sigma) == pytest.approx(nash_conv(game, _to_openspiel(game, sigma)), abs=1e-9)


def test_cfr_plus_reaches_exploitability_1e_3():
    result = cfr_plus(target=1e-3)
    print(f"\nCFR+ on Leduc: exploitability {result.exploitability:.2e} after {result.iterations} iterations, "
          f"{result.seconds:.2f} s (exploitability checked every 10)")
    assert result.exploitability <= 1e-3
    assert result.iterations <= 1000  # measured: 450
    assert lt.exploitability(result.policy) == pytest.approx(result.exploitability)


def test_shipped_nash_policy_is_unexploitable():
    sigma = nash_array()
    assert lt.exploitability(sigma) <= 1e-3
    assert lt.exploitability(sigma) < 2e-5  # solved to 1e-5, then rounded to 7 digits
    assert lt.expected_value(sigma, sigma) == pytest.approx(NASH_VALUE, abs=1e-3)
    # The oracle's edge over uniform random, in chips per hand from both seats.
    assert lt.chips_per_hand(sigma, lt.uniform_array()) > 0.5
    assert len(nash_digest()) == 64


@pytest.mark.slow
def test_regenerating_the_nash_file_reproduces_it(tmp_path):
    result = write_nash(tmp_path / "nash.json")
    assert result.exploitability <= 1e-5
    fresh, shipped = lt.load_policy(tmp_path / "nash.json"), lt.load_policy(NASH_PATH)
    assert np.abs(fresh - shipped).max() <= 1e-6


def test_model_policy_export_covers_all_936_info_states(base_model_dir, tmp_path):
    from arena.players.mlx import MLXPlayer
    from arena.players.policy import leduc_canonical_observations, leduc_model_policy

    observations = leduc_canonical_observations()
    assert list(observations) == list(lt.info_states())
    assert all(observation.info_set == key for key, observation in observations.items())
    start = time.perf_counter()
    table = leduc_model_policy(MLXPlayer(base_model_dir))
    print(f"\nLeduc policy export of the tiny model: {time.perf_counter() - start:.2f} s for {len(table)} info states")
    assert list(table) == list(lt.info_states())
    for key, distribution in table.items():
        assert tuple(distribution) == lt.legal_action_names(key)
        assert sum(distribution.values()) == pytest.approx(1.0, abs=1e-6)
    sigma = lt.validate_policy(table)
    assert 0.0 < lt.exploitability(sigma) <= lt.MAX_HAND_LOSS
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(table))
    report = json.loads(CliRunner().invoke(main, ["exploitability", str(path), "--game", "leduc"]).stdout)
    assert report["exploitability"] == pytest.approx(lt.exploitability(sigma))
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms.exploitability import nash_conv

    game = pyspiel.load_game("leduc_poker")
    assert nash_conv(game, _to_openspiel(game, sigma)) == pytest.approx(lt.nash_conv(sigma), abs=1e-9)


def test_policy_command_prints_json_and_exploitability(base_model_dir):
    result = CliRunner().invoke(main, ["policy", str(base_model_dir), "--game", "leduc", "--json"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    assert len(table) == 936
    assert f"exploitability: {lt.exploitability(table):.4f}" in result.stderr
    kuhn = CliRunner().invoke(main, ["policy", str(base_model_dir), "--json"])
    assert kuhn.exit_code == 0 and len(json.loads(kuhn.stdout)) == 12


def test_exploitability_command_names_a_bad_leduc_file(tmp_path):
    path = tmp_path / "policy.json"
    path.write_text('{"J": 0.5}')
    result = CliRunner().invoke(main, ["exploitability", str(path), "--game", "leduc"])
    assert result.exit_code == 2 and "936 missing info states" in result.stderr
    shipped = CliRunner().invoke(main, ["exploitability", str(NASH_PATH), "--game", "leduc"])
    assert json.loads(shipped.stdout)["exploitability"] < 2e-5


def test_action_gains_average_to_zero_under_the_policy_and_weigh_states_by_reach():
    t = lt.tree()
    logits = np.random.default_rng(4).normal(size=(len(t.info_states), 3))
    sigma = np.where(t.info_legal > 0, np.exp(logits), 0.0)
    sigma /= sigma.sum(axis=1, keepdims=True)
    for player in (0, 1):
        owned = t.info_owner == player
        gains, totals = action_gains(sigma, player)
        # V is the policy's mean of Q, so the policy-weighted gains cancel at every information state it owns.
        np.testing.assert_allclose((sigma * gains).sum(axis=1)[owned], 0.0, atol=1e-12)
        assert not gains[~owned].any() and not totals[~owned].any()
        on_policy, visits = action_gains(sigma, player, on_policy=True)
        assert np.all(visits[owned] <= totals[owned] + 1e-12)  # own reach <= 1 only shrinks the weights
        np.testing.assert_allclose((sigma * on_policy).sum(axis=1)[owned], 0.0, atol=1e-12)
    # Before anyone acts, a state's self-play weight is chance's alone: the six private cards' weights sum to 1.
    start = "[Player: 0][Pot: 2][Money: 99 99][Round1: ][Round2: ]"
    roots = [i for i, name in enumerate(t.info_states) if name.endswith(start)]
    assert len(roots) == 6
    assert action_gains(sigma, 0, on_policy=True)[1][roots].sum() == pytest.approx(1.0, abs=1e-12)


def test_average_policy_plays_as_the_mixture_of_whole_hands():
    rng = np.random.default_rng(6)
    first, second, opponent = random_array(rng), random_array(rng), random_array(rng)
    average = average_policy([first, second], weights=[1.0, 3.0])

    def mixed(play):
        return 0.25 * play(first) + 0.75 * play(second)

    # Realisation equivalence (Kuhn's theorem), from both seats: the own-reach weights make it exact.
    assert lt.expected_value(average, opponent) == pytest.approx(mixed(lambda p: lt.expected_value(p, opponent)),
                                                                 abs=1e-12)
    assert lt.expected_value(opponent, average) == pytest.approx(mixed(lambda p: lt.expected_value(opponent, p)),
                                                                 abs=1e-12)
    naive = (first + 3.0 * second) / 4.0  # the info-state-wise mean is not the mixture
    assert abs(lt.expected_value(naive, opponent) - mixed(lambda p: lt.expected_value(p, opponent))) > 1e-4
    np.testing.assert_allclose(average_policy([first]), first, atol=1e-15)
    for weights in ([1.0], [1.0, float("inf")], [0.0, 0.0], [1.0, -1.0]):
        with pytest.raises(ValueError, match="one finite weight >= 0 per policy"):
            average_policy([first, second], weights=weights)
