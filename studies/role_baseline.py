"""SPIRAL's role-conditioned baseline for the tabular Kuhn study (studies/tabular.py): a per-seat moving average."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from arena.train.selfplay.grpo import _as_vector  # the GRPO advantages' own 1-D check, not a copy of it


@dataclass(frozen=True)
class RoleBaseline:
    """Per-role exponential moving average of rewards (SPIRAL's role-conditioned advantage estimation).

    In self-play the two seats of a game have different expected rewards (Kuhn's first mover loses
    1/18 per round at equilibrium); a baseline per role removes that offset without a critic.
    ``values[r]`` is None until role r has been seen: the first batch initialises it directly, so the
    baseline does not start biased towards zero.
    """

    decay: float
    values: tuple[float | None, ...]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.decay) and 0.0 <= self.decay < 1.0):
            raise ValueError(f"RoleBaseline.decay must lie in [0, 1) (e.g. 0.95), got {self.decay!r}")
        if len(self.values) == 0:
            raise ValueError("RoleBaseline needs at least one role")


def role_baseline(num_roles: int, decay: float) -> RoleBaseline:
    """A fresh baseline for ``num_roles`` roles (2 for two-player games)."""
    if num_roles < 1:
        raise ValueError(f"num_roles must be >= 1, got {num_roles!r}")
    return RoleBaseline(decay=decay, values=(None,) * num_roles)


def _check_roles(state: RoleBaseline, rewards: object, roles: object) -> tuple[np.ndarray, np.ndarray]:
    rewards_array = _as_vector(rewards, "rewards", np.float64)
    roles_array = _as_vector(roles, "roles", np.int64)
    if rewards_array.shape != roles_array.shape:
        raise ValueError(f"rewards has {rewards_array.size} entries but roles has {roles_array.size}")
    if roles_array.size and (roles_array.min() < 0 or roles_array.max() >= len(state.values)):
        raise ValueError(f"roles must lie in [0, {len(state.values)}), got values {sorted(set(roles_array.tolist()))}")
    if not np.all(np.isfinite(rewards_array)):
        raise ValueError("rewards contain NaN or infinity")
    return rewards_array, roles_array


def _batch_means(rewards: np.ndarray, roles: np.ndarray, num_roles: int) -> list[float | None]:
    return [float(rewards[roles == role].mean()) if np.any(roles == role) else None for role in range(num_roles)]


def role_advantages(
    state: RoleBaseline, rewards: np.ndarray | list[float], roles: np.ndarray | list[int]
) -> np.ndarray:
    """Reward minus its role's baseline; a role not seen before uses this batch's mean (its first value)."""
    rewards_array, roles_array = _check_roles(state, rewards, roles)
    batch = _batch_means(rewards_array, roles_array, len(state.values))
    baseline = np.zeros(len(state.values))
    for role, (old, new) in enumerate(zip(state.values, batch, strict=True)):
        current = old if old is not None else new
        # None remains only for roles absent from both the state and this batch: never indexed below.
        baseline[role] = 0.0 if current is None else current
    return rewards_array - baseline[roles_array]


def update_role_baseline(
    state: RoleBaseline, rewards: np.ndarray | list[float], roles: np.ndarray | list[int]
) -> RoleBaseline:
    """Fold one batch into the baseline: ``b_r <- decay * b_r + (1 - decay) * mean(rewards of role r)``."""
    rewards_array, roles_array = _check_roles(state, rewards, roles)
    batch = _batch_means(rewards_array, roles_array, len(state.values))
    values: list[float | None] = []
    for old, new in zip(state.values, batch, strict=True):
        if new is None:
            values.append(old)
        elif old is None:
            values.append(new)
        else:
            values.append(state.decay * old + (1.0 - state.decay) * new)
    return RoleBaseline(decay=state.decay, values=tuple(values))
