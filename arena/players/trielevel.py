"""A scoring pass's action-trie level, run in groups of rows of similar trie width so no row pads to the widest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlx.core as mx
import numpy as np

from arena.players.kvcache import PrefixCache, per_token_positions

# A group's fixed cost, in trie tokens: one more model call (its per-layer ops and masks). On the embedded model
# (one core) a call costs ~6 ms and a trie token ~85 us; over one Liar's Dice compact match's passes, 48 ran in
# 1.67 s and 16 in 1.93 s, against 2.16-2.32 s for a single group.
GROUP_TOKENS = 48


def trie_groups(widths: Sequence[int], call_tokens: int = GROUP_TOKENS) -> list[np.ndarray]:
    """Rows grouped so that padding each group to its widest row plus ``call_tokens`` a group costs least.

    Groups are runs of the rows sorted by width (ties by row), found by dynamic programming; one group is all rows
    in their own order, so a pass that gains nothing from splitting runs exactly as before.
    """
    order = np.argsort(np.asarray(widths), kind="stable")
    sorted_widths = np.asarray(widths)[order]
    best, cut = [0] * (len(order) + 1), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):  # best[end]: rows order[:end] grouped; a group order[start:end]
        best[end], cut[end] = min((best[start] + (end - start) * int(sorted_widths[end - 1]) + call_tokens, start)
                                  for start in range(end))
    bounds, end = [], len(order)
    while end:
        bounds.append((cut[end], end))
        end = cut[end]
    if len(bounds) == 1:
        return [np.arange(len(order))]
    return [order[start:end] for start, end in reversed(bounds)]


def trie_states(model: Any, caches: Sequence[PrefixCache], lengths: mx.array | None, trie: np.ndarray,
                depth: np.ndarray, mask: np.ndarray, widths: np.ndarray) -> tuple[mx.array, np.ndarray]:
    """Every row's trie tokens through the model over its cached keys and values, group by group.

    Returns the hidden states [tokens run, hidden] and, for each (row, column) of ``trie``, the index of its state
    there ([rows, columns], -1 where a column is padding no group ran). Some row has a trie (``widths.max() > 0``).
    """
    groups = trie_groups([int(w) for w in widths], GROUP_TOKENS)
    where = np.full(trie.shape, -1, dtype=np.int64)
    parts, start = [], 0
    for rows in groups:
        width = int(widths[rows].max())
        if not width:  # prompts whose actions are all one token long: nothing of theirs to run
            continue
        picked = mx.array(rows) if len(groups) > 1 else None
        level = [c.tree(lengths, mx.array(depth[rows, :width]), mx.array(mask[rows][:, :width, :width]), picked)
                 for c in caches]
        with per_token_positions(model):
            out = model.model(mx.array(trie[rows, :width]), cache=level)
        where[rows, :width] = start + np.arange(len(rows) * width).reshape(len(rows), width)
        parts.append(out.reshape(-1, out.shape[-1]))
        start += len(rows) * width
    return mx.concatenate(parts) if len(parts) > 1 else parts[0], where
