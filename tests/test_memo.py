"""The policy memo (each distinct prompt scored once, the same way whatever it is batched with) and the exact
aggregation of identical GRPO rows."""

import numpy as np
import pytest

from arena.games.registry import make_game
from arena.players.config import MLXPlayerConfig
from arena.players.memo import PolicyMemo
from arena.players.mlx import MLXPlayer
from arena.players.policy import canonical_observations
from arena.train.config import TrainConfig
from arena.train.selfplay.update import GRPOUpdate, distinct_rows


def _five_hand_observations(count: int):
    return [make_game("kuhn", seed, {"rounds": 5}).observation() for seed in range(count)]


@pytest.fixture(scope="module")
def memo_player(base_model_dir):
    return MLXPlayer(base_model_dir, MLXPlayerConfig(memo_prompts=64))


def test_a_memoised_policy_does_not_depend_on_the_batch(memo_player):
    observations = list(canonical_observations().values())
    alone = [memo_player.policy([o])[0] for o in observations]
    memo_player.weights_changed()
    batched = memo_player.policy(observations[::-1] + _five_hand_observations(8))[:len(observations)][::-1]
    assert all(np.array_equal(a, b) for a, b in zip(alone, batched, strict=True))
    assert memo_player.memo.hits > 0 and len(memo_player.memo.entries) <= 64


def test_a_memoised_policy_is_the_batched_one_up_to_float_rounding(memo_player, base_model_dir):
    """Batched scoring differs from scoring alone only in the last bits (4.8e-7 measured on this model)."""
    observations = list(canonical_observations().values())
    batched = MLXPlayer(base_model_dir).policy(observations)
    memoised = memo_player.policy(observations)
    assert max(np.abs(a - b).max() for a, b in zip(memoised, batched, strict=True)) < 1e-5


def test_the_memo_is_bounded_and_evicts_the_least_recently_used():
    memo = PolicyMemo(2)
    keys = [PolicyMemo.key([1, 2, i], ["[a]", "[b]"]) for i in range(3)]
    memo.put(keys[0], np.zeros(2))
    memo.put(keys[1], np.ones(2))
    assert memo.get(keys[0]) is not None  # now the most recently used
    memo.put(keys[2], np.ones(2))
    assert list(memo.entries) == [keys[0], keys[2]] and memo.get(keys[1]) is None
    assert PolicyMemo.key([1, 2], ["[a]"]) != PolicyMemo.key([1], ["2[a]"])


def test_distinct_rows_keep_first_appearance_order():
    first, counts = distinct_rows(["b", "a", "b", "c", "a", "b"])
    assert first.tolist() == [0, 1, 3] and counts.tolist() == [3, 2, 1]


def test_aggregated_rows_give_the_loss_and_gradient_of_every_decision(base_model_dir):
    import mlx.core as mx
    from mlx.utils import tree_flatten

    player = MLXPlayer(base_model_dir, MLXPlayerConfig(memo_prompts=64))
    canonical = list(canonical_observations().values())
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(canonical), size=300)
    observations = [canonical[i] for i in picks]
    chosen = rng.integers(0, 2, size=300)
    logp_old = np.array([player.policy([o])[0][c] for o, c in zip(observations, chosen, strict=True)])
    logp_ref = logp_old - 0.05 * (picks % 3)
    advantages = np.array([-1.0, -0.5, 0.5, 1.0])[rng.integers(0, 4, size=300)]
    # A small step size first, so ratios differ from 1 and some rows sit in the clip.
    update = GRPOUpdate(player, TrainConfig(lr=3.0e-3, clip_eps=0.2, beta=0.1), 1.0)
    update(observations, chosen, logp_old, logp_ref, advantages, 3.0e-3)
    first, counts = update.rows(observations, chosen, logp_old, logp_ref, advantages)
    assert len(first) <= 12 * 2 * 4 and counts.sum() == 300  # info sets x choices x advantages
    rows = [observations[i] for i in first]
    loss_a, metrics_a, grads_a, _ = update.gradients(rows, chosen[first], logp_old[first], logp_ref[first],
                                                      advantages[first], counts)
    loss_b, metrics_b, grads_b, _ = update.gradients(observations, chosen, logp_old, logp_ref, advantages,
                                                      np.ones(300))
    assert abs(loss_a.item() - loss_b.item()) <= 1e-6 * max(1.0, abs(loss_b.item()))
    assert 0 < metrics_b["clip_fraction"].item() < 1
    assert abs(metrics_a["clip_fraction"].item() - metrics_b["clip_fraction"].item()) < 1e-6
    for (name, a), (_, b) in zip(tree_flatten(grads_a), tree_flatten(grads_b), strict=True):
        scale = max(1e-8, mx.abs(b).max().item())
        assert mx.abs(a - b).max().item() <= 1e-4 * scale, name
