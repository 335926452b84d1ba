"""Leduc Hold'em as a game: rules, chip payoffs, legal actions, observations, forfeits, replay, seat fairness."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest
from gameplay import play_game

from arena.games.leduc import LeducGame, history_letters, seat_payoffs
from arena.games.leduc_cfr import nash_table
from arena.games.leduc_theory import (
    CALL,
    DEALS,
    FOLD,
    MAX_HAND_LOSS,
    RAISE,
    after,
    betting_round,
    expected_value,
    info_states,
    is_terminal,
    legal_actions,
    terminal_value,
    tree,
    uniform_array,
)
from arena.games.registry import get_spec, make_game, replay
from arena.play.config import ProbeConfig
from arena.play.match import duplicate_schedule, play_match
from arena.play.probe import audit_game
from arena.play.stats import summarize_match
from arena.players.scripted import OraclePlayer, RandomPlayer, StallerPlayer, leduc_action, make_scripted

RANDOM = RandomPlayer()
WORDS = {FOLD: "[fold]", RAISE: "[raise]"}


def _move(legal: tuple[str, ...], action: int) -> str:
    """The action string for an OpenSpiel action id: CALL is whichever of check/call is legal."""
    if action == CALL:
        return next(a for a in legal if a in ("[check]", "[call]"))
    return WORDS[action]


def _play(seed: int, actions: list[int], variant: dict | None = None) -> LeducGame:
    game = make_game("leduc", seed, variant)
    for action in actions:
        game.step(_move(game.observation().legal_actions, action))
    return game


def _deal(seed: int) -> tuple[int, int, int]:
    """(seat 0's card, seat 1's card, public card) of a seed's first hand."""
    game = _play(seed, [CALL, CALL])
    cards = game._env.state.game_state["player_cards"]
    return cards[0], cards[1], game.observation().state["public"]


def test_registered_with_a_rounds_variant():
    spec = get_spec("leduc")
    assert spec.env_id == "arena-LeducHoldem-v0"
    assert spec.default_variant == {"rounds": 1}
    with pytest.raises(ValueError, match=r"unknown leduc variant key\(s\) \['hands'\]; allowed keys: \['rounds'\]"):
        make_game("leduc", 0, {"hands": 2})
    with pytest.raises(ValueError, match=r"'rounds' must be an int >= 1, got 0"):
        make_game("leduc", 0, {"rounds": 0})


def test_legal_actions_follow_the_raise_cap_in_both_rounds():
    game = make_game("leduc", 0)
    assert game.observation().legal_actions == ("[check]", "[raise]")
    game.step("[check]")
    assert game.observation().legal_actions == ("[check]", "[raise]")
    game.step("[raise]")
    assert game.observation().legal_actions == ("[fold]", "[call]", "[raise]")
    game.step("[raise]")  # the second raise of the round: no third
    assert game.observation().legal_actions == ("[fold]", "[call]")
    game.step("[call]")
    assert game.observation().state["public"] is not None and game.current_player == 0  # player 0 reopens
    assert game.observation().legal_actions == ("[check]", "[raise]")
    for action, legal in (("[raise]", ("[fold]", "[call]", "[raise]")), ("[raise]", ("[fold]", "[call]"))):
        game.step(action)
        assert game.observation().legal_actions == legal
    game.step("[call]")
    assert game.done and abs(game.result().rewards[0]) in (0.0, 13.0)  # 1 + 2 + 2 + 4 + 4 each


@pytest.mark.parametrize("action", ["[call]", "[fold]", "[bet]", "raise please", "I check"])
def test_moves_that_are_not_legal_now_are_invalid(action):
    game = make_game("leduc", 0)
    game.step(action)
    assert game.moves[-1].valid is False and not game.done
    game.step("[check]")  # one retry is allowed, then play goes on
    assert game.moves[-1].valid and game.current_player == 1


def test_a_bare_keyword_is_bracketed_by_textarenas_action_wrapper():
    game = make_game("leduc", 0)
    game.step("raise")
    assert game.moves[-1].valid and game.observation().legal_actions == ("[fold]", "[call]", "[raise]")


