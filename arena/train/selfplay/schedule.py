"""Step-size schedules over a multi-round run: the learning rate, the PPO clip and NeuRD's target step (pure)."""

from __future__ import annotations

import math

from arena.train.config import TrainConfig


def decayed(value: float, decay: str, rounds: float) -> float:
    """``value`` after ``rounds`` rounds (a fraction within a round) under a decay of DECAYS."""
    if decay == "inverse_sqrt":
        return value / math.sqrt(1.0 + rounds)
    if decay == "inverse":  # 1/t, the Robbins-Monro rate: steps sum to infinity, their squares do not
        return value / (1.0 + rounds)
    return value


def round_learning_rate(config: TrainConfig, global_step: int, steps_per_round: int) -> float:
    """The learning rate at ``global_step`` of the run, ``steps_per_round`` steps a round, under ``train.lr_decay``
    and ramped up linearly over each round's first ``train.lr_warmup`` steps."""
    # Decay over the whole multi-round run (global steps, in rounds), as the tabular study's best recipe does.
    rate = decayed(config.lr, config.lr_decay, global_step / steps_per_round)
    if config.lr_warmup:  # each round's Adam starts fresh: its first steps move every weight by ~lr, whatever the fit
        rate *= min(1.0, (global_step % steps_per_round + 1) / config.lr_warmup)
    return rate


def neurd_rate(config: TrainConfig, outer_step: int) -> float:
    """NeuRD's target step at outer step ``outer_step`` (1-based, one per iteration of the run): ``train.neurd_lr``
    decayed as ``train.neurd_decay_shape`` (1 / sqrt or 1 / t) over ``train.neurd_decay`` iterations, constant where
    that is 0."""
    if not config.neurd_decay:
        return config.neurd_lr
    return decayed(config.neurd_lr, config.neurd_decay_shape, (outer_step - 1) / config.neurd_decay)


def round_clip(config: TrainConfig, round_number: int) -> float:
    """Round ``round_number``'s PPO clip under ``train.clip_decay``. Adam moves a near-indifferent decision's
    probability to the clip's edge whatever its (noisy) advantage, so the clip, not the learning rate, sets how far
    noise moves the policy a round (studies/results/clip_schedule.md)."""
    return decayed(config.clip_eps, config.clip_decay, round_number - 1)
