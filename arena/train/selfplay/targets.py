"""NeuRD's targets (pure): one prompt's target log-policy from its action values, and per-prompt visit sums.

Shared by the sampled fit (``neurd.py``, values from branch games) and the full-width one (``fullwidth.py``, values
from the game tree), so neither imports the other's module for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def neurd_target(logp_old: np.ndarray, logp_magnet: np.ndarray, value_sum: np.ndarray, weight_sum: float,
                 lr: float, beta: float, clip: float) -> tuple[np.ndarray, bool]:
    """One prompt's target log-policy, and whether the logit threshold cut it.

    ``value_sum`` is the visit-weighted sum of each visit's centred action values (q(a) - mean q), ``weight_sum``
    the visits' total weight. The logits move by lr x (value_sum - beta x weight_sum x (pi_old - rho)); every
    logit stays within ``clip`` of the largest (NeuRD's threshold, as a logit gap).
    """
    # The threshold floors the others below the largest logit rather than boxing centred logits: a box pins every
    # action that reaches its ceiling to one value, which tied a forced TicTacToe block with a losing move at 0.5
    # each for good (studies/results/tictactoe_fullwidth.md). For two actions both rules are the same, bit for bit.
    pull = np.exp(logp_old) - np.exp(logp_magnet)
    logits = logp_old + lr * (value_sum - beta * weight_sum * pull)
    centred = logits - logits.mean()
    shifted = centred - centred.max()
    floored = np.maximum(shifted, -clip)
    return floored - np.log(np.exp(floored).sum()), bool((floored != shifted).any())


def visit_sums(keys: Sequence[Any], values: Sequence[np.ndarray], weights: np.ndarray
               ) -> tuple[list[int], list[np.ndarray], np.ndarray]:
    """Per distinct key (in order of first appearance): its first index, the weighted sum of its visits' centred
    action values, and the visits' total weight."""
    rows: dict[Any, int] = {}
    first: list[int] = []
    sums: list[np.ndarray] = []
    totals: list[float] = []
    for index, (key, value, weight) in enumerate(zip(keys, values, weights, strict=True)):
        row = rows.setdefault(key, len(rows))
        if row == len(first):
            first.append(index)
            sums.append(np.zeros(len(value)))
            totals.append(0.0)
        sums[row] += weight * (value - value.mean())
        totals[row] += weight
    return first, sums, np.asarray(totals)
