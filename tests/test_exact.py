"""Exact skill measures for TicTacToe and Nim: the theory against real play, and a model's measures per round."""

import pytest

from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.exact import exact_metrics
from arena.eval.roundeval import evaluate_round
from arena.games.nim_theory import family, nim_sum, split_by_start, winning_mass, winning_moves
from arena.games.tictactoe_theory import (
    loss_probability,
    optimal_cells,
    optimal_mass,
    reachable_positions,
    ttt_best_move,
)
from arena.play.match import duplicate_schedule, play_match
from arena.play.stats import wilson_interval
from arena.players.mlx import MLXPlayer
from arena.players.scripted import make_scripted


def uniform_ttt(board, mark):
    empty = [i for i, cell in enumerate(board) if not cell]
    return {i: 1 / len(empty) for i in empty}


def test_tictactoe_positions_and_optimal_moves():
    positions = reachable_positions()
    assert len(positions) == 4520  # the non-terminal positions of TicTacToe reachable from the empty board
    assert optimal_cells(("O", "O", "", "X", "X", "", "", "", ""), "O") == (2,)  # take the win
    assert optimal_cells(("O", "", "", "", "X", "", "", "", "X"), "O") == (2, 6)  # O must stop X; draws keep it
    assert set(optimal_cells(("",) * 9, "O")) == set(range(9))  # every opening draws
    oracle = {key: {ttt_best_move(*key): 1.0} for key in positions}
    assert optimal_mass(lambda b, m: oracle[(b, m)], positions) == 1.0
    assert loss_probability(lambda b, m: {ttt_best_move(b, m): 1.0}, 0) == 0.0


@pytest.mark.parametrize("seat", [0, 1])
def test_exact_loss_probability_matches_real_games_against_the_oracle(seat):
    """The exact chance that uniform play loses to minimax lies inside the interval of real games' loss rate."""
    games = 1000
    random, oracle = make_scripted("random"), make_scripted("oracle")
    schedule = [slot for slot in duplicate_schedule(range(7_000_000, 7_000_000 + games), 2 * games)
                if slot.first_seat == seat]
    records = play_match("tictactoe", (random, oracle), schedule, progress=False)
    losses = sum(r["rewards"][r["players"].index("random")] < 0 for r in records)
    _, low, high = wilson_interval(losses, len(records))
    exact = loss_probability(uniform_ttt, seat)
    assert low <= exact <= high, (seat, exact, low, high)


def test_nim_winning_moves_and_family_split():
    for piles in family(5, 3):
        moves = winning_moves(piles)
        assert moves and all(nim_sum([s - q if i == p else s for i, s in enumerate(piles)]) == 0 for p, q in moves)
    assert winning_moves((1, 2, 3)) == ()
    seen, held_out = split_by_start(family(6, 3), (3, 4, 5))
    assert len(seen) + len(held_out) == len(family(6, 3)) and all(max(c) == 6 or c[0] > 3 or c[1] > 4
                                                                  for c in held_out)
    always_first = winning_mass(lambda piles: {(0, 1): 1.0}, seen)
    assert 0.0 <= always_first < 1.0


@pytest.mark.slow
def test_a_models_tictactoe_measures_are_probabilities(base_model_dir):
    """Slow: 4,520 positions with multi-token actions, about 45 s for the tiny model on 2 cores."""
    ttt = exact_metrics(MLXPlayer(base_model_dir), "tictactoe")
    assert 0.0 <= ttt["optimal_move_mass"] <= 1.0 and set(ttt["loss_vs_minimax"]) == {"seat0", "seat1"}
    assert all(0.0 <= p <= 1.0 for p in ttt["loss_vs_minimax"].values())
    # A best response wins at least what the minimax oracle (one response that never loses) wins from each seat.
    assert sum(ttt["loss_vs_minimax"].values()) / 2 <= ttt["exploitability"] <= 1.0


def test_a_models_nim_measures_are_probabilities_and_deterministic(base_model_dir):
    player = MLXPlayer(base_model_dir)
    nim = exact_metrics(player, "nim", {"piles": [2, 3]})
    assert nim["configurations"] == {"seen": 4, "held_out": 8}  # unequal pairs of 1..4 piles, split at (2, 3)
    assert 0.0 <= nim["winning_move_mass"] <= 1.0 and 0.0 <= nim["winning_move_mass_held_out"] <= 1.0
    assert exact_metrics(player, "nim", {"piles": [2, 3]}) == nim
    assert exact_metrics(player, "liarsdice") is None


def test_round_evaluation_reports_each_games_exact_measures(base_model_dir, tmp_path):
    eval_config = EvalConfig.from_dict({"games": ["liarsdice", {"id": "nim", "variant": {"piles": [2, 3]}}],
                                        "seeds": [9_000_000, 9_000_010]})
    result = evaluate_round(base_model_dir, None, 0, RoundEvalConfig(games=4, opponents=("random",)), eval_config,
                            SeedsConfig().reserved(), tmp_path / "r0.json")
    assert set(result["exact"]) == {"nim[piles=[2, 3]]"}  # Liar's Dice has no exact theory here
    assert "exploitability" not in result
