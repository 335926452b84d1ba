"""NeuRD with branch rollouts: forced prefixes in the match runner, action values, targets, the fit, a round."""

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tinyround import first_rollouts

from arena.core.config import ConfigError
from arena.core.seeds import SeedsConfig
from arena.games.registry import make_game
from arena.play.match import Slot, play_match, sample_key
from arena.players.config import MLXPlayerConfig
from arena.players.mlx import MLXPlayer
from arena.players.scripted import RandomPlayer
from arena.train.config import SelfPlayConfig, TrainConfig
from arena.train.selfplay.branches import (
    BRANCHES_FILE,
    MAX_COUNTERFACTUAL_WEIGHT,
    action_values,
    branch_rewards,
    branch_slots,
    decision_values,
    own_reach,
)
from arena.train.selfplay.neurd import NeuRDFit, all_action_logp, neurd_target, visit_sums
from arena.train.selfplay.rollouts import play_round
from arena.train.selfplay.schedule import neurd_rate
from arena.train.selfplay.step import learner_decisions, train_round

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))  # not a package: scripts import each other
JACK_OPENS = "0"  # kuhn_theory's information set: the Jack, nothing played yet


def _random_match(schedule):
    """Uniform play from both seats (a random player's draws are a function of the slot and turn alone)."""
    return play_match("kuhn", (RandomPlayer(), RandomPlayer()), schedule, progress=False)


def test_a_prefix_is_played_before_anyone_decides():
    (main,) = _random_match([Slot(7, 0)])
    prefix = (main["actions"][0], "[bet]" if main["actions"][0] == "[check]" else "[check]")
    (branch,) = _random_match([Slot(7, 0, prefix=prefix)])
    assert branch["prefix"] == list(prefix)
    assert tuple(branch["actions"][:2]) == prefix
    assert len(branch["decisions"]) == len(branch["actions"]) - 2  # only the moves after the prefix are decided
    assert "prefix" not in main  # a plain game's record keeps its bytes
    assert sample_key(Slot(7, 0), 2) != sample_key(Slot(7, 0, prefix=prefix), 2)
    game = make_game("kuhn", 7)
    for action in branch["actions"]:
        game.step(action)
    assert list(game.result().rewards) == branch["rewards"]  # the record replays from its deal seed


def test_branch_slots_swap_each_first_seat_decision_for_every_other_action():
    records = _random_match([Slot(s, k % 2) for s in range(4) for k in range(2)])
    slots = branch_slots(records)
    expected = sum(len(d["legal"]) - 1 for r in records for d in r["decisions"] if d["player"] == r["first_seat"])
    assert len(slots) == expected > 0
    for slot in slots:
        record = next(r for r in records if (r["seed"], r["first_seat"]) == (slot.seed, slot.first_seat))
        turn = len(slot.prefix) - 1
        assert list(slot.prefix[:-1]) == record["actions"][:turn]
        assert slot.prefix[-1] != record["actions"][turn]
        assert record["decisions"][turn]["player"] == record["first_seat"]


def test_action_values_take_the_game_for_the_chosen_action_and_the_branch_for_the_other():
    records = _random_match([Slot(s, k % 2) for s in range(6) for k in range(2)])
    branches = _random_match(branch_slots(records))
    rewards = branch_rewards(branches, 0.0)
    for record in records:
        seat = record["first_seat"]
        values = action_values(record, record["rewards"][seat], rewards)
        mine = [d for d in record["decisions"] if d["player"] == seat]
        assert len(values) == len(mine)
        for decision, value in zip(mine, values, strict=True):
            assert value[decision["legal"].index(decision["action"])] == record["rewards"][seat]
    errored = dict(rewards)
    errored.popitem()
    assert any(v is None for r in records for v in action_values(r, r["rewards"][r["first_seat"]], errored))


