"""GRPO maths: group advantages and the clipped KL-regularised loss and its gradients."""


# isort: split
import mlx.core as mx
import numpy as np
import pytest

from arena.train.selfplay.grpo import (
    check_loss_hyperparameters,
    chosen_log_probs,
    group_advantages,
    grpo_loss,
    legal_log_probs,
)

# ------------------------------------------------------------------ group advantages


def test_advantages_sum_to_zero_per_group():
    rng = np.random.default_rng(0)
    rewards = rng.choice([-2.0, -1.0, 1.0, 2.0], size=60)
    groups = np.repeat(np.arange(15), 4)
    rng.shuffle(groups)  # groups need not be contiguous
    for normalise in (False, True):
        result = group_advantages(rewards, groups, normalise_std=normalise)
        for group in np.unique(groups):
            assert result.advantages[groups == group].sum() == pytest.approx(0.0, abs=1e-12)


def test_advantage_values_and_std_normalisation():
    result = group_advantages([1.0, -1.0, 2.0, 0.0, 1.0], [0, 0, 1, 1, 1], normalise_std=False)
    np.testing.assert_allclose(result.advantages, [1.0, -1.0, 1.0, -1.0, 0.0])
    normalised = group_advantages([1.0, -1.0, 3.0, -1.0], [0, 0, 1, 1], normalise_std=True, eps=1e-9)
    # Population std: group 0 has std 1, group 1 has std 2, so both normalise to +-1.
    np.testing.assert_allclose(normalised.advantages, [1.0, -1.0, 1.0, -1.0], atol=1e-8)


def test_all_equal_groups_are_flagged_and_exactly_zero():
    rewards = [0.1, 0.1, 0.1, 1.0, -1.0, 5.0]
    result = group_advantages(rewards, [0, 0, 0, 1, 1, 2], normalise_std=True)
    assert result.zero_group.tolist() == [True, True, True, False, False, True]  # a singleton group is flat too
    assert np.all(result.advantages[result.zero_group] == 0.0)
    assert np.all(result.advantages[~result.zero_group] != 0.0)


def test_group_advantages_reject_bad_input():
    with pytest.raises(ValueError, match="one id per reward"):
        group_advantages([1.0, 2.0], [0], normalise_std=False)
    with pytest.raises(ValueError, match="NaN"):
        group_advantages([1.0, float("nan")], [0, 0], normalise_std=False)
    with pytest.raises(ValueError, match="eps"):
        group_advantages([1.0, 2.0], [0, 0], normalise_std=True, eps=0.0)
    with pytest.raises(ValueError, match="1-D"):
        group_advantages([[1.0, 2.0]], [[0, 0]], normalise_std=False)
    empty = group_advantages([], [], normalise_std=True)
    assert empty.advantages.size == 0 and empty.zero_group.size == 0


# ------------------------------------------------------------------ log-probs over legal actions


def test_legal_log_probs_ignore_illegal_actions():
    logits = mx.array([[0.0, 1.0, 50.0], [2.0, 2.0, 2.0]])
    legal = mx.array([[True, True, False], [True, True, True]])
    log_probs = np.array(legal_log_probs(logits, legal))
    np.testing.assert_allclose(np.exp(log_probs).sum(axis=1), [1.0, 1.0], rtol=1e-6)
    assert np.isneginf(log_probs[0, 2])
    np.testing.assert_allclose(log_probs[0, :2], np.log([1 / (1 + np.e), np.e / (1 + np.e)]), rtol=1e-5)
    chosen = chosen_log_probs(logits, legal, mx.array([1, 2]))
    np.testing.assert_allclose(np.array(chosen), [log_probs[0, 1], np.log(1 / 3)], rtol=1e-5)


# ------------------------------------------------------------------ loss and gradients

LOGITS = mx.array([[0.3, -0.2], [1.0, 0.5], [-0.7, 0.4], [0.0, 0.0]])
LEGAL = mx.ones(LOGITS.shape, dtype=mx.bool_)
ACTIONS = mx.array([0, 1, 1, 0])
ADVANTAGES = mx.array([1.0, -0.5, 2.0, -1.5])


def _loss_of_logits(logits, *, old, ref, advantages, mask, clip_eps=0.2, beta=0.0):
    new = chosen_log_probs(logits, LEGAL, ACTIONS)
    return grpo_loss(new, old, ref, advantages, mask, clip_eps=clip_eps, beta=beta)[0]


