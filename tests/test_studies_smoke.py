"""Smoke tests of the studies' scripts (studies/): each one's core runs on a small case and gives the known answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))  # not a package: scripts import each other

# isort: split
import pytest


def test_tictactoe_line_shows_where_a_policy_loses_to_minimax():
    from tictactoe_line import line

    from arena.games.tictactoe_theory import optimal_cells, reachable_positions

    safe = {(board, mark): {cell: 1.0 / len(optimal_cells(board, mark)) for cell in optimal_cells(board, mark)}
            for board, mark in reachable_positions()}
    assert all("mass 1.000" in move for move in line(safe, 1) if move.startswith("model"))
    # Against minimax's corner opening only the centre draws: a policy that answers in the far corner is lost there.
    opened = ("O",) + ("",) * 8
    risky = {**safe, (opened, "X"): {cell: 1.0 if cell == 8 else 0.0 for cell in range(1, 9)}}
    first = next(move for move in line(risky, 1) if move.startswith("model"))
    assert first == "model: mass 0.000 on [4], top 8 (1.00)"


def test_nim_heldout_splits_the_held_out_family_and_scores_a_reordering_policy():
    from nim_heldout import groups, reached_orders, report

    from arena.games.nim_theory import family, winning_moves

    split = groups((3, 4, 5))
    held = [c for name, configs in split.items() if name != "reached" for c in configs]
    assert sorted(split["reached"] + held) == sorted(family(6, 3)) and len(held) == len(set(held))
    for configuration, orders in reached_orders(split["held out, a reached position reordered"], split["reached"]):
        assert orders and all(sorted(o) == sorted(configuration) and o != configuration for o in orders)
    # A policy that wins from every reached position and plays one arbitrary move elsewhere.
    reached = set(split["reached"])
    table = {c: {winning_moves(c)[0] if c in reached else (0, 1): 1.0} for c in family(6, 3)}
    lines = report(table, split)
    assert lines[0] == "  reached: 53 configurations, mass 1.000"
    assert lines[-1].endswith("reordered, 1.000 in reached orders")


def test_nim_blind_ceiling_is_perfect_on_read_sizes_and_misses_what_needs_the_unseen_one():
    from nim_heldout import blind_ceiling, ceiling_lines, groups

    read = [1, 2, 3, 4, 5]
    assert blind_ceiling((1, 2, 4), read) == 1.0  # every size read: the perfect player's winning move
    assert blind_ceiling((6, 1, 1), read) == 0.0  # the win takes all six, and no reading of the 6 takes six
    assert blind_ceiling((6, 6, 1), read) == 1.0  # the win takes the 1, whatever the two equal piles read as
    assert ceiling_lines(groups((3, 4, 5))) == [
        "  ceiling, reading sizes [1, 2, 3, 4, 5] perfectly and an unseen size as the best of them: 0.233 on the 79"
        " with an unseen size, 0.564 over all 139 held out"]


def test_kuhn_kl_floor_solves_the_regularised_fixed_point():
    from kuhn_kl_floor import action_gaps, fixed_point, regularised_response

    from arena.games import kuhn_theory as kt

    for gap, rho, beta in [(1.5, 0.3, 0.1), (-0.8, 0.9, 0.05), (0.02, 0.5, 0.2), (-2.0, 0.01, 0.01)]:
        p = regularised_response(gap, rho, beta)
        assert 0.0 <= p <= 1.0 and abs(p * (1 - p) * gap - beta * (p - rho)) < 1e-12
    policy, residual = fixed_point(kt.uniform_policy(), 0.2)
    gaps = action_gaps(policy)
    assert residual < 1e-10
    assert all(abs(policy[i] * (1 - policy[i]) * gaps[i] - 0.2 * (policy[i] - 0.5)) < 1e-8 for i in kt.INFO_SETS)
    # A strong pull stays near the magnet; a weak one lets the fixed point approach equilibrium.
    assert kt.exploitability(policy) < kt.exploitability(fixed_point(kt.uniform_policy(), 0.4)[0]) < 0.458


def test_compare_runs_overlays_one_exact_measure_of_several_runs(tmp_path, capsys):
    from compare_runs import main

    runs = []
    for name, values in (("a", [0.35, 0.3]), ("b", [0.35, 0.2, 0.1])):
        evals = [{"round": r, "exact": {"kuhn[rounds=5]": {"exploitability": v}}} for r, v in enumerate(values)]
        (tmp_path / f"{name}.json").write_text(json.dumps({"evals": evals}))
        runs.append(f"{name}={tmp_path / name}.json")
    png = tmp_path / "curves.png"
    assert main(["--png", str(png), *runs]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| run | 0 | 1 | 2 |"
    assert table[2:] == ["| a | 0.350 | 0.300 |  |", "| b | 0.350 | 0.200 | 0.100 |"]
    with pytest.raises(SystemExit, match="no exact measure 'nashconv'"):
        main(["--png", str(png), "--key", "nashconv", runs[0]])


def test_branch_rollouts_estimate_each_info_sets_exact_value_gap():
    import numpy as np
    from kuhn_kl_floor import action_gaps
    from kuhn_neurd import branch_rollout

    from arena.games import kuhn_theory as kt

    rng = np.random.default_rng(3)
    bet = rng.uniform(0.2, 0.8, len(kt.INFO_SETS))
    cards = np.array([rng.permutation(3)[:2] for _ in range(60_000)])
    visits = []
    chips = branch_rollout("", cards[:, 0], cards[:, 1], bet, rng, visits)
    info, gap = (np.concatenate([v[k] for v in visits]) for k in (0, 1))
    exact = action_gaps(kt.policy_from_array(bet))
    sampled = {name: gap[info == kt.INFO_SET_INDEX[name]].mean() for name in kt.INFO_SETS}
    assert all(abs(sampled[name] - exact[name]) < 0.06 for name in kt.INFO_SETS), (sampled, exact)
    assert abs(chips.mean() - kt.self_play_value(kt.policy_from_array(bet))) < 0.03


def test_neurd_moves_a_saturated_wrong_decision_where_the_policy_gradient_barely_does():
    import numpy as np
    from kuhn_neurd import Arm, run, step

    from arena.games import kuhn_theory as kt

    jack_calls = kt.INFO_SET_INDEX["0b"]  # calling a bet with the Jack always loses 2 chips where folding loses 1
    moved = {}
    for rule in ("neurd", "allpg"):
        theta = np.zeros(len(kt.INFO_SETS))
        theta[jack_calls] = 5.0  # saturated: calls 0.993 of the time
        step(theta, np.full(theta.size, 0.5), Arm(rule), 4096, np.random.default_rng(0), lr=1.0)
        moved[rule] = 5.0 - theta[jack_calls]
    assert moved["neurd"] > 0.05 and moved["neurd"] > 20 * moved["allpg"] > 0
    assert run(Arm("neurd"), 200, 16, seed=1, every=1) == run(Arm("neurd"), 200, 16, seed=1, every=1)


def test_exact_neurd_probe_visits_and_its_table_converges():
    import numpy as np
    from kuhn_neurd_network import run_table, tabular_target, visits

    from arena.games import kuhn_theory as kt

    uniform = kt.uniform_policy()
    v = dict(zip(kt.INFO_SETS, visits(uniform), strict=True))
    assert v["0"] == pytest.approx(1 / 3) and v["0p"] == pytest.approx(1 / 6) and v["0pb"] == pytest.approx(1 / 12)
    assert sum(v[name] for name in kt.INFO_SETS if len(name) == 2) == pytest.approx(1.0)  # the second mover, once
    magnet = np.full(len(kt.INFO_SETS), 0.5)
    moved = dict(zip(kt.INFO_SETS, tabular_target(uniform, magnet, 1.0, 0.0), strict=True))
    assert moved["0b"] < 0.5 < moved["2b"]  # the Jack folds to a bet more, the King calls more
    curve = run_table(uniform, 200, 8.0, 0.5, 20)
    assert curve[0] > 0.45 and curve[-1] < 0.01  # exact NeuRD with a moving magnet reaches equilibrium


def test_sampled_neurd_target_plays_branches_and_pulls_a_saturated_call_back():
    import numpy as np
    from kuhn_neurd_network import sampled_target

    from arena.games import kuhn_theory as kt

    policy = kt.uniform_policy()
    policy["0b"] = 0.99  # the Jack calls a bet: 1 chip worse than folding, every time
    target, games = sampled_target(policy, np.full(len(kt.INFO_SETS), 0.5), 8.0, 0.0, 512, np.random.default_rng(0))
    assert games > 512 and np.all((target > 0) & (target < 1))
    logit = np.log(target[kt.INFO_SET_INDEX["0b"]] / (1 - target[kt.INFO_SET_INDEX["0b"]]))
    assert logit < np.log(99) - 0.3  # NeuRD's step ignores the saturation (the policy gradient's is ~0.01 of it)


def test_leduc_neurd_advantages_average_to_zero_and_the_table_learns():
    import numpy as np
    from leduc_neurd import advantages, run, softmax

    from arena.games import leduc_theory as lt

    rng = np.random.default_rng(0)
    sigma = softmax(rng.normal(size=(len(lt.tree().info_states), 3)))
    push, total = advantages(sigma, "visits")
    # Q(a) - V averages to zero under the policy itself at every state, so at every information state too.
    np.testing.assert_allclose((sigma * push).sum(axis=1), 0.0, atol=1e-12)
    assert total.min() > 0 and abs(push).max() > 1e-3
    curve = run(100, 4.0, 0.2, 50, "counterfactual", (100,))
    assert curve[0] == pytest.approx(lt.exploitability(lt.uniform_array())) and curve[100] < 1.0


def test_leduc_neurd_decay_shrinks_later_steps_only():
    from leduc_neurd import run

    # The first step is undecayed; a near-zero decay horizon then all but freezes the table.
    assert run(1, 4.0, 0.2, 0, "visits", (1,), decay=1e-9)[1] == run(1, 4.0, 0.2, 0, "visits", (1,))[1]
    frozen = run(5, 4.0, 0.2, 0, "visits", (1, 5), decay=1e-9)
    assert frozen[5] == pytest.approx(frozen[1], abs=1e-3)
    assert run(5, 4.0, 0.2, 0, "visits", (5,))[5] != pytest.approx(frozen[5], abs=1e-2)


def test_leduc_tracking_starts_each_round_from_the_snapshot_with_the_runs_decayed_step():
    import argparse

    from leduc_neurd import run
    from leduc_tracking import table

    from arena.games import leduc_theory as lt

    uniform = lt.uniform_array()
    # Starting from the uniform array is starting from the table's own default start.
    assert run(20, 4.0, 0.5, 20, "visits", (20,), 20.0, uniform) == run(20, 4.0, 0.5, 20, "visits", (20,), 20.0)
    # A later round's steps are decayed as that round's iterations are.
    assert run(20, 4.0, 0.5, 20, "visits", (20,), 20.0, uniform, 20)[20] != pytest.approx(
        run(20, 4.0, 0.5, 20, "visits", (20,), 20.0, uniform)[20], abs=1e-3)
    args = argparse.Namespace(lr=8.0, decay=20.0, beta=0.5, weight="visits", iterations=20)
    rows = table([uniform, uniform, uniform], args)
    twin_r1 = run(20, 4.0, 0.5, 20, "visits", (20,), 20.0)[20]  # the network's neurd_lr is twice the table's lr
    twin_r2 = run(20, 4.0, 0.5, 20, "visits", (20,), 20.0, uniform, 20)[20]
    assert rows[2] == f"| r1 | 2.374 | {twin_r1:.3f} | 2.374 |"
    assert rows[3] == f"| r2 | 2.374 | {twin_r2:.3f} | 2.374 |" and len(rows) == 4


def test_neurd_fit_targets_are_the_exact_tables_step_at_every_information_state():
    import numpy as np
    from leduc_neurd import run
    from neurd_fit import as_sigma, exact_config, exact_targets, mean_kl

    from arena.games import leduc_theory as lt
    from arena.train.selfplay.fullwidth import info_states

    uniform = lt.uniform_array()
    current = [np.log(uniform[row, list(cols)]) for row, cols in enumerate(info_states("leduc").columns)]
    np.testing.assert_allclose(as_sigma(current), uniform)  # the canonical prompts are in the table's row order
    for weight in ("counterfactual", "visits"):
        target = exact_targets(current, current, 2.0, exact_config(1.0, weight))
        table = run(1, 1.0, 1.0, 0, weight, (1,))  # the table's step is half the network's neurd_lr
        assert lt.exploitability(as_sigma(target)) == pytest.approx(table[1], abs=1e-9)
        assert mean_kl(target, current) > 1e-6 and mean_kl(current, current) == 0.0


def test_neurd_fit_kuhn_table_learns_under_the_pipelines_own_targets():
    from neurd_fit import kuhn_table

    from arena.games import kuhn_theory as kt

    curve = kuhn_table(8.0, 1.0, "counterfactual", 3, 20)
    assert len(curve) == 3 and curve[2] < curve[0] < kt.exploitability(kt.uniform_policy())


def test_tictactoe_table_steps_the_pipelines_targets_and_measures_both_seats():
    from tictactoe_table import measures, run, start_policy

    start = start_policy(None)
    first = measures(start)
    curve = run(start, 16.0, 12.0, "counterfactual", 1, 4)
    assert len(curve) == 1 and curve[0][0] < first[0]  # exploitability falls in one short round
    assert all(0.0 <= p <= 1.0 for p in (*first[1:], *curve[0][1:])) and first[0] == pytest.approx(0.95983, abs=1e-5)
