"""The GRPO objective for games: group-normalised advantages and the clipped KL loss."""

from __future__ import annotations

import math
from typing import NamedTuple

import mlx.core as mx
import numpy as np

# ---------------------------------------------------------------------------------------------
# Advantages (numpy; pure)
# ---------------------------------------------------------------------------------------------


class GroupAdvantages(NamedTuple):
    """Per-sample advantages, and which samples belong to a group with no learning signal."""

    advantages: np.ndarray  # float64, one per sample
    zero_group: np.ndarray  # bool, one per sample: True when every reward in its group is equal


def _as_vector(values: object, name: str, dtype: type) -> np.ndarray:
    array = np.asarray(values, dtype=dtype)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence (one entry per sample), got shape {array.shape}")
    return array


def group_advantages(
    rewards: np.ndarray | list[float],
    group_ids: np.ndarray | list[int],
    *,
    normalise_std: bool,
    eps: float = 1e-6,
) -> GroupAdvantages:
    """Reward minus its group's mean, optionally divided by the group's (population) std plus ``eps``.

    In games a group is every game played from the same deal/seed with the learner in both seats, so
    the luck of the deal cancels inside the group. A group whose rewards are all equal carries no
    signal: its advantages are exactly zero and it is flagged in ``zero_group`` so callers can drop
    it (TRL's "zero-std groups"); a group of one sample is such a group.
    """
    rewards_array = _as_vector(rewards, "rewards", np.float64)
    ids = _as_vector(group_ids, "group_ids", np.int64)
    if rewards_array.shape != ids.shape:
        raise ValueError(
            f"rewards has {rewards_array.size} entries but group_ids has {ids.size}; pass one id per reward"
        )
    if not np.all(np.isfinite(rewards_array)):
        raise ValueError("rewards contain NaN or infinity; score every game before computing advantages")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number (it guards the std division), got {eps!r}")
    if rewards_array.size == 0:
        return GroupAdvantages(np.zeros(0), np.zeros(0, dtype=bool))
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=rewards_array) / counts
    centred = rewards_array - means[inverse]
    spread_max = np.full(counts.size, -np.inf)
    spread_min = np.full(counts.size, np.inf)
    np.maximum.at(spread_max, inverse, rewards_array)
    np.minimum.at(spread_min, inverse, rewards_array)
    flat = (spread_max == spread_min)[inverse]
    # Equal rewards can leave ~1e-17 residues after the mean; those groups are exactly zero by definition.
    centred[flat] = 0.0
    if normalise_std:
        stds = np.sqrt(np.bincount(inverse, weights=centred**2) / counts)
        centred = centred / (stds[inverse] + eps)
    return GroupAdvantages(centred, flat)


# ---------------------------------------------------------------------------------------------
# Log-probabilities over legal actions and the loss (MLX)
# ---------------------------------------------------------------------------------------------


def legal_log_probs(logits: mx.array, legal: mx.array) -> mx.array:
    """Log-softmax over the legal actions only (illegal entries get -inf). ``logits``, ``legal``: [N, A]."""
    if logits.shape != legal.shape or logits.ndim != 2:
        raise ValueError(f"logits and legal must both be [N, A]; got {logits.shape} and {legal.shape}")
    masked = mx.where(legal, logits, -mx.inf)
    return masked - mx.logsumexp(masked, axis=-1, keepdims=True)


def chosen_log_probs(logits: mx.array, legal: mx.array, actions: mx.array) -> mx.array:
    """Log-probability of each row's chosen action under the legal-action softmax. Returns shape [N]."""
    if actions.shape != (logits.shape[0],):
        raise ValueError(f"actions must have shape ({logits.shape[0]},), got {actions.shape}")
    log_probs = legal_log_probs(logits, legal)
    return mx.take_along_axis(log_probs, actions.astype(mx.int32)[:, None], axis=-1)[:, 0]


def check_loss_hyperparameters(clip_eps: float, beta: float, clip_eps_high: float | None = None) -> None:
    """Raise a ValueError naming the bad value when the loss's hyper-parameters are out of range."""
    if not (isinstance(clip_eps, int | float) and math.isfinite(clip_eps) and 0.0 < clip_eps < 1.0):
        raise ValueError(f"clip_eps must lie in (0, 1) (PPO's usual value is 0.2), got {clip_eps!r}")
    if clip_eps_high is not None and not (
        isinstance(clip_eps_high, int | float) and math.isfinite(clip_eps_high) and clip_eps_high > 0
    ):
        raise ValueError(f"clip_eps_high must be a positive number or None, got {clip_eps_high!r}")
    if not (isinstance(beta, int | float) and math.isfinite(beta) and beta >= 0.0):
        raise ValueError(f"beta (the KL coefficient) must be a finite number >= 0, got {beta!r}; use 0 to disable")


