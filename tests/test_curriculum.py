"""The automatic curriculum: band logic (pure), the task ladder, probing, config errors, and the eps-oracle."""

import dataclasses
from collections import Counter

import pytest

from arena.core.config import ConfigError, from_mapping
from arena.core.errors import ArenaError
from arena.core.seeds import SeedsConfig
from arena.games.registry import make_game
from arena.players.build import make_player
from arena.players.scripted import EpsOraclePlayer, OraclePlayer, RandomPlayer, make_scripted
from arena.players.specs import is_scripted
from arena.train.config import CurriculumConfig
from arena.train.curriculum import (
    IN_BAND,
    MASTERED,
    TOO_HARD,
    band_status,
    choose_tasks,
    easier_task,
    ladder,
    plan_round,
    probe_seeds,
)

# ----------------------------------------------------------------------------------------------- band logic


def test_band_status_includes_its_limits():
    assert [band_status(r, 0.3, 0.7) for r in (0.29, 0.3, 0.5, 0.7, 0.71)] == [
        TOO_HARD, IN_BAND, IN_BAND, IN_BAND, MASTERED]


def test_in_band_tasks_win_nearest_the_centre_then_harder_first():
    # Tier 0 mastered, 1-3 in band (3 nearest 0.5, 1 and 2 tie at distance 0.1), 4 too hard.
    rates = [0.9, 0.6, 0.4, 0.52, 0.1]
    assert choose_tasks(rates, 0.3, 0.7, 1) == [3]
    assert choose_tasks(rates, 0.3, 0.7, 2) == [2, 3]  # tie between tiers 1 and 2 goes to the harder one
    assert choose_tasks(rates, 0.3, 0.7, 3) == [1, 2, 3]
    assert choose_tasks(rates, 0.3, 0.7, 10) == [0, 1, 2, 3, 4]  # asking for more than exist: all, ladder order


def test_mastering_a_tier_raises_the_difficulty():
    # Round 1: the easiest tier is in band. Round 2: it is mastered and the next tier has come into the band.
    assert choose_tasks([0.5, 0.2, 0.05], 0.3, 0.7, 1) == [0]
    assert choose_tasks([0.85, 0.45, 0.2], 0.3, 0.7, 1) == [1]
    assert choose_tasks([0.95, 0.8, 0.55], 0.3, 0.7, 1) == [2]


def test_outside_the_band_the_nearest_tasks_are_chosen():
    assert choose_tasks([0.99, 0.9, 0.8], 0.3, 0.7, 1) == [2]  # everything mastered: the hardest
    assert choose_tasks([0.2, 0.1, 0.0], 0.3, 0.7, 2) == [0, 1]  # everything too hard: the easiest
    assert choose_tasks([0.9, 0.1], 0.3, 0.7, 1) == [1]  # a gap: 0.1 is 0.2 below, 0.9 is 0.2 above; harder wins


def test_choose_tasks_rejects_nothing_to_choose():
    with pytest.raises(ValueError, match="at least one"):
        choose_tasks([], 0.3, 0.7, 1)
    with pytest.raises(ValueError, match="max_tasks = 0"):
        choose_tasks([0.5], 0.3, 0.7, 0)


def test_easier_task_is_the_best_measured_untried_one():
    assert easier_task([0.6, 0.2, 0.1], tried=[1, 2]) == 0
    assert easier_task([0.2, 0.2, 0.1], tried=[2]) == 0  # tie: the lower tier
    assert easier_task([0.6, 0.2], tried=[0, 1]) is None


# ----------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("values", "pattern"),
    [
        ({"band_low": -0.1}, r"curriculum\.band_low = -0\.1 is invalid: must lie in \[0, 1\]"),
        ({"band_high": 1.5}, r"curriculum\.band_high = 1\.5 is invalid: must lie in \[0, 1\]"),
        ({"band_low": 0.7, "band_high": 0.3}, r"curriculum\.band_high = 0\.3 is invalid: must be > curriculum"),
        ({"band_low": 0.5, "band_high": 0.5}, r"curriculum\.band_high = 0\.5 is invalid: .*empty or inverted"),
        ({"band_low": "0.3"}, r"curriculum\.band_low = '0\.3' must be a float"),
        ({"epsilons": [1.0, 1.2]}, r"curriculum\.epsilons\[1\] = 1\.2 is invalid"),
        ({"epsilons": [0.0, 1.0]}, r"curriculum\.epsilons = \[0\.0, 1\.0\] is invalid: must be strictly decreasing"),
        ({"epsilons": []}, r"curriculum\.epsilons = \[\] is invalid"),
        ({"variants": []}, r"curriculum\.variants = \[\] is invalid"),
        ({"probe_games": 1}, r"curriculum\.probe_games = 1 is invalid"),
        ({"max_tasks": 0}, r"curriculum\.max_tasks = 0 is invalid"),
        ({"band": [0.3, 0.7]}, r"unknown key curriculum\.band;"),
    ],
)
def test_bad_curriculum_values_name_the_key(values, pattern):
    with pytest.raises(ConfigError, match=pattern):
        from_mapping(CurriculumConfig, values, "curriculum")