def test_branch_values_are_unbiased_for_kuhns_exact_action_values():
    """Random play from both seats: the mean sampled value gap of the Jack's opening bet equals the exact one."""
    from kuhn_kl_floor import action_gaps  # studies/, on the path above

    from arena.games import kuhn_theory as kt

    records = _random_match([Slot(s, k % 2) for s in range(600) for k in range(2)])
    rewards = branch_rewards(_random_match(branch_slots(records)), 0.0)
    gaps = []
    for record in records:
        seat = record["first_seat"]
        mine = [d for d in record["decisions"] if d["player"] == seat]
        for decision, value in zip(mine, action_values(record, record["rewards"][seat], rewards), strict=True):
            if decision["info_set"] == JACK_OPENS:
                gaps.append(value[decision["legal"].index("[bet]")] - value[decision["legal"].index("[check]")])
    sampled, spread = np.mean(gaps), 3 * np.std(gaps) / np.sqrt(len(gaps))
    assert abs(sampled - action_gaps(kt.uniform_policy())[JACK_OPENS]) < spread


def test_counterfactual_weights_divide_each_visit_by_the_learners_own_reach():
    records = _random_match([Slot(s, k % 2) for s in range(6) for k in range(2)])
    for record in records:  # a learner whose choices had these probabilities (the random player records none)
        for decision in record["decisions"]:
            decision["logprob"] = float(np.log(0.004 if decision["action"] == "[check]" else 0.5))
    branches = _random_match(branch_slots(records))
    games = [(r, r["first_seat"], r["rewards"][r["first_seat"]]) for r in records]
    _, onpolicy = decision_values(games, branches, 0.0)
    _, counterfactual = decision_values(games, branches, 0.0, "counterfactual")
    reach = np.concatenate([own_reach(r) for r in records])
    np.testing.assert_allclose(onpolicy, 1.0 / len(records))
    np.testing.assert_allclose(counterfactual, np.minimum(1.0 / reach, MAX_COUNTERFACTUAL_WEIGHT) / len(records))
    assert reach[0] == 1.0 and (counterfactual >= onpolicy).all() and (counterfactual > onpolicy).any()
    assert counterfactual.max() == pytest.approx(MAX_COUNTERFACTUAL_WEIGHT / len(records))  # a 0.004 check: capped
    record = {"first_seat": 1, "decisions": [{"player": 1, "logprob": np.log(0.5)}, {"player": 0, "logprob": -3.0},
                                             {"player": 1, "logprob": np.log(0.25)}, {"player": 1, "logprob": 0.0}]}
    np.testing.assert_allclose(own_reach(record), [1.0, 0.5, 0.125])


def test_neurd_target_is_the_tabular_step_for_two_actions():
    """The logit gap moves by lr x (sum of value gaps - 2 beta x weight x (pi_bet - rho_bet)), as
    studies/kuhn_neurd.py's tabular step does with lr / 2 per action."""
    old = np.log(np.array([0.7, 0.3]))
    magnet = np.log(np.array([0.5, 0.5]))
    target, cut = neurd_target(old, magnet, np.array([0.4, -0.4]), 2.0, 0.5, 0.25, 6.0)
    gap_before, gap_after = old[0] - old[1], target[0] - target[1]
    assert gap_after - gap_before == pytest.approx(0.5 * (0.8 - 2 * 0.25 * 2.0 * 0.2))
    assert np.exp(target).sum() == pytest.approx(1.0) and not cut
    clipped, cut = neurd_target(old, magnet, np.array([50.0, -50.0]), 1.0, 1.0, 0.0, 6.0)
    assert clipped[0] - clipped[1] == pytest.approx(6.0) and cut


@pytest.mark.parametrize("actions", [2, 3, 8])
@pytest.mark.parametrize("clip", [6.0, 12.0])
def test_neurd_clip_caps_one_action_at_the_logit_gap(actions, clip):
    """However large one action's value edge, its target mass stops at 1 / (1 + (n - 1) e^-clip): with TicTacToe's 8
    replies and the default clip 6, 0.983, so a forced move is missed 1.7% of the time (studies/tictactoe.md)."""
    uniform = np.log(np.full(actions, 1.0 / actions))
    values = np.full(actions, -1.0)
    values[0] = 1.0
    target, cut = neurd_target(uniform, uniform, 100.0 * values, 1.0, 1.0, 0.0, clip)
    assert cut and np.exp(target[0]) == pytest.approx(1.0 / (1.0 + (actions - 1) * np.exp(-clip)))