def test_hand_checked_chip_payoffs():
    # deal (player 0's card, player 1's card, public); cards 0-1 are J, 2-3 Q, 4-5 K.
    assert terminal_value(((CALL, CALL), (CALL, CALL)), (0, 2), 4) == -1  # Q beats J
    assert terminal_value(((CALL, CALL), (CALL, CALL)), (0, 4), 1) == 1  # a pair of jacks beats the king
    assert terminal_value(((RAISE, RAISE, CALL), (RAISE, RAISE, CALL)), (4, 5), 0) == 0  # equal ranks split
    assert terminal_value(((RAISE, RAISE, CALL), (RAISE, RAISE, CALL)), (5, 0), 2) == MAX_HAND_LOSS == 13
    assert terminal_value(((RAISE, FOLD), ()), (0, 5), None) == 1  # the folder loses the ante
    assert terminal_value(((CALL, RAISE, RAISE, FOLD), ()), (0, 5), None) == 3  # player 1 folds after raising to 3
    assert terminal_value(((RAISE, CALL), (CALL, RAISE, FOLD)), (5, 0), 1) == -3  # player 0 folds: 1 + 2 in


def _terminals() -> list:
    return [h for h in tree().histories if is_terminal(h)]


def test_every_terminal_history_pays_the_theory_chips_for_real_deals():
    seeds = [0, 1, 2, 5, 8]
    for seed in seeds:
        c0, c1, public = _deal(seed)
        for history in _terminals():
            game = _play(seed, list(history[0] + history[1]))
            assert game.done
            result = game.result()
            value = terminal_value(history, (c0, c1), public if betting_round(history) == 2 else None)
            assert result.rewards == (value, -value) == result.round_rewards[0]
            hand = game.completed_hands[0]
            assert seat_payoffs(hand) == result.rewards and hand.history == history
            # The env's own chip count agrees with the theory's payoff.
            assert game._env.state.game_state["player_chips"] == {0: value, 1: -value}


def test_payoffs_and_info_states_match_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    openspiel = pyspiel.load_game("leduc_poker")
    for seed in range(6):
        c0, c1, public = _deal(seed)
        for history in _terminals():
            state = openspiel.new_initial_state()
            state.apply_action(c0)
            state.apply_action(c1)
            game = make_game("leduc", seed)
            for action in history[0] + history[1]:
                if state.is_chance_node():
                    state.apply_action(public)
                assert game.observation().info_set == state.information_state_string()
                assert len(game.observation().legal_actions) == len(state.legal_actions())
                game.step(_move(game.observation().legal_actions, action))
                state.apply_action(action)
            assert state.is_terminal() and game.done
            assert game.result().rewards == tuple(state.returns())


def test_observation_views():
    seed = 4
    c0, c1, public = _deal(seed)
    game = make_game("leduc", seed)
    observation = game.observation()
    rank = "JJQQKK"
    assert observation.compact == f"card: {rank[c0]}\nhistory: \n"
    assert observation.info_set == (f"[Observer: 0][Private: {c0}][Round 1][Player: 0][Pot: 2][Money: 99 99]"
                                    "[Round1: ][Round2: ]")
    assert "Leduc Hold'em" in observation.text and "Your private card" in observation.text
    game.step("[raise]")
    game.step("[call]")
    observation = game.observation()
    assert observation.compact == f"card: {rank[c0]}\nboard: {rank[public]}\nhistory: rc/\n"
    assert observation.state == {"card": c0, "public": public, "history": [[RAISE, CALL], []], "position": 0,
                                 "hand": 1, "rounds": 1}
    assert observation.info_set.endswith(f"[Pot: 6][Money: 97 97][Public: {public}][Round1: 2 1][Round2: ]")
    assert history_letters(((RAISE, RAISE, CALL), (CALL, RAISE))) == "rrc/cr"


@pytest.mark.parametrize("offender", [0, 1])
def test_two_invalid_moves_in_a_row_forfeit_the_maximum_hand_loss(offender):
    game = make_game("leduc", 3, {"rounds": 3})
    game.step("[raise]")
    game.step("[call]")  # hand 1 goes on to the second round
    if game.current_player != offender:
        game.step("[check]")
    game.step("garbage")
    game.step("[pass]")
    result = game.result()
    assert result.forfeit_by == offender and f"Player {offender} forfeited" in result.reason
    penalty = (-13.0, 13.0) if offender == 0 else (13.0, -13.0)
    assert result.round_rewards == (penalty,) * 3
    assert result.rewards == (3 * penalty[0], 3 * penalty[1])


def test_a_forfeit_never_pays_better_than_any_legal_line():
    worst = min(terminal_value(h, d[:2], d[2]) * sign for d in DEALS for h in _terminals() for sign in (1, -1))
    assert worst == -MAX_HAND_LOSS
    for seed in range(4):
        assert play_game(make_game("leduc", seed), (StallerPlayer(), RANDOM), seed).rewards[0] == worst