def test_the_ladder_is_variant_major_and_validates_variants_for_the_game():
    config = CurriculumConfig(epsilons=(1.0, 0.25), variants=({"rounds": 1}, {"rounds": 5}))
    tasks = ladder(config, "kuhn")
    assert [t.tier for t in tasks] == [0, 1, 2, 3]
    assert [t.label for t in tasks] == [
        "kuhn[rounds=1] vs eps-oracle:1.0", "kuhn[rounds=1] vs eps-oracle:0.25",
        "kuhn[rounds=5] vs eps-oracle:1.0", "kuhn[rounds=5] vs eps-oracle:0.25"]
    with pytest.raises(ConfigError, match=r"curriculum\.variants\[0\] = \{'piles': \[3\]\} is invalid for kuhn"):
        ladder(CurriculumConfig(variants=({"piles": [3]},)), "kuhn")


def test_plan_round_probes_every_task_on_training_seeds_and_records_the_choice():
    config = CurriculumConfig(epsilons=(1.0, 0.0), variants=({"piles": [1, 2]},), probe_games=40, max_tasks=1)
    seeds = SeedsConfig()
    chosen, record = plan_round(OraclePlayer(), "nim", seeds, config)
    block = probe_seeds(seeds, config)
    assert block.stop <= seeds.train_end and len(block) == 20  # each probe deal is played from both seats
    assert record["probe_seeds"] == [block.start, block.stop]
    assert [row["games"] for row in record["tasks"]] == [40, 40]
    # Nim [1, 2] is a first-player win: the exact oracle wins every game it opens, and against itself (eps 0)
    # exactly those; against a random opponent it also wins some of the games it does not open.
    exact = record["tasks"][1]
    assert exact["win_rate"] == 0.5 and exact["status"] == IN_BAND
    assert record["tasks"][0]["win_rate"] > 0.5
    assert [t.tier for t in chosen] == record["chosen"] == [1]
    assert record["chosen_labels"] == ["nim[piles=[1, 2]] vs eps-oracle:0.0"]


# ----------------------------------------------------------------------------------------------- eps-oracle


def _key(observation, key):
    return dataclasses.replace(observation, sample_key=key)


def test_eps_oracle_specs_parse_route_and_reject_bad_epsilons():
    player = make_player("eps-oracle:0.5")
    assert isinstance(player, EpsOraclePlayer) and player.spec == "eps-oracle:0.5" and player.epsilon == 0.5
    assert is_scripted("eps-oracle:0.25") and is_scripted("random") and not is_scripted("eps-oracle:2")
    for bad in ("eps-oracle:1.5", "eps-oracle:-0.1", "eps-oracle:abc", "eps-oracle:", "eps-oracle:nan"):
        with pytest.raises(ArenaError, match=r"write eps-oracle:EPS with EPS a number in \[0, 1\]"):
            make_player(bad)
    with pytest.raises(ValueError, match=r"eps-oracle:EPS"):
        make_scripted("eps_oracle")


def test_eps_oracle_pins_its_epsilon_and_same_values_play_alike():
    pins = [make_scripted(spec).pin() for spec in ("eps-oracle:0.5", "eps-oracle:0.25")]
    assert pins[0]["code_hash"] == pins[1]["code_hash"] and pins[0]["config_hash"] != pins[1]["config_hash"]
    assert pins[0]["name"] == "eps-oracle:0.5"
    observation = make_game("tictactoe", 0).observation()
    one, one_point_zero = make_scripted("eps-oracle:1"), make_scripted("eps-oracle:1.0")
    assert all(one.act(_key(observation, k)) == one_point_zero.act(_key(observation, k)) for k in range(200))


def test_eps_oracle_dilutes_the_oracle_by_epsilon():
    observation = make_game("tictactoe", 0).observation()  # the opening: 9 legal moves, the oracle takes [0]
    oracle = OraclePlayer().act(observation).action
    keys = range(4_000)
    pure = make_scripted("eps-oracle:0.0")
    assert all(pure.act(_key(observation, k)).action == oracle for k in keys)
    # With epsilon 1/2 a move differs from the oracle's when the coin says random (1/2) and the random move
    # is another cell (8/9): p = 4/9. Over 4,000 keys the sd is sqrt(p(1-p)/4000) = 0.0079; 5 sd = 0.039.
    half = make_scripted("eps-oracle:0.5")
    differ = sum(half.act(_key(observation, k)).action != oracle for k in keys) / len(keys)
    assert abs(differ - 4 / 9) < 0.04, differ
    # Epsilon 1 is uniform over the legal moves (each ~ Binomial(4000, 1/9): sd 19.9, 5 sd ~ 100).
    counts = Counter(make_scripted("eps-oracle:1.0").act(_key(observation, k)).action for k in keys)
    assert set(counts) == set(observation.legal_actions)
    assert all(abs(c - 4_000 / 9) < 100 for c in counts.values()), counts
    # Its own stream, not random's: the same key does not force the same move as `random`.
    assert sum(RandomPlayer().act(_key(observation, k)).action == make_scripted("eps-oracle:1.0").act(
        _key(observation, k)).action for k in keys) < 4_000 / 9 * 1.5