def test_neurd_clip_never_ties_the_best_action_with_a_worse_one():
    """Two actions far above the rest stay ordered; only the rest are floored, ``clip`` below the largest."""
    uniform = np.log(np.full(6, 1.0 / 6))
    target, cut = neurd_target(uniform, uniform, np.array([20.0, 10.0, 0.0, -30.0, -30.0, -30.0]), 1.0, 1.0, 0.0, 6.0)
    assert cut and target[0] - target[1] == pytest.approx(6.0) and target[0] == target.max()
    np.testing.assert_allclose(target[1:] - target[0], -6.0)
    kept, cut = neurd_target(uniform, uniform, np.array([2.0, 1.0, 0.0, -1.0, -1.0, -1.0]), 1.0, 1.0, 0.0, 6.0)
    np.testing.assert_allclose(kept - kept[0], [0.0, -1.0, -2.0, -3.0, -3.0, -3.0])
    assert not cut


def test_visit_sums_centre_each_visit_and_weight_it():
    keys = ["a", "a", "b", "a"]
    values = [np.array([1.0, -1.0]), np.array([0.0, 0.0]), np.array([0.0, 2.0, 1.0]), np.array([3.0, 1.0])]
    first, sums, totals = visit_sums(keys, values, np.array([0.5, 2.0, 1.0, 0.25]))
    assert first == [0, 2]  # each key's first visit
    np.testing.assert_allclose(sums[0], 0.5 * np.array([1.0, -1.0]) + 0.25 * np.array([1.0, -1.0]))
    np.testing.assert_allclose(sums[1], [-1.0, 1.0, 0.0])
    np.testing.assert_allclose(totals, [2.75, 1.0])


def test_neurd_rate_decays_as_inverse_sqrt_over_neurd_decay_iterations():
    config = TrainConfig(objective="neurd", neurd_lr=8.0, neurd_decay=20)
    assert neurd_rate(config, 1) == 8.0 and neurd_rate(config, 21) == pytest.approx(8.0 / np.sqrt(2.0))
    assert neurd_rate(config, 61) == pytest.approx(4.0)
    assert neurd_rate(replace(config, neurd_decay=0), 99) == 8.0


def test_neurd_rate_decays_as_one_over_t_with_the_inverse_shape():
    config = TrainConfig(objective="neurd", neurd_lr=8.0, neurd_decay=20, neurd_decay_shape="inverse")
    assert neurd_rate(config, 1) == 8.0 and neurd_rate(config, 21) == pytest.approx(4.0)
    assert neurd_rate(config, 61) == pytest.approx(2.0)
    with pytest.raises(ConfigError, match="train.neurd_decay_shape.*'constant'.*inverse_sqrt, inverse"):
        TrainConfig(objective="neurd", neurd_decay_shape="constant")


def test_config_names_the_bad_objective():
    with pytest.raises(ConfigError, match="train.objective"):
        TrainConfig(objective="neurd2")
    with pytest.raises(ConfigError, match="train.neurd_lr"):
        TrainConfig(objective="neurd", neurd_lr=0.0)


@pytest.fixture(scope="module")
def neurd_round(tmp_path_factory):
    selfplay = SelfPlayConfig(deals_per_round=32, iterations_per_round=2, memo_prompts=64)
    return first_rollouts(tmp_path_factory.mktemp("neurd"), selfplay, branches=True), selfplay


def test_a_neurd_round_writes_branches_and_fits_its_targets(neurd_round):
    root, selfplay = neurd_round
    records = [json.loads(line) for line in (root / "roll1" / "games.jsonl").read_text().splitlines()]
    branches = [json.loads(line) for line in (root / "roll1" / BRANCHES_FILE).read_text().splitlines()]
    assert len(branches) == len(branch_slots(records))
    config = TrainConfig(objective="neurd", reference="previous", steps=6, lr=1.0e-3, lr_decay="constant")
    data = learner_decisions(records, records[0]["players"][0], config, branches)
    assert len(data.values) == len(data.chosen) and all(v is not None for v in data.values)
    np.testing.assert_allclose(data.visit_weights, 1.0 / len(records))
    summary = train_round(root / "snap0", root / "snap0", root / "roll1", 1, selfplay, config, root / "train1",
                          progress=False, pool_file=root / "pool0", seeds=SeedsConfig())
    log = [json.loads(line) for line in (root / "train1" / "train_log.jsonl").read_text().splitlines()]
    assert summary["steps"] == 12 and [row["iteration"] for row in log] == [0] * 6 + [1] * 6
    assert all(row["rows"] <= 12 for row in log)  # Kuhn's compact view: at most 12 distinct prompts
    assert min(row["loss"] for row in log[:6]) < log[0]["loss"]  # the fit moves towards its targets


