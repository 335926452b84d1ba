"""Exact Kuhn poker analysis: reference values, best responses, averaging, policy validation."""

import itertools
import json

import numpy as np
import pytest

from arena.games.kuhn_theory import (
    DEALS,
    INFO_SETS,
    NASH_FIRST_PLAYER_VALUE,
    PolicyError,
    average_policy,
    best_response,
    best_response_value,
    counterfactual_values,
    expected_value,
    exploitability,
    exploitability_report,
    load_policy,
    nash_conv,
    nash_policy,
    own_reach,
    player_info_sets,
    player_of,
    policy_from_array,
    policy_to_array,
    self_play_value,
    terminal_value,
    uniform_policy,
    validate_policy,
)


def random_policy(rng: np.random.Generator) -> dict[str, float]:
    return policy_from_array(rng.random(len(INFO_SETS)))


def test_info_sets_follow_openspiel_names_and_owners():
    assert INFO_SETS == ("0", "0p", "0b", "0pb", "1", "1p", "1b", "1pb", "2", "2p", "2b", "2pb")
    assert [player_of(name) for name in ("0", "1pb", "2p", "0b")] == [0, 0, 1, 1]
    assert set(player_info_sets(0)) | set(player_info_sets(1)) == set(INFO_SETS)
    assert len(DEALS) == 6


def test_terminal_values_standard_kuhn():
    # ante 1 each, bet 1: folds lose the ante, showdowns after a called bet move 2 chips.
    assert terminal_value("pp", (2, 0)) == 1 and terminal_value("pp", (0, 2)) == -1
    assert terminal_value("bp", (0, 2)) == 1
    assert terminal_value("pbp", (2, 0)) == -1
    assert terminal_value("bb", (1, 2)) == -2 and terminal_value("pbb", (2, 1)) == 2
    with pytest.raises(ValueError, match="not a terminal"):
        terminal_value("pb", (0, 1))


def test_reference_exploitabilities():
    assert exploitability(uniform_policy()) == pytest.approx(11 / 24, abs=1e-12)
    assert nash_conv(uniform_policy()) == pytest.approx(11 / 12, abs=1e-12)
    assert exploitability({name: 1.0 for name in INFO_SETS}) == pytest.approx(1 / 3, abs=1e-12)
    # Uniform play: the opener wins 1/8 per round (a known reference value).
    assert self_play_value(uniform_policy()) == pytest.approx(1 / 8, abs=1e-12)


def test_best_response_reference_values():
    never_bet = {name: 0.0 for name in INFO_SETS}
    # Never betting: an opener who always bets wins the ante every round.
    assert best_response_value(never_bet, 0) == pytest.approx(1.0, abs=1e-12)
    assert best_response_value(uniform_policy(), 0) >= self_play_value(uniform_policy())


@pytest.mark.parametrize("alpha", [0.0, 0.05, 0.1, 1 / 6, 0.2, 0.25, 1 / 3])
def test_nash_family_is_unexploitable(alpha):
    policy = nash_policy(alpha)
    assert set(policy) == set(INFO_SETS)
    assert abs(exploitability(policy)) < 1e-12
    assert self_play_value(policy) == pytest.approx(NASH_FIRST_PLAYER_VALUE, abs=1e-12)
    assert NASH_FIRST_PLAYER_VALUE == pytest.approx(-1 / 18)


@pytest.mark.parametrize("alpha", [-0.01, 0.34, 1.0])
def test_nash_policy_rejects_alpha_outside_family(alpha):
    with pytest.raises(ValueError, match="alpha"):
        nash_policy(alpha)


def test_value_alone_does_not_reveal_exploitability():
    # Q never calls after check-bet: the self-play value stays at -1/18, yet a best response gains 1/18.
    broken = {**nash_policy(0.0), "1pb": 0.0}
    assert self_play_value(broken) == pytest.approx(-1 / 18, abs=1e-12)
    assert exploitability(broken) == pytest.approx(1 / 18, abs=1e-12)


def test_perturbed_nash_is_exploitable():
    policy = dict(nash_policy(0.2))
    policy["1b"] = 0.6  # the second mover calls too often with the queen
    assert exploitability(policy) > 1e-3


def _brute_force_best_response(opponent, player):
    """Enumerate all 2**6 pure strategies of ``player``: the best one's value is the best-response value."""
    names = player_info_sets(player)
    best = -np.inf
    for choice in itertools.product((0.0, 1.0), repeat=len(names)):
        table = {**opponent, **dict(zip(names, choice, strict=True))}
        value = expected_value(table, opponent) if player == 0 else -expected_value(opponent, table)
        best = max(best, value)
    return best


def test_best_response_matches_brute_force_enumeration():
    rng = np.random.default_rng(1234)
    policies = [uniform_policy(), nash_policy(0.1)] + [random_policy(rng) for _ in range(8)]
    for policy in policies:
        for player in (0, 1):
            value, response = best_response(policy, player)
            assert value == pytest.approx(_brute_force_best_response(policy, player), abs=1e-12)
            assert set(response) == set(player_info_sets(player))
            assert set(response.values()) <= {0.0, 1.0}


def test_exploitability_is_nonnegative_and_zero_sum_consistent():
    rng = np.random.default_rng(7)
    for _ in range(10):
        policy = random_policy(rng)
        report = exploitability_report(policy)
        assert report["exploitability"] > 0
        assert report["exploitability"] == pytest.approx(report["nash_conv"] / 2)
        value = report["self_play_value_first_player"]
        # Each seat's best response does at least as well as the policy itself in that seat.
        assert report["best_response_value"]["player0"] >= value - 1e-12
        assert report["best_response_value"]["player1"] >= -value - 1e-12


