"""Full-width NeuRD (train.neurd_values: exact): Kuhn's and TicTacToe's exact action gains, every state's targets, the
config checks, the learning-rate warm-up, and a round that fits them."""

import json
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from tinyround import first_rollouts

from arena.core.config import ConfigError, load_params
from arena.games import kuhn_theory as kt
from arena.games import leduc_theory as lt
from arena.games import tictactoe_theory as tt
from arena.pipeline.params import validate_all
from arena.pipeline.presets import checked_flags, load_preset
from arena.train.config import FULL_WIDTH_GAMES, SelfPlayConfig, TrainConfig
from arena.train.selfplay.fullwidth import (
    EXACT_GAMES,
    action_gains,
    as_table,
    exploitability,
    full_width_targets,
    info_states,
)
from arena.train.selfplay.schedule import round_learning_rate
from arena.train.selfplay.step import train_round


def _uniform_logp(game):
    return [np.full(len(cols), -np.log(len(cols))) for cols in info_states(game).columns]


def test_kuhn_gains_average_to_zero_and_vanish_at_equilibrium():
    rng = np.random.default_rng(0)
    policy = kt.policy_from_array(rng.uniform(0.1, 0.9, size=len(kt.INFO_SETS)))
    for on_policy in (False, True):
        gains, totals = kt.action_gains(policy, on_policy)
        bets = np.array([policy[name] for name in kt.INFO_SETS])
        np.testing.assert_allclose((1 - bets) * gains[:, 0] + bets * gains[:, 1], 0.0, atol=1e-12)
        assert totals.min() > 0 and np.abs(gains).max() > 1e-3
    # The Jack opens in two of six deals, reached by chance alone; after "pb" the opener's own check counts too.
    _, totals = kt.action_gains(policy, on_policy=True)
    assert totals[kt.INFO_SET_INDEX["0"]] == pytest.approx(2 / 6)
    assert totals[kt.INFO_SET_INDEX["0pb"]] == pytest.approx(
        (1 - policy["0"]) * kt.action_gains(policy)[1][kt.INFO_SET_INDEX["0pb"]])
    gains, _ = kt.action_gains(kt.nash_policy(1 / 3))
    assert gains.max() < 1e-12  # no action gains on an equilibrium


def test_info_states_are_the_theorys_rows_with_the_aggressive_action_in_column_one():
    kuhn = info_states("kuhn")
    assert [o.info_set for o in kuhn.observations] == list(kt.INFO_SETS) and kuhn.width == 2
    for observation, cols in zip(kuhn.observations, kuhn.columns, strict=True):
        assert [observation.legal_actions[cols.index(1)]] == [a for a in observation.legal_actions
                                                               if a in ("[bet]", "[call]")]
    leduc = info_states("leduc")
    assert [o.info_set for o in leduc.observations] == list(lt.info_states()) and leduc.width == 3
    np.testing.assert_allclose(as_table("leduc", _uniform_logp("leduc")), lt.uniform_array())
    ttt = info_states("tictactoe")
    assert len(ttt.observations) == len(tt.positions()) == 4520 and ttt.width == 9
    np.testing.assert_allclose(as_table("tictactoe", _uniform_logp("tictactoe")), tt.uniform_table())
    seen = [(tuple(o.state["board"]), o.state["mark"]) for o in ttt.observations]
    assert seen == list(tt.positions())  # each prompt is its row's position, with its mover
    with pytest.raises(ValueError, match="'liarsdice'.*neurd_values: sampled"):
        info_states("liarsdice")
    with pytest.raises(ValueError, match=r"\(kuhn, leduc, tictactoe, nim\), got 'liarsdice'"):
        exploitability("liarsdice", np.zeros((1, 1)))


def test_every_game_params_accept_for_exact_values_has_an_exact_record():
    assert tuple(EXACT_GAMES) == FULL_WIDTH_GAMES


def _oracle_table():
    """Uniform over the minimax-optimal (value-keeping) cells at every position: a subgame-perfect equilibrium."""
    table = np.zeros((len(tt.positions()), 9))
    for row, (board, mark) in enumerate(tt.positions()):
        cells = tt.optimal_cells(board, mark)
        table[row, list(cells)] = 1.0 / len(cells)
    return table