def test_neurd_without_branches_is_a_clear_error(neurd_round, tmp_path):
    root, selfplay = neurd_round
    play_round(root / "snap0", root / "pool0", SelfPlayConfig(deals_per_round=8), SeedsConfig(), 1, tmp_path / "r")
    with pytest.raises(ValueError, match="branch games"):
        train_round(root / "snap0", root / "snap0", tmp_path / "r", 1, SelfPlayConfig(deals_per_round=8),
                    TrainConfig(objective="neurd"), tmp_path / "t", progress=False)


def _only(data, keep):
    """``data``'s decisions at the indices ``keep``, in order."""
    pick = np.asarray(keep)
    return replace(data, observations=[data.observations[i] for i in keep], chosen=data.chosen[pick],
                   logp_old=data.logp_old[pick], advantages=data.advantages[pick], zero_group=data.zero_group[pick],
                   rewards=data.rewards[pick], values=[data.values[i] for i in keep],
                   visit_weights=data.visit_weights[pick])


def _two_iterations(root, config):
    """Round 1's learner decisions cut in two by prompt: those of the first half of its distinct prompts (sorted),
    then the rest, as two iterations would see them; and the first half's prompts."""
    records = [json.loads(line) for line in (root / "roll1" / "games.jsonl").read_text().splitlines()]
    data = learner_decisions(records, records[0]["players"][0], config,
                             [json.loads(line) for line in (root / "roll1" / BRANCHES_FILE).read_text().splitlines()])
    texts = sorted({o.text for o in data.observations})
    early = set(texts[: len(texts) // 2])
    first = [i for i, o in enumerate(data.observations) if o.text in early]
    return _only(data, first), _only(data, sorted(set(range(len(data.chosen))) - set(first))), early


def test_anchors_hold_prompts_seen_earlier_in_the_round_at_the_current_policy(neurd_round):
    root, _ = neurd_round
    config = TrainConfig(objective="neurd", reference="previous", neurd_anchor=3)
    early, late, early_texts = _two_iterations(root, config)
    policy = MLXPlayer(root / "snap0", MLXPlayerConfig())
    fit = NeuRDFit(policy, config, 1.0, anchor_seed=(0, 1, 1))
    first = fit.targets(early, policy, 1.0)
    assert first.anchors == 0 and len(first.observations) == len(early_texts)
    second = fit.targets(late, policy, 1.0)
    anchors = second.observations[-3:]
    assert second.anchors == 3 and {o.text for o in anchors} < early_texts
    for observation, target in zip(anchors, second.logp[-3:], strict=True):
        np.testing.assert_allclose(target, all_action_logp(policy, [observation], 1.0, 65536, "k")[0], atol=1e-5)
    plain = NeuRDFit(policy, replace(config, neurd_anchor=0), 1.0)
    plain.targets(early, policy, 1.0)
    assert plain.targets(late, policy, 1.0).anchors == 0


def _drift_of_unvisited(root, anchor):
    """The mean, over the prompts a first iteration visited, of the largest change in a prompt's log-policy that ten
    Adam steps on a second iteration's targets (other prompts) cause."""
    config = TrainConfig(objective="neurd", reference="previous", lr=1.0e-2, neurd_anchor=anchor)
    early, late, _ = _two_iterations(root, config)
    policy = MLXPlayer(root / "snap0", MLXPlayerConfig())
    fit = NeuRDFit(policy, config, 1.0)
    held = fit.targets(early, policy, 1.0).observations
    before = all_action_logp(policy, held, 1.0, 65536, "k")
    targets = fit.targets(late, policy, 8.0)
    for _ in range(10):
        fit(targets, np.arange(len(targets.observations)), config.lr)
    after = all_action_logp(policy, held, 1.0, 65536, "k")
    return float(np.mean([np.abs(a - b).max() for a, b in zip(after, before, strict=True)]))


def test_anchors_keep_the_fit_from_moving_unvisited_prompts(neurd_round):
    root, _ = neurd_round
    plain, anchored = _drift_of_unvisited(root, 0), _drift_of_unvisited(root, 12)
    assert plain > 0.5 and anchored < 0.5 * plain, (plain, anchored)