def test_exploitability_report_contents():
    report = exploitability_report(uniform_policy())
    assert report["exploitability"] == pytest.approx(11 / 24)
    assert report["best_response_value"]["player0"] == pytest.approx(0.5)
    assert report["best_response_value"]["player1"] == pytest.approx(5 / 12)
    assert report["self_play_value_first_player"] == pytest.approx(1 / 8)
    assert report["best_response_policy"]["player1"]["0b"] == 0.0  # never call a bet holding the jack
    json.dumps(report)  # the CLI prints it as JSON


def test_average_policy_weights_by_own_reach():
    bets_jack = dict(uniform_policy(), **{"0": 1.0, "0pb": 1.0})  # never reaches "0pb"
    checks_jack = dict(uniform_policy(), **{"0": 0.0, "0pb": 0.0})
    average = average_policy([bets_jack, checks_jack])
    assert average["0"] == pytest.approx(0.5)
    assert average["0pb"] == pytest.approx(0.0)  # only the checking snapshot ever gets there
    assert own_reach(bets_jack, "0pb") == 0.0 and own_reach(checks_jack, "0pb") == 1.0


def test_average_policy_is_equivalent_to_the_mixture():
    # Kuhn's theorem: the reach-weighted average plays exactly like picking snapshot k with
    # probability w_k / sum(w), against any opponent, in either seat.
    rng = np.random.default_rng(99)
    for _ in range(5):
        snapshots = [random_policy(rng) for _ in range(4)]
        weights = rng.random(4)
        average = average_policy(snapshots, weights)
        for opponent in (random_policy(rng), uniform_policy()):
            mixture_first = sum(w * expected_value(p, opponent) for p, w in zip(snapshots, weights, strict=True))
            mixture_second = sum(w * expected_value(opponent, p) for p, w in zip(snapshots, weights, strict=True))
            assert expected_value(average, opponent) == pytest.approx(mixture_first / weights.sum(), abs=1e-12)
            assert expected_value(opponent, average) == pytest.approx(mixture_second / weights.sum(), abs=1e-12)


def test_average_policy_rejects_bad_weights():
    with pytest.raises(ValueError, match="at least one"):
        average_policy([])
    with pytest.raises(ValueError, match="weights"):
        average_policy([uniform_policy()], [1.0, 2.0])
    with pytest.raises(ValueError, match="weights"):
        average_policy([uniform_policy(), uniform_policy()], [0.0, 0.0])
    with pytest.raises(ValueError, match="weights"):
        average_policy([uniform_policy()], [-1.0])


def test_average_of_unreached_info_set_falls_back_to_weighted_mean():
    always_bet = {name: 1.0 for name in INFO_SETS}
    also_bet = dict(always_bet, **{"1pb": 0.0})
    average = average_policy([always_bet, also_bet], [3.0, 1.0])
    assert average["1pb"] == pytest.approx(0.75)


def test_array_round_trip():
    policy = nash_policy(0.2)
    assert policy_from_array(policy_to_array(policy)) == pytest.approx(policy)
    with pytest.raises(PolicyError, match="12 probabilities"):
        policy_from_array([0.5] * 11)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([0.5] * 12, "JSON object"),
        ({name: 0.5 for name in INFO_SETS[:-1]}, "missing info sets \\['2pb'\\]"),
        (dict(uniform_policy(), extra=0.5), "unknown keys \\['extra'\\]"),
        (dict(uniform_policy(), **{"0": 1.5}), "'0' is 1.5"),
        (dict(uniform_policy(), **{"0": -0.1}), "must lie in \\[0, 1\\]"),
        (dict(uniform_policy(), **{"0": float("nan")}), "must lie in \\[0, 1\\]"),
        (dict(uniform_policy(), **{"0": True}), "must be a number"),
        (dict(uniform_policy(), **{"0": "0.5"}), "must be a number"),
    ],
)
def test_validate_policy_errors(raw, message):
    with pytest.raises(PolicyError, match=message):
        validate_policy(raw)


def test_load_policy(tmp_path):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(nash_policy(0.0)))
    assert load_policy(path) == pytest.approx(nash_policy(0.0))
    path.write_text("{not json")
    with pytest.raises(PolicyError, match="not valid JSON"):
        load_policy(path)
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(tmp_path / "missing.json")
    path.write_text(json.dumps({"0": 0.5}))
    with pytest.raises(PolicyError, match=str(path)):
        load_policy(path)


def test_counterfactual_values_add_up_to_the_self_play_value():
    policy = policy_from_array(np.random.default_rng(3).random(12))
    roots = [name for name in INFO_SETS if len(name) == 1]  # the first mover's opening info sets
    total = 0.0
    for name in roots:
        reach, values = counterfactual_values((policy, policy), name)
        assert reach == 2.0  # two deals hold each card, and nobody has acted yet
        total += policy[name] * values["b"] + (1.0 - policy[name]) * values["p"]
    assert total / len(DEALS) == pytest.approx(self_play_value(policy), abs=1e-12)
    # The second mover's info set after a check: the opponent's reach is its check probability with the other cards.
    reach, _ = counterfactual_values((policy, policy), "0p")
    assert reach == pytest.approx((1.0 - policy["1"]) + (1.0 - policy["2"]), abs=1e-12)