def _best_response_by_search(table, responder):
    """A best response's value for ``responder`` against ``table``, by a plain search over boards."""
    rows = {position: row for row, position in enumerate(tt.positions())}

    @cache
    def value(board, mark):  # for the mover
        moves = {}
        for cell in (c for c in range(9) if not board[c]):
            after = tt.child(board, cell, mark)
            won, full = tt.ttt_winner(after) == mark, all(after)
            moves[cell] = 1.0 if won else 0.0 if full else -value(after, tt.other(mark))
        if mark == responder:
            return max(moves.values())
        return sum(table[rows[(board, mark)], cell] * v for cell, v in moves.items())

    root = value(("",) * 9, "O")
    return root if responder == "O" else -root


def test_tictactoe_gains_average_to_zero_and_vanish_at_the_minimax_policy():
    rng = np.random.default_rng(0)
    table = tt.uniform_table() * rng.uniform(0.2, 1.0, size=(len(tt.positions()), 9))
    table /= table.sum(axis=1, keepdims=True)
    for on_policy in (False, True):
        gains, totals = tt.action_gains(table, on_policy)
        np.testing.assert_allclose((table * gains).sum(axis=1), 0.0, atol=1e-12)
        assert totals.min() > 0 and np.abs(gains).max() > 1e-3
    uniform = tt.uniform_table()
    _, counterfactual = tt.action_gains(uniform)
    _, on_policy = tt.action_gains(uniform, on_policy=True)
    # After O's first mark X's reach counts O's move (1/9); after X's reply O's counts X's alone (1/8).
    assert counterfactual[1] == pytest.approx(1 / 9) and counterfactual[10] == pytest.approx(1 / 8)
    assert on_policy[10] == pytest.approx(1 / 72) and tt.positions()[10][0].count("") == 7
    gains, _ = tt.action_gains(_oracle_table())
    assert gains.max() < 1e-12 and abs(tt.exploitability(_oracle_table())) < 1e-12


def test_tictactoe_exploitability_is_the_searched_best_responses_mean():
    rng = np.random.default_rng(1)
    table = tt.uniform_table() * rng.uniform(0.05, 1.0, size=(len(tt.positions()), 9))
    table /= table.sum(axis=1, keepdims=True)
    for policy in (tt.uniform_table(), table):
        searched = (_best_response_by_search(policy, "O") + _best_response_by_search(policy, "X")) / 2
        assert tt.exploitability(policy) == pytest.approx(searched, abs=1e-12) and searched > 0.5
        np.testing.assert_array_equal(tt.policy_table(tt.table_policy(policy)), policy)


def test_full_width_steps_take_tictactoe_under_one_percent_from_both_seats():
    """The exact table under the pipeline's own targets (counterfactual, neurd_lr 16, clip 12): 8 rounds of 20."""
    config = TrainConfig(objective="neurd", neurd_values="exact", neurd_weighting="counterfactual", beta=1.0,
                         neurd_clip=12.0)
    current = _uniform_logp("tictactoe")
    for step in range(160):
        if step % 20 == 0:
            magnet = current
        current = [target for target, _ in full_width_targets("tictactoe", current, magnet, 16.0, config)]
    table = as_table("tictactoe", current)
    policy = tt.table_policy(table)
    assert tt.exploitability(table) < 0.01
    assert max(tt.loss_probability(policy, 0), tt.loss_probability(policy, 1)) < 0.01


@pytest.mark.parametrize("game", ["kuhn", "leduc", "tictactoe"])
@pytest.mark.parametrize("weighting", ["onpolicy", "counterfactual"])
def test_one_full_width_step_from_uniform_is_less_exploitable(game, weighting):
    config = TrainConfig(objective="neurd", neurd_values="exact", neurd_weighting=weighting, beta=1.0)
    uniform = _uniform_logp(game)
    made = full_width_targets(game, uniform, uniform, 8.0, config)
    assert len(made) == len(uniform) and not any(cut for _, cut in made)
    stepped = exploitability(game, as_table(game, [target for target, _ in made]))
    assert stepped < exploitability(game, as_table(game, uniform)) - 0.01