def grpo_loss(
    logp_new: mx.array,
    logp_old: mx.array,
    logp_ref: mx.array,
    advantages: mx.array,
    mask: mx.array,
    *,
    clip_eps: float,
    beta: float,
    clip_eps_high: float | None = None,
) -> tuple[mx.array, dict[str, mx.array]]:
    """The GRPO loss over decisions: clipped importance-weighted advantage plus ``beta`` times KL to a reference.

    All inputs are per decision (shape [N]): the chosen action's log-probability under the policy
    being trained (``logp_new``, the only one gradients flow through), under the policy that sampled
    it (``logp_old``) and under the reference (``logp_ref``). ``mask`` is 1 for decisions that count.

    Per decision: ``-(min(r A, clip(r, 1 - eps, 1 + eps_high) A) - beta * k3)`` with ``r = exp(new - old)``
    and the k3 KL estimator ``k3 = exp(ref - new) - (ref - new) - 1`` (unbiased for KL(new || ref) on
    samples from new, and >= 0), averaged over the masked decisions. ``clip_eps_high`` defaults to
    ``clip_eps`` (DAPO's "clip higher" sets it larger). Metrics (no gradient): ``kl`` (mean k3),
    ``clip_fraction`` (share of decisions whose gradient the clip removed), ``mean_ratio``.
    """
    check_loss_hyperparameters(clip_eps, beta, clip_eps_high)
    _check_decision_shapes(logp_new, logp_old, logp_ref, advantages, mask)
    high = clip_eps if clip_eps_high is None else clip_eps_high
    weights = mask.astype(logp_new.dtype)
    count = mx.maximum(weights.sum(), 1.0)
    old = mx.stop_gradient(logp_old)
    ref = mx.stop_gradient(logp_ref)
    adv = mx.stop_gradient(advantages).astype(logp_new.dtype)
    ratio = mx.exp(logp_new - old)
    clipped_ratio = mx.clip(ratio, 1.0 - clip_eps, 1.0 + high)
    surrogate = mx.minimum(ratio * adv, clipped_ratio * adv)
    kl = _k3(ref, logp_new)
    per_decision = -(surrogate - beta * kl)
    loss = (per_decision * weights).sum() / count
    return loss, _loss_metrics(ratio, adv, kl, weights, count, clip_eps, high)


def _check_decision_shapes(*arrays: mx.array) -> None:
    """grpo_loss's inputs (new, old, ref, advantages, mask) must all be 1-D, one entry per decision."""
    if len({arr.shape for arr in arrays}) != 1 or arrays[0].ndim != 1:
        new, old, ref, adv, mask = (arr.shape for arr in arrays)
        raise ValueError(
            "grpo_loss inputs must all be 1-D with one entry per decision; got shapes "
            f"new={new} old={old} ref={ref} adv={adv} mask={mask}"
        )


def _k3(logp_ref: mx.array, logp_new: mx.array) -> mx.array:
    """The k3 estimator of KL(new || ref) per decision: ``exp(ref - new) - (ref - new) - 1``."""
    log_ref_over_new = logp_ref - logp_new
    return mx.exp(log_ref_over_new) - log_ref_over_new - 1.0


def _loss_metrics(ratio: mx.array, adv: mx.array, kl: mx.array, weights: mx.array, count: mx.array,
                  clip_eps: float, high: float) -> dict[str, mx.array]:
    """grpo_loss's metrics over the masked decisions (no gradient): mean k3, clip fraction, mean ratio."""
    # The clip removes the gradient exactly where the clipped term is the (strictly) smaller one.
    clipped = ((ratio > 1.0 + high) & (adv > 0)) | ((ratio < 1.0 - clip_eps) & (adv < 0))
    return {
        "kl": mx.stop_gradient((kl * weights).sum() / count),
        "clip_fraction": mx.stop_gradient((clipped.astype(weights.dtype) * weights).sum() / count),
        "mean_ratio": mx.stop_gradient((ratio * weights).sum() / count),
    }
