"""Scripted players: registry and pins, sampling from the key alone, exact oracles, and degenerate policies."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from functools import reduce
from operator import xor

import pytest
from gameplay import play_game

from arena.games.base import Observation
from arena.games.kuhn_theory import expected_value, nash_policy, uniform_policy
from arena.games.nim_theory import nim_move
from arena.games.registry import GAMES, make_game
from arena.games.tictactoe_theory import ttt_best_move
from arena.players.scripted import (
    SCRIPTED,
    FirstPlayer,
    OraclePlayer,
    RandomPlayer,
    SpammerPlayer,
    StallerPlayer,
    liarsdice_choice,
    make_scripted,
)
from arena.players.specs import SCRIPTED_NAMES

RANDOM = RandomPlayer()
ORACLE = OraclePlayer()


def _observation(game_id: str = "tictactoe", seed: int = 0, key: int = 0) -> Observation:
    return dataclasses.replace(make_game(game_id, seed).observation(), sample_key=key)


def test_registry_and_unknown_names():
    assert sorted(SCRIPTED) == ["accept-all", "fair", "first", "greedy", "never", "offer-spam", "oracle", "random",
                                "responder", "spammer", "staller"]
    assert set(SCRIPTED) == set(SCRIPTED_NAMES)
    for name in SCRIPTED:
        assert make_scripted(name).spec == name
    with pytest.raises(ValueError, match=r"'randy'.*first.*oracle.*random.*spammer.*staller"):
        make_scripted("randy")


def test_pins_name_the_policy_and_digest_its_code_and_config():
    pins = {name: make_scripted(name).pin() for name in SCRIPTED}
    for name, pin in pins.items():
        assert pin["kind"] == "scripted" and pin["name"] == name
        assert len(pin["code_hash"]) == 64 and len(pin["config_hash"]) == 64
        assert make_scripted(name).pin() == pin  # stable
    assert len({pin["code_hash"] for pin in pins.values()}) == len(pins)
    assert OraclePlayer(1 / 6).pin()["config_hash"] != pins["oracle"]["config_hash"]
    assert OraclePlayer(1 / 6).pin()["code_hash"] == pins["oracle"]["code_hash"]
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1/3\], got 0.5"):
        OraclePlayer(0.5)


def test_random_depends_only_on_the_sample_key_and_covers_the_legal_actions():
    observation = _observation()
    other = _observation("nim", 3)
    for key in range(50):
        mine = dataclasses.replace(observation, sample_key=key)
        alone = RANDOM.act(mine).action
        batched = RANDOM.act_batch([dataclasses.replace(other, sample_key=key + 1), mine, mine])
        assert batched[1].action == batched[2].action == alone
    counts = Counter(RANDOM.act(dataclasses.replace(observation, sample_key=k)).action for k in range(9_000))
    assert set(counts) == set(observation.legal_actions)
    # Uniform over 9 cells: each count ~ Binomial(9000, 1/9), sd ~ 29.8; 5 sd bounds.
    assert all(abs(c - 1_000) < 150 for c in counts.values()), counts


def test_first_takes_the_first_legal_action():
    observation = _observation("kuhn")
    assert FirstPlayer().act(observation).action == observation.legal_actions[0] == "[check]"


def test_kuhn_oracle_sampled_value_matches_minus_one_eighteenth():
    # Oracle vs oracle, one round, player 1 opens. Tolerance: 4 standard errors (sample std / sqrt(n)) of
    # the mean; with n = 10,000 that is ~0.047, so the estimate is also distinguishable from 0 and from
    # the uniform-random value 1/8.
    n = 10_000
    payoffs = [play_game(make_game("kuhn", seed), (ORACLE, ORACLE), seed).rewards[1] for seed in range(n)]
    mean = sum(payoffs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in payoffs) / (n - 1))
    assert abs(mean - (-1 / 18)) < 4 * std / math.sqrt(n), (mean, std)


def test_kuhn_oracle_samples_its_mixed_actions_at_the_nash_rates():
    # The responder's J facing a check bets with probability 1/3 (every alpha); 3,000 keys give sd ~ 0.0086.
    game = make_game("kuhn", _seed_with_responder_card(0))
    game.step("[check]")
    observation = game.observation()
    assert observation.info_set == "0p"
    bets = sum(ORACLE.act(dataclasses.replace(observation, sample_key=k)).action == "[bet]" for k in range(3_000))
    assert abs(bets / 3_000 - 1 / 3) < 5 * math.sqrt((1 / 3) * (2 / 3) / 3_000)


def _seed_with_responder_card(card: int) -> int:
    for seed in range(100):
        game = make_game("kuhn", seed)
        game.step("[check]")
        if game.observation().state["card"] == card:
            return seed
    raise AssertionError(f"no seed below 100 deals card {card} to the responder")


def test_kuhn_oracle_beats_random_by_the_exact_margin():
    # Exact: Nash against uniform random, averaged over the two seats.
    uniform, nash = uniform_policy(), nash_policy(ORACLE.kuhn_alpha)
    edge = (expected_value(nash, uniform) - expected_value(uniform, nash)) / 2
    assert edge == pytest.approx(1 / 9, abs=1e-12)
    n = 4_000
    gains = []
    for seed in range(n):
        seat = seed % 2
        players = (ORACLE, RANDOM) if seat == 0 else (RANDOM, ORACLE)
        gains.append(play_game(make_game("kuhn", seed), players, seed).rewards[seat])
    mean = sum(gains) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in gains) / (n - 1))
    assert abs(mean - edge) < 4 * std / math.sqrt(n), (mean, std)
    assert mean > 4 * std / math.sqrt(n)  # clearly positive


def test_tictactoe_minimax_never_loses_to_random_and_draws_itself():
    results = [
        play_game(make_game("tictactoe", seed), (ORACLE, RANDOM) if seed % 2 else (RANDOM, ORACLE), seed)
        for seed in range(60)
    ]
    oracle_rewards = [r.rewards[1 - seed % 2] for seed, r in enumerate(results)]
    assert min(oracle_rewards) >= 0
    assert sum(reward == 1 for reward in oracle_rewards) >= 45  # random blunders often
    assert play_game(make_game("tictactoe", 0), (ORACLE, ORACLE), 0).rewards == (0.0, 0.0)


def test_tictactoe_minimax_takes_wins_and_blocks():
    assert ttt_best_move(["X", "X", "", "O", "O", "", "", "", ""], "O") == 5  # win beats block
    assert ttt_best_move(["X", "X", "", "", "O", "", "", "", ""], "O") == 2  # block


def test_nim_sum_wins_every_winning_position_against_random():
    variants = [{"piles": [3, 4, 5]}, {"piles": [1, 2, 4]}, {"piles": [2, 5, 6]}, {"piles": [7]}]
    for variant in variants:
        for seed in range(10):
            result = play_game(make_game("nim", seed, variant), (ORACLE, RANDOM), seed)
            assert result.rewards == (1.0, -1.0), (variant, seed)
    # From a lost position (nim-sum 0) the oracle still moves legally and wins as soon as random slips.
    lost = [play_game(make_game("nim", s, {"piles": [1, 2, 3]}), (ORACLE, RANDOM), s).rewards[0] for s in range(20)]
    assert sum(r == 1.0 for r in lost) >= 10


def test_nim_move_reaches_nim_sum_zero():
    assert nim_move([3, 4, 5]) == (0, 2)
    assert nim_move([1, 2, 3]) == (2, 1)  # lost: take one from the largest pile
    for piles in ([5, 9, 13], [1, 1, 1], [6], [2, 7, 7, 3]):
        assert reduce(xor, piles) != 0
        pile, quantity = nim_move(piles)
        after = list(piles)
        after[pile] -= quantity
        assert 1 <= quantity <= piles[pile] and reduce(xor, after) == 0


def test_liarsdice_heuristic_calls_impossible_bids_and_bids_what_it_holds():
    legal = ("[Call]", "[Bid: 6, 6]")
    state = {"dice": [1, 2, 3], "dice_counts": [3, 3], "bid": (6, 5)}
    assert liarsdice_choice(state, legal) == "[Call]"  # no 5 held: 6 fives is impossible
    opening = make_game("liarsdice", 0).observation()
    choice = liarsdice_choice(opening.state, opening.legal_actions)
    quantity, face = (int(x) for x in choice[len("[Bid: ") : -1].split(", "))
    dice = opening.state["dice"]
    assert quantity == 1 and dice.count(face) == max(dice.count(f) for f in range(1, 7))


def test_liarsdice_oracle_beats_random_clearly():
    n = 100
    wins = sum(
        play_game(make_game("liarsdice", s), (ORACLE, RANDOM) if s % 2 else (RANDOM, ORACLE), s).rewards[1 - s % 2]
        == 1.0
        for s in range(n)
    )
    assert wins >= 85, wins


@pytest.mark.parametrize("game_id", sorted(set(GAMES) - {"negotiation"}))
@pytest.mark.parametrize("degenerate", [StallerPlayer(), SpammerPlayer()], ids=["staller", "spammer"])
def test_degenerate_players_lose_every_game_against_random(game_id, degenerate):
    for seed in range(10):
        seat = seed % 2
        players = (degenerate, RANDOM) if seat == 0 else (RANDOM, degenerate)
        result = play_game(make_game(game_id, seed), players, seed)
        assert result.forfeit_by == seat
        assert result.rewards[seat] < 0 < result.rewards[1 - seat]
        assert result.invalid_moves[seat] == 2


@pytest.mark.parametrize("degenerate", [StallerPlayer(), SpammerPlayer()], ids=["staller", "spammer"])
def test_degenerate_text_is_a_pass_in_negotiation_and_never_wins(degenerate):
    # TextArena's SimpleNegotiation takes any text without an offer or [Accept] as a valid "no new offer".
    for seed in range(6):
        seat = seed % 2
        players = (degenerate, RANDOM) if seat == 0 else (RANDOM, degenerate)
        result = play_game(make_game("negotiation", seed), players, seed)
        assert result.forfeit_by is None and result.invalid_moves == (0, 0)
        assert result.rewards[seat] <= 0 and result.details["value_gain"][seat] == 0


def test_spammer_text_depends_on_the_key_and_is_never_a_legal_action():
    observation = _observation("kuhn")
    spam = {SpammerPlayer().act(dataclasses.replace(observation, sample_key=k)).action for k in range(200)}
    assert len(spam) == 200
    assert all(" " in text and text.replace(" ", "").isalpha() for text in spam)
