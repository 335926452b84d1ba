"""Tests for arena.play.stats: Wilson intervals (values, exact coverage) and match summaries from synthetic records."""

import json
import math

import pytest
from tourney_fakes import make_record

from arena.play.stats import game_score, summarize_match, wilson_interval


def test_wilson_matches_hand_computed_values():
    # p = 0.5, n = 10, z = 1.96: centre 0.5, half-width 1.96 * sqrt(0.025 + 0.009604) / 1.38416 = 0.263410.
    rate, low, high = wilson_interval(5, 10)
    assert rate == 0.5
    assert low == pytest.approx(0.236590, abs=1e-6)
    assert high == pytest.approx(0.763410, abs=1e-6)
    # 0 of 10: the lower bound is 0 and the upper bound z^2 / (n + z^2) = 3.8416 / 13.8416.
    assert wilson_interval(0, 10) == (0.0, 0.0, pytest.approx(3.8416 / 13.8416))
    rate, low, high = wilson_interval(10, 10)
    assert (rate, high) == (1.0, 1.0) and low == pytest.approx(10 / 13.8416)


def test_wilson_counts_draws_as_half_a_win():
    # 3 wins and 2 draws in 10 games is 4 successes: the same interval as 4 wins.
    assert wilson_interval(3 + 0.5 * 2, 10) == wilson_interval(4, 10)


@pytest.mark.parametrize("n", [20, 50, 100])
def test_wilson_exact_coverage_is_near_95_percent(n):
    # Exact coverage: sum over k of Binomial(n, p) mass where the interval for k contains p. Wilson's
    # coverage oscillates around the nominal level; over p in [0.05, 0.95] its mean stays within
    # 0.94-0.96 and its minimum above 0.92 for these n (a 90% interval, z=1.645, would average ~0.90).
    def coverage(p):
        return sum(
            math.comb(n, k) * p**k * (1 - p) ** (n - k)
            for k in range(n + 1)
            if wilson_interval(k, n)[1] <= p <= wilson_interval(k, n)[2]
        )

    values = [coverage(i / 100) for i in range(5, 96)]
    assert 0.94 <= sum(values) / len(values) <= 0.96
    assert min(values) >= 0.92


def test_wilson_rejects_bad_input():
    with pytest.raises(ValueError, match="n=0"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="non-negative int"):
        wilson_interval(1, -1)
    with pytest.raises(ValueError, match="z must be"):
        wilson_interval(1, 2, z=0)


def test_game_score():
    assert game_score([1, -1], 0) == 1.0
    assert game_score([1, -1], 1) == 0.0
    assert game_score([0, 0], 1) == 0.5


def _match(game_id="tictactoe"):
    """A: 'oracle', B: 'random', A in seat k % 2. Results from A's side: W, W, D, L, errored, W."""
    a, b = "oracle", "random"
    return [
        make_record(game_id, 100, [a, b], [1, -1], invalid_moves=[0, 1]),
        make_record(game_id, 101, [b, a], [-1, 1]),
        make_record(game_id, 102, [a, b], [0, 0]),
        make_record(game_id, 103, [b, a], [1, -1], invalid_moves=[2, 0]),
        make_record(game_id, 104, [a, b], [0, 0], invalid_moves=[5, 5], errored=True, error="endpoint unreachable"),
        make_record(game_id, 105, [b, a], [-1, 1]),
    ]


def test_summarize_match_maps_seats_to_players_and_skips_errored_games():
    summary = summarize_match(_match(), "oracle", "random")
    assert set(summary) == {"games", "wins", "errored", "p0_win_rate", "mean_reward", "invalid_moves"}
    assert summary["games"] == 6
    assert summary["errored"] == 1
    assert summary["wins"] == {"p0": 3, "p1": 1, "draws": 1}
    rate, low, high = wilson_interval(3.5, 5)
    assert summary["p0_win_rate"] == {"rate": rate, "low": low, "high": high}
    assert summary["mean_reward"] == {"p0": pytest.approx(2 / 5), "p1": pytest.approx(-2 / 5)}
    # random's invalid moves: seat 1 in game 100 (1) and seat 0 in game 103 (2); the errored game is not counted.
    assert summary["invalid_moves"] == {"p0": 0, "p1": 3}
    json.dumps(summary, allow_nan=False)


def test_summarize_match_is_symmetric_in_the_player_order():
    forward = summarize_match(_match(), "oracle", "random")
    backward = summarize_match(_match(), "random", "oracle")
    assert backward["wins"] == {"p0": 1, "p1": 3, "draws": 1}
    assert backward["mean_reward"] == {"p0": forward["mean_reward"]["p1"], "p1": forward["mean_reward"]["p0"]}
    assert backward["p0_win_rate"]["rate"] == pytest.approx(1 - forward["p0_win_rate"]["rate"])


def test_kuhn_summary_reports_mean_chips_per_round():
    a, b = "oracle", "random"
    records = [
        make_record("kuhn", 1, [a, b], [3, -3], round_rewards=[[2, -2], [-1, 1], [2, -2]]),
        make_record("kuhn", 2, [b, a], [1, -1], round_rewards=[[1, -1], [1, -1], [-1, 1]]),
        make_record("kuhn", 3, [a, b], [0, 0], round_rewards=[[5, 5]], errored=True, error="boom"),
    ]
    summary = summarize_match(records, a, b)
    # oracle's chips: +2 -1 +2 (seat 0) then -1 -1 +1 (seat 1) = 2 over 6 rounds.
    assert summary["mean_chips_per_round"] == {"p0": pytest.approx(2 / 6), "p1": pytest.approx(-2 / 6)}
    assert summary["mean_reward"] == {"p0": pytest.approx(1.0), "p1": pytest.approx(-1.0)}
    assert summary["wins"] == {"p0": 1, "p1": 1, "draws": 0}


def test_all_errored_match_reports_missing_rates_not_nan():
    records = [make_record("kuhn", s, ["a", "b"], [0, 0], errored=True, error="down") for s in range(3)]
    summary = summarize_match(records, "a", "b")
    assert summary["p0_win_rate"] == {"rate": None, "low": None, "high": None}
    assert summary["mean_reward"] == {"p0": None, "p1": None}
    assert summary["mean_chips_per_round"] == {"p0": None, "p1": None}
    json.dumps(summary, allow_nan=False)


def test_self_play_uses_the_seat_swap_convention():
    # Same spec on both sides: p0 is seat k % 2. Seat 0 wins every game, so p0 and p1 split them.
    records = [make_record("nim", s, ["random", "random"], [1, -1]) for s in range(4)]
    summary = summarize_match(records, "random", "random")
    assert summary["wins"] == {"p0": 2, "p1": 2, "draws": 0}


def test_summarize_match_rejects_inconsistent_input():
    with pytest.raises(ValueError, match="no game records"):
        summarize_match([], "a", "b")
    with pytest.raises(ValueError, match="expected seats for 'a' and 'c'"):
        summarize_match([make_record("nim", 1, ["a", "b"], [1, -1])], "a", "c")
    mixed = [make_record("nim", 1, ["a", "b"], [1, -1]), make_record("kuhn", 2, ["b", "a"], [1, -1])]
    with pytest.raises(ValueError, match="mix game ids"):
        summarize_match(mixed, "a", "b")
