"""Teacher-forced scoring of legal actions: every pending decision of one model in one padded forward pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mlx.core as mx
import numpy as np


@dataclass(frozen=True)
class ScoringBatch:
    """Rows to run through the model and where to read each action's token log-probabilities.

    Identical rows are run once (many games share a prompt, e.g. Kuhn has 12 compact prompts), and a
    decision whose legal actions are all single tokens needs one row -- the prompt -- read at its last
    position, instead of one row per action.
    """

    tokens: np.ndarray          # [rows, max_len] int32, right-padded
    # Per scored token: (row, position whose logits predict it, token id, action index).
    gather_row: np.ndarray
    gather_pos: np.ndarray
    gather_tok: np.ndarray
    gather_action: np.ndarray
    action_offsets: tuple[int, ...]  # decision d owns actions [offsets[d], offsets[d+1])


def build_batch(prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[Sequence[int]]],
                pad_id: int = 0) -> ScoringBatch:
    """Lay out prompt/action token sequences for one forward pass (see ScoringBatch)."""
    rows: dict[tuple[int, ...], int] = {}
    row_r, pos_r, tok_r, act_r = [], [], [], []
    offsets = [0]
    action_index = 0

    def row_of(seq: tuple[int, ...]) -> int:
        return rows.setdefault(seq, len(rows))

    for prompt, legal in zip(prompts, actions, strict=True):
        prompt = tuple(prompt)
        if not prompt:
            raise ValueError("cannot score an empty prompt")
        if all(len(a) == 1 for a in legal):
            row = row_of(prompt)
            for action in legal:
                row_r.append(row)
                pos_r.append(len(prompt) - 1)
                tok_r.append(action[0])
                act_r.append(action_index)
                action_index += 1
        else:
            for action in legal:
                if not action:
                    raise ValueError("cannot score an empty action")
                row = row_of(prompt + tuple(action))
                for i, token in enumerate(action):
                    row_r.append(row)
                    pos_r.append(len(prompt) - 1 + i)
                    tok_r.append(token)
                    act_r.append(action_index)
                action_index += 1
        offsets.append(action_index)
    max_len = max(len(seq) for seq in rows)
    tokens = np.full((len(rows), max_len), pad_id, dtype=np.int32)
    for seq, row in rows.items():
        tokens[row, : len(seq)] = seq
    as_int = lambda values: np.asarray(values, dtype=np.int32)  # noqa: E731
    return ScoringBatch(tokens, as_int(row_r), as_int(pos_r), as_int(tok_r), as_int(act_r), tuple(offsets))


def action_loglik(model, batch: ScoringBatch) -> mx.array:
    """Log-likelihood of every action sequence given its prompt, [total actions]; differentiable."""
    logits = model(mx.array(batch.tokens))
    logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    picked = logprobs[mx.array(batch.gather_row), mx.array(batch.gather_pos), mx.array(batch.gather_tok)]
    n_actions = batch.action_offsets[-1]
    # Sum token log-probs per action with a one-hot matmul (segment sum), which MLX differentiates.
    onehot = mx.array(batch.gather_action)[None, :] == mx.arange(n_actions)[:, None]
    return (onehot.astype(picked.dtype) * picked[None, :]).sum(axis=1)


def masked_log_softmax(loglik: mx.array, offsets: Sequence[int], temperature: float) -> mx.array:
    """Per decision, log-softmax over its legal actions of loglik / temperature, [total actions]."""
    scaled = loglik / temperature
    n = offsets[-1]
    segment = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    onehot = mx.array(segment)[None, :] == mx.arange(len(offsets) - 1)[:, None]  # [decisions, actions]
    masked = mx.where(onehot, scaled[None, :], -mx.inf)
    norm = mx.logsumexp(masked, axis=1)  # [decisions]
    return scaled - norm[mx.array(segment)] if n else scaled