def test_full_width_steps_with_a_moving_magnet_solve_kuhn():
    config = TrainConfig(objective="neurd", neurd_values="exact", neurd_weighting="counterfactual", beta=1.0)
    current = magnet = _uniform_logp("kuhn")
    for step in range(300):
        if step % 20 == 0:  # the magnet moves to the policy every 20 steps, as a round's start does
            magnet = current
        gains, _ = action_gains("kuhn", as_table("kuhn", current), False)
        assert np.isfinite(gains).all()
        current = [target for target, _ in full_width_targets("kuhn", current, magnet, 8.0, config)]
    assert exploitability("kuhn", as_table("kuhn", current)) < 0.005


def test_exact_values_need_neurd_and_games_with_exact_theory():
    with pytest.raises(ConfigError, match="train.neurd_values.*train.objective: neurd"):
        TrainConfig(neurd_values="exact")
    with pytest.raises(ConfigError, match="train.neurd_values"):
        TrainConfig(objective="neurd", neurd_values="tree")
    params = load_params("params.yaml")
    exact = {**params, "train": {**params["train"], "neurd_values": "exact"}}
    validate_all(exact)  # the default's games, Kuhn and Leduc, both have exact theory
    mixed = {**exact, "selfplay": {**exact["selfplay"], "mix": [{"id": "liarsdice", "deals": 16}]}}
    with pytest.raises(ConfigError, match=r"\['kuhn', 'liarsdice'\]; drop \['liarsdice'\]"):
        validate_all(mixed)
    nim = {**exact, "selfplay": {**exact["selfplay"], "game": "nim", "mix": []}}
    validate_all(nim)
    moved = {**nim, "selfplay": {**nim["selfplay"], "variant": {"piles": [2, 4, 5]}}}
    with pytest.raises(ConfigError, match=r"from piles \[3, 4, 5\] only.*\[\[2, 4, 5\]\]"):
        validate_all(moved)
    with pytest.raises(ConfigError, match="loop is 'rest'"):
        validate_all({**exact, "loop": "rest"})


def test_warmup_ramps_each_rounds_learning_rate():
    config = TrainConfig(lr=1.0e-3, lr_decay="constant", lr_warmup=4)
    rates = [round_learning_rate(config, step, 10) for step in range(12)]
    np.testing.assert_allclose(rates[:5], [2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3])
    assert rates[10] == pytest.approx(2.5e-4)  # the next round's fresh optimiser ramps again
    assert round_learning_rate(replace(config, lr_warmup=0), 0, 10) == pytest.approx(1e-3)
    with pytest.raises(ConfigError, match="train.lr_warmup"):
        TrainConfig(lr_warmup=-1)


def test_an_exact_round_fits_every_kuhn_state_and_plays_no_more_games(tmp_path):
    selfplay = SelfPlayConfig(deals_per_round=8, iterations_per_round=2, memo_prompts=64)
    root = first_rollouts(tmp_path, selfplay)  # no branch games: exact values need none
    config = TrainConfig(objective="neurd", neurd_values="exact", reference="previous", steps=4, lr=1.0e-3,
                         lr_decay="constant", neurd_weighting="counterfactual", neurd_lr=20.0, beta=1.0)
    summary = train_round(root / "snap0", root / "snap0", root / "roll1", 1, selfplay, config, root / "train1",
                          progress=False)  # no pool: the later iteration plays no games
    log = [json.loads(line) for line in (root / "train1" / "train_log.jsonl").read_text().splitlines()]
    assert summary["steps"] == 8 and all(row["rows"] == len(kt.INFO_SETS) for row in log)
    first, second = log[0]["exploitability"]["kuhn"], log[4]["exploitability"]["kuhn"]
    assert set(log[0]["exploitability"]) == {"kuhn"} and first != second
    assert min(row["loss"] for row in log[:4]) < log[0]["loss"]  # the fit moves towards its targets


@pytest.mark.parametrize("name", ["fullwidth", "tictactoe-fullwidth"])
def test_the_full_width_recipes_validate(name):
    preset = Path(__file__).resolve().parents[1] / "presets" / f"{name}.yaml"
    assert load_preset(preset)["train.neurd_values"] == "exact"
    flags = checked_flags(preset, load_params("params.yaml"))
    assert "-S train.neurd_values=exact" in flags and "-S train.lr_warmup=64" in flags
