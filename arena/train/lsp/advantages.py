"""LSP's advantages (pure): the solver's group baseline, query values, the quality gate and the challenger's reward."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena.train.selfplay.grpo import group_advantages


def _rows(rewards: Sequence[Sequence[float]]) -> list[np.ndarray]:
    rows = [np.asarray(row, dtype=np.float64) for row in rewards]
    for index, row in enumerate(rows):
        if row.ndim != 1 or not np.all(np.isfinite(row)) or np.any((row < 0) | (row > 1)):
            raise ValueError(f"rewards[{index}] must be a 1-D list of rewards in [0, 1], got {row.tolist()}")
    return rows


def query_values(rewards: Sequence[Sequence[float]]) -> np.ndarray:
    """V(q): each query's mean solver reward over its answers; a query with no answers (no right answer
    exists, so none were sampled) is worth 0, what any answer to it would have scored."""
    return np.array([float(row.mean()) if row.size else 0.0 for row in _rows(rewards)])


def solver_advantages(rewards: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Each answer's reward minus the mean over its query's answers (GRPO), flattened query by query,
    and which answers belong to a query whose answers all scored alike (no signal)."""
    rows = _rows(rewards)
    flat = np.concatenate(rows) if rows else np.zeros(0)
    ids = np.concatenate([np.full(row.size, i) for i, row in enumerate(rows)]) if rows else np.zeros(0, dtype=int)
    grouped = group_advantages(flat, ids, normalise_std=False)
    return grouped.advantages, grouped.zero_group


def quality(ok: Sequence[bool], rewards: Sequence[Sequence[float]]) -> np.ndarray:
    """Q(q): a query is worth its quality only when it is valid and solvable (``ok``) and non-trivial, meaning
    its answers hold both a right (reward 1) and a wrong one (reward 0)."""
    rows = _rows(rewards)
    if len(ok) != len(rows):
        raise ValueError(f"ok has {len(ok)} entries but rewards has {len(rows)} queries; pass one per query")
    return np.array([bool(valid) and bool(np.any(row == 1.0)) and bool(np.any(row == 0.0))
                     for valid, row in zip(ok, rows, strict=True)])


def challenger_rewards(values: np.ndarray, quality_flags: np.ndarray, *, use_quality: bool,
                       quality_weight: float) -> np.ndarray:
    """The challenger's reward per query.

    LSP-Zero (``use_quality`` false): ``1 - V(q)``, the solver's failure (zero-sum with the solver), so the
    advantage below is the paper's batch mean of V minus V(q). LSP: ``Q(q) * (quality_weight + 1 - V(q))``,
    the quality self-reward plus the difficulty, both paid only when the query has its quality: an additive
    quality term would still pay full difficulty for a puzzle with no right answer (V = 0), which is exactly
    the degenerate challenger the gate must not pay (arena.train.lsp.audit checks both).
    """
    values = np.asarray(values, dtype=np.float64)
    flags = np.asarray(quality_flags, dtype=bool)
    if values.shape != flags.shape or values.ndim != 1:
        raise ValueError(f"values and quality_flags must be 1-D of one length, got {values.shape} and {flags.shape}")
    if quality_weight < 0:
        raise ValueError(f"quality_weight must be >= 0, got {quality_weight!r}")
    difficulty = 1.0 - values
    if not use_quality:
        return difficulty
    return np.where(flags, quality_weight + difficulty, 0.0)


def challenger_advantages(rewards: np.ndarray) -> np.ndarray:
    """Each query's reward minus the batch mean: a challenger that proposes one puzzle every time gets zero."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 1 or rewards.size == 0:
        raise ValueError(f"rewards must be a non-empty 1-D array (one per query), got shape {rewards.shape}")
    centred = rewards - rewards.mean()
    # Equal rewards leave ~1e-17 residues after the mean; such a batch carries no signal by definition.
    return np.zeros_like(centred) if np.all(rewards == rewards[0]) else centred
