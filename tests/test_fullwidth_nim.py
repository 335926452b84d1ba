"""Full-width NeuRD on Nim: the game tree's positions and prompts, its exact self-play gains and exploitability
against a plain search, and tabular steps that learn the winning moves of the positions training reaches."""

from functools import cache

import numpy as np
import pytest

from arena.games import nim_theory as nt
from arena.train.config import TrainConfig
from arena.train.selfplay.fullwidth import NIM_START, as_table, full_width_targets, info_states

START = (3, 4, 5)


def _uniform():
    legal = nt._tree(START)[0]
    return legal / legal.sum(axis=1, keepdims=True)


def _nim_sum_table():
    """Uniform over the winning moves where there are some, else uniform: a subgame-perfect equilibrium."""
    table = _uniform()
    for row, piles in enumerate(nt.positions(START)):
        if nt.winning_moves(piles):
            table[row] = 0.0
            for pile, quantity in nt.winning_moves(piles):
                table[row, nt.column(START, pile, quantity)] = 1 / len(nt.winning_moves(piles))
    return table


def _random_table(seed):
    table = _uniform() * np.random.default_rng(seed).uniform(0.05, 1.0, size=_uniform().shape)
    return table / table.sum(axis=1, keepdims=True)


def _best_response_by_search(table, responder_first):
    """The responder's value against ``table`` by a plain recursive search over piles."""
    rows = {piles: row for row, piles in enumerate(nt.positions(START))}

    @cache
    def value(piles, responder_moves):  # for the responder
        outcomes = []
        for pile, size in enumerate(piles):
            for quantity in range(1, size + 1):
                after = piles[:pile] + (size - quantity,) + piles[pile + 1:]
                mine = 1.0 if responder_moves else -1.0
                result = mine if not sum(after) else value(after, not responder_moves)
                outcomes.append((table[rows[piles], nt.column(START, pile, quantity)], result))
        if responder_moves:
            return max(result for _, result in outcomes)
        return sum(p * result for p, result in outcomes)

    return value(START, responder_first)


def test_positions_are_every_reached_configuration_and_each_prompt_shows_its_piles():
    positions = nt.positions(START)
    assert len(positions) == 4 * 5 * 6 - 1 and positions[0] == START and (0, 0, 0) not in positions
    states = info_states("nim")
    assert NIM_START == START and states.width == 12
    assert [tuple(o.state["piles"]) for o in states.observations] == list(positions)
    for observation, columns in zip(states.observations, states.columns, strict=True):
        assert len(columns) == len(observation.legal_actions)
    zero = info_states("nim").observations[positions.index((0, 4, 1))]
    assert zero.legal_actions[0] == "[1 1]" and states.columns[positions.index((0, 4, 1))][0] == 3
    np.testing.assert_allclose(as_table("nim", [np.full(len(c), -np.log(len(c))) for c in states.columns]),
                               _uniform())


def test_nim_gains_average_to_zero_and_vanish_at_the_nim_sum_policy():
    table = _random_table(0)
    for on_policy in (False, True):
        gains, totals = nt.action_gains(table, START, on_policy)
        np.testing.assert_allclose((table * gains).sum(axis=1), 0.0, atol=1e-12)
        assert totals.min() > 0 and np.abs(gains).max() > 1e-3
        assert totals[0] == 1.0  # the start: reached by every path's empty product
    # One move from the start: the opponent's reach is the first move's probability (the first player's).
    _, counterfactual = nt.action_gains(table, START)
    after = nt.positions(START).index((2, 4, 5))
    assert counterfactual[after] == pytest.approx(table[0, nt.column(START, 0, 1)])
    gains, _ = nt.action_gains(_nim_sum_table(), START)
    assert gains.max() < 1e-12


def test_nim_exploitability_is_the_searched_best_responses_mean():
    for table in (_uniform(), _random_table(1), _nim_sum_table()):
        searched = (_best_response_by_search(table, True) + _best_response_by_search(table, False)) / 2
        assert nt.exploitability(table, START) == pytest.approx(searched, abs=1e-12)
    assert nt.exploitability(_nim_sum_table(), START) == pytest.approx(0.0, abs=1e-12)
    assert nt.exploitability(_uniform(), START) > 0.99


def test_full_width_steps_learn_the_winning_moves_of_the_reached_positions():
    """The exact table under the pipeline's targets (counterfactual, neurd_lr 16, clip 12, magnet every 4 steps)."""
    config = TrainConfig(objective="neurd", neurd_values="exact", neurd_weighting="counterfactual", beta=1.0,
                         neurd_clip=12.0)
    current = [np.full(len(c), -np.log(len(c))) for c in info_states("nim").columns]
    for step in range(12):
        if step % 4 == 0:
            magnet = current
        current = [target for target, _ in full_width_targets("nim", current, magnet, 16.0, config)]
    table = as_table("nim", current)
    rows = {piles: row for row, piles in enumerate(nt.positions(START))}
    seen, _ = nt.split_by_start(nt.family(6, 3), START)
    mass = nt.winning_mass(lambda piles: {(i, q): table[rows[piles], nt.column(START, i, q)]
                                          for i, size in enumerate(piles) for q in range(1, size + 1)}, seen)
    assert mass > 0.9 and nt.exploitability(table, START) < 0.01


def test_the_smollm2_nim_recipe_validates_with_exact_values_on_nim_alone():
    from pathlib import Path

    from arena.core.config import load_params
    from arena.pipeline.presets import checked_flags, load_preset

    preset = Path(__file__).resolve().parents[1] / "presets" / "smollm2-nim.yaml"
    recipe = load_preset(preset)
    assert recipe["selfplay.game"] == "nim" and recipe["selfplay.mix"] == [] and recipe["base.source"] == "smollm2"
    flags = checked_flags(preset, load_params("params.yaml"))
    assert "-S train.neurd_values=exact" in flags and "-S train.method=lora" in flags