def test_ratio_one_and_beta_zero_is_the_plain_policy_gradient():
    old = chosen_log_probs(LOGITS, LEGAL, ACTIONS)  # same parameters: ratio exactly 1
    mask = mx.array([1.0, 1.0, 1.0, 0.0])  # the last decision is masked out

    def loss(logits):
        return _loss_of_logits(logits, old=old, ref=old, advantages=ADVANTAGES, mask=mask)

    grad = np.array(mx.grad(loss)(LOGITS))
    # REINFORCE: -(1/n) * sum_i A_i * d log pi(a_i)/d logits = -(1/n) * A_i * (onehot(a_i) - softmax_i).
    probs = np.exp(np.array(LOGITS)) / np.exp(np.array(LOGITS)).sum(axis=1, keepdims=True)
    onehot = np.eye(2)[np.array(ACTIONS)]
    expected = -(np.array(ADVANTAGES) * np.array(mask))[:, None] * (onehot - probs) / 3.0
    np.testing.assert_allclose(grad, expected, atol=1e-6)
    # And the same by central finite differences of the loss itself.
    step, numeric = 1e-3, np.zeros_like(grad)
    base = np.array(LOGITS)
    for index in np.ndindex(base.shape):
        plus, minus = base.copy(), base.copy()
        plus[index] += step
        minus[index] -= step
        numeric[index] = (loss(mx.array(plus)).item() - loss(mx.array(minus)).item()) / (2 * step)
    np.testing.assert_allclose(grad, numeric, atol=2e-4)


def test_clipping_stops_the_gradient_beyond_the_clip_range():
    new = chosen_log_probs(LOGITS, LEGAL, ACTIONS)
    mask = mx.ones(4)

    def grad_for(shift, advantages):
        # logp_old = logp_new - shift makes the ratio exp(shift) at the current parameters.
        old = mx.stop_gradient(new) - shift
        return np.array(
            mx.grad(lambda z: _loss_of_logits(z, old=old, ref=old, advantages=advantages, mask=mask))(LOGITS)
        )

    positive, negative = mx.ones(4), -mx.ones(4)
    assert np.all(grad_for(0.5, positive) == 0.0)  # ratio 1.65 > 1.2 with A > 0: clipped
    assert np.all(grad_for(-0.5, negative) == 0.0)  # ratio 0.61 < 0.8 with A < 0: clipped
    # The pessimistic min keeps the gradient where moving further would hurt the objective.
    assert np.abs(grad_for(0.5, negative)).sum() > 0
    assert np.abs(grad_for(-0.5, positive)).sum() > 0
    assert np.abs(grad_for(0.1, positive)).sum() > 0  # inside the range


def test_clip_fraction_and_ratio_metrics():
    new = mx.array([0.0, 0.0, 0.0, 0.0])
    old = mx.array([-0.5, 0.5, 0.0, -0.5])  # ratios e^0.5, e^-0.5, 1, e^0.5
    advantages = mx.array([1.0, -1.0, 1.0, -1.0])
    _, metrics = grpo_loss(new, old, new, advantages, mx.ones(4), clip_eps=0.2, beta=0.0)
    assert metrics["clip_fraction"].item() == pytest.approx(0.5)  # the first two only
    assert metrics["mean_ratio"].item() == pytest.approx((2 * np.exp(0.5) + np.exp(-0.5) + 1) / 4, rel=1e-6)


def test_kl_zero_at_reference_and_positive_elsewhere():
    new = chosen_log_probs(LOGITS, LEGAL, ACTIONS)
    mask = mx.ones(4)
    _, same = grpo_loss(new, new, new, ADVANTAGES, mask, clip_eps=0.2, beta=0.1)
    assert same["kl"].item() == pytest.approx(0.0, abs=1e-7)
    ref = chosen_log_probs(mx.zeros(LOGITS.shape), LEGAL, ACTIONS)
    _, different = grpo_loss(new, new, ref, ADVANTAGES, mask, clip_eps=0.2, beta=0.1)
    assert different["kl"].item() > 1e-3
    # The KL term's gradient pulls towards the reference: at beta > 0 with zero advantages,
    # a small gradient step lowers the KL.
    zero = mx.zeros(4)

    def kl_loss(logits):
        return _loss_of_logits(logits, old=new, ref=ref, advantages=zero, mask=mask, beta=1.0)

    stepped = LOGITS - 0.1 * mx.grad(kl_loss)(LOGITS)
    assert kl_loss(stepped).item() < kl_loss(LOGITS).item()


def test_loss_with_everything_masked_is_zero():
    new = chosen_log_probs(LOGITS, LEGAL, ACTIONS)
    loss, metrics = grpo_loss(new, new, new, ADVANTAGES, mx.zeros(4), clip_eps=0.2, beta=0.1)
    assert loss.item() == 0.0 and metrics["kl"].item() == 0.0


@pytest.mark.parametrize(
    ("clip_eps", "beta", "high", "message"),
    [
        (0.0, 0.1, None, "clip_eps"),
        (1.0, 0.1, None, "clip_eps"),
        (float("nan"), 0.1, None, "clip_eps"),
        (0.2, -0.1, None, "beta"),
        (0.2, float("inf"), None, "beta"),
        (0.2, 0.1, 0.0, "clip_eps_high"),
    ],
)
def test_bad_hyperparameters_raise(clip_eps, beta, high, message):
    with pytest.raises(ValueError, match=message):
        check_loss_hyperparameters(clip_eps, beta, high)
    one = mx.zeros(2)
    with pytest.raises(ValueError, match=message):
        grpo_loss(one, one, one, one, one, clip_eps=clip_eps, beta=beta, clip_eps_high=high)


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError, match="one entry per decision"):
        grpo_loss(mx.zeros(3), mx.zeros(3), mx.zeros(2), mx.zeros(3), mx.ones(3), clip_eps=0.2, beta=0.0)
