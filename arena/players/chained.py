"""Exact policies over many long prompts that extend one another (TicTacToe's full view): chained scoring.

An exact measure scores every position of a game once. In the full view each position's prompt is the game's rules
text and its whole history, so TicTacToe's 4,520 prompts hold 3.5M tokens, yet as a prefix trie only 0.67M are
distinct (sibling positions share their history). Sorted, consecutive prompts share the longest prefixes; cut into
``chains`` runs of the sorted order, step j scores the j-th prompt of every chain in one batch, each as its chain's
stream, so the player's cross-turn store (arena.players.kvcache.TurnCache) hands it the keys and values of its
chain's previous prompt and only the rest is encoded. Results equal one-at-a-time scoring up to float summation
order (a prefix's keys and values come from another batch; see tests/test_chained.py for the tolerance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from arena.games.base import Observation
from arena.players.mlx import MLXPlayer

# Chain only where it pays: prompts this long on average (tokens), and the trie at most this share of their tokens.
# Short compact-view prompts (TicTacToe: 45 tokens; the embedded default's exact evaluations) keep the one-pass path.
CHAIN_MIN_MEAN_TOKENS = 256
CHAIN_MAX_TRIE_SHARE = 0.5


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n


def trie_tokens(prompts: Sequence[Sequence[int]]) -> int:
    """Distinct tokens of the prompts' prefix trie (what chained scoring encodes, chain starts aside)."""
    ordered = sorted(tuple(p) for p in prompts)
    return sum(len(b) - _common(a, b) for a, b in zip([()] + ordered[:-1], ordered, strict=True))


def worth_chaining(prompts: Sequence[Sequence[int]]) -> bool:
    """Whether chained scoring saves most of the prompts' tokens (long prompts sharing long histories)."""
    total = sum(map(len, prompts))
    return (bool(prompts) and total >= CHAIN_MIN_MEAN_TOKENS * len(prompts)
            and trie_tokens(prompts) <= CHAIN_MAX_TRIE_SHARE * total)


def chain_count(player: MLXPlayer, prompts: Sequence[Sequence[int]]) -> int:
    """How many chains run side by side: their kept prompts (whole, at the longest) hold at most an eighth of
    ``player.max_batch_tokens``, since a step's pass copies its stored keys and values a few times (stacked, joined,
    each tail's rows). A quarter (32 chains for TicTacToe's full view on SmolLM2) peaked over 5 GB on Leduc."""
    longest = max(map(len, prompts))
    return max(1, min(len(prompts), player.config.max_batch_tokens // (8 * longest)))


def chained_log_policy(player: MLXPlayer, observations: Sequence[Observation], chains: int | None = None
                       ) -> list[np.ndarray]:
    """Per observation, the log-probability of each legal action (``legal_actions`` order), scored in chains.

    The player's cross-turn store is cleared before and after (as at a match's start), so nothing outside this call
    is reused and nothing from it is left behind.
    """
    prompts = [player.prompts.prompt_ids(o) for o in observations]
    order = sorted(range(len(observations)), key=prompts.__getitem__)
    chains = chains or chain_count(player, prompts)
    length = math.ceil(len(order) / chains) if order else 0
    runs = [order[c * length:(c + 1) * length] for c in range(chains)]
    out: list[np.ndarray] = [np.empty(0)] * len(observations)
    player.begin_match()
    try:
        for step in range(length):
            picked = [(c, run[step]) for c, run in enumerate(runs) if step < len(run)]
            batch = [replace(observations[i], stream=c + 1) for c, i in picked]
            for (_, i), logp in zip(picked, player.scored(batch), strict=True):
                out[i] = logp
    finally:
        player.begin_match()
    return out


def exact_policy_probs(player: MLXPlayer, observations: Sequence[Observation]) -> list[np.ndarray]:
    """``player.policy(observations)``, in chains where that saves most of the prompts' tokens (full views) and the
    player keeps no memo; otherwise the player's own one-pass path, unchanged."""
    if player.memo:
        return player.policy(observations)
    prompts = [player.prompts.prompt_ids(o) for o in observations]
    if not worth_chaining(prompts) or chain_count(player, prompts) >= len(prompts):
        return player.policy(observations)
    return [np.exp(lp) for lp in chained_log_policy(player, observations)]