def test_multi_hand_games_alternate_the_opener_and_sum_hands():
    game = make_game("leduc", 4, {"rounds": 3})
    result = play_game(game, (RANDOM, RANDOM), 4)
    hands = game.completed_hands
    assert [hand.opener for hand in hands] == [0, 1, 0]
    assert result.round_rewards == tuple(seat_payoffs(hand) for hand in hands)
    assert result.rewards == (sum(r[0] for r in result.round_rewards), sum(r[1] for r in result.round_rewards))
    # In hand 2 seat 1 acts first, so its info states are those of OpenSpiel's player 0.
    game = _play(4, [CALL, CALL, CALL, CALL], {"rounds": 3})
    observation = game.observation()
    assert observation.player_id == 1 and observation.state["position"] == 0
    assert observation.info_set.startswith("[Observer: 0]") and observation.state["hand"] == 2


def test_replay_is_deterministic_and_seeded():
    game = make_game("leduc", 9, {"rounds": 2})
    result = play_game(game, (RANDOM, RANDOM), 9)
    assert replay("leduc", {"rounds": 2}, 9, game.actions) == result
    actions = ["[check]", "[check]", "[check]", "[check]"]
    assert len({replay("leduc", None, seed, actions).transcript_digest for seed in range(12)}) == 12
    before = random.getstate()
    assert [_deal(seed) for seed in range(20)] == [_deal(seed) for seed in range(20)]
    assert random.getstate() == before  # dealing never moves the caller's global random


def test_all_deals_occur_and_the_public_card_is_dealt_from_the_rest():
    n = 2400
    deals = Counter(_deal(seed) for seed in range(n))
    assert set(deals) == set(DEALS)
    expected = n / len(DEALS)
    chi_square = sum((count - expected) ** 2 / expected for count in deals.values())
    assert chi_square < 180  # uniform over the 120 deals (the 99.9% quantile of chi-square with 119 dof is 173)


def test_random_vs_random_is_seat_fair_and_matches_the_exact_value():
    games = 1200
    mirror = make_scripted("random")
    mirror.spec = "random-b"
    records = play_match("leduc", (RANDOM, mirror), duplicate_schedule(range(games // 2), games))
    summary = summarize_match(records, "random", "random-b")
    assert summary["p0_win_rate"]["low"] <= 0.5 <= summary["p0_win_rate"]["high"]
    chips = summary["mean_chips_per_round"]
    assert abs(chips["p0"]) < 0.3 and chips["p0"] == -chips["p1"]
    # The opener (seat 0 in a one-hand game) wins the exact uniform self-play value on average.
    exact = expected_value(uniform_array(), uniform_array())
    opener = [play_game(make_game("leduc", seed), (RANDOM, RANDOM), seed).rewards[0] for seed in range(2000)]
    mean = sum(opener) / len(opener)
    spread = (sum((x - mean) ** 2 for x in opener) / (len(opener) - 1) / len(opener)) ** 0.5
    assert abs(mean - exact) < 4 * spread


def test_oracle_samples_the_shipped_nash_policy():
    oracle = OraclePlayer()
    root = make_game("leduc", 0).observation()
    table = nash_table()[root.info_set]
    draws = Counter(oracle.act(dataclasses.replace(root, sample_key=k)).action for k in range(4000))
    assert draws["[raise]"] / 4000 == pytest.approx(table["raise"], abs=0.02)
    assert leduc_action(("[fold]", "[call]", "[raise]"), {"fold": 0.2, "call": 0.3, "raise": 0.5}, 0.1) == "[fold]"
    assert leduc_action(("[check]", "[raise]"), {"call": 0.4, "raise": 0.6}, 0.3) == "[check]"
    assert leduc_action(("[check]", "[raise]"), {"call": 0.4, "raise": 0.6}, 0.999999) == "[raise]"
    assert set(nash_table()) == set(info_states())


def test_probe_passes_on_leduc():
    checks = audit_game("leduc", ProbeConfig(games=("leduc",)))
    assert all(check.passed for check in checks), checks
    assert [check.name for check in checks] == ["staller vs random", "spammer vs random", "oracle vs random",
                                                "random vs random", "always raise/call vs oracle"]


def test_after_and_legal_actions_walk_the_tree():
    history = ((), ())
    for action in (RAISE, RAISE, CALL):
        assert action in legal_actions(history)
        history = after(history, action)
    assert betting_round(history) == 2 and legal_actions(history) == (CALL, RAISE)
