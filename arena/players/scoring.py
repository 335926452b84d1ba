"""Prefix-shared, head-only scoring of legal actions: each prompt encoded once, the output head only where read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx
import numpy as np

from arena.players import fused
from arena.players.batching import ScoringBatch
from arena.players.fused import fused_kernels, fused_math
from arena.players.head import head_matrix, output_head
from arena.players.hostmath import head_log_probs, host_kernels, host_math, log_normalisers
from arena.players.kvcache import PrefixCache, Stored, joined, rows_kv, stacked
from arena.players.levels import tail_states, trie_states

# ----------------------------------------------------------------------------------------------- the model side


def _prompt_states(model: Any, batch: ScoringBatch, stored: Sequence[Stored] = (), grouped: bool = False
                   ) -> tuple[mx.array, list[PrefixCache], mx.array | None]:
    """Each prompt's last hidden state, the caches its actions extend, and the tails' lengths (None: no tails);
    ``grouped``: the tails in groups of similar length (see arena.players.levels.tail_states)."""
    caches = None
    if batch.prompts.size:
        pad = mx.array(batch.prompt_pad)
        caches = [PrefixCache(-pad, pad, padded=bool(batch.prompt_pad.any())) for _ in model.layers]
        hidden = model.model(mx.array(batch.prompts), cache=caches)
        if not batch.tails.size:
            return hidden[:, -1], caches, None
    if stored:
        caches = joined(caches, stacked(stored, max(kv.shape[2] for kv in stored)))
    last, caches = tail_states(model, caches, batch.tails, batch.tail_stem, batch.tail_len, grouped)
    return last, caches, mx.array(batch.tail_len)


def action_states(model: Any, batch: ScoringBatch, stored: Sequence[Stored] = (), grouped: bool = False,
                  kept_rows: Sequence[int] = ()) -> tuple[mx.array, list[Stored]]:
    """The hidden states the output head reads, [H, hidden] (``batch.head_src`` order), differentiable; and the
    keys and values of the prompt rows ``kept_rows`` (each row's own tokens, ``Stored``), before the actions extend
    them (a game's next turn reuses them).

    ``stored``: the keys and values of ``batch.stored``'s stems, in order. ``grouped``: the prompts' tails in groups
    of similar length (scoring for play; training keeps one level, so the default's trained bytes stay what they
    were).
    """
    last, caches, lengths = _prompt_states(model, batch, stored, grouped)
    kept = rows_kv(caches, kept_rows, [prompt_positions(batch, caches, row) for row in kept_rows]) if kept_rows else []
    if not batch.trie.size:
        return last[mx.array(batch.head_src)], kept
    packed, where = trie_states(model, caches, lengths, batch.trie, batch.trie_depth, batch.trie_mask,
                                batch.trie_len)
    rows = last.shape[0]  # head_src counts trie states row-major after the rows' last states
    src = batch.head_src.astype(np.int64)
    node = np.maximum(src - rows, 0)
    src = np.where(src < rows, src, rows + where.reshape(-1)[node])
    return mx.concatenate([last, packed])[mx.array(src.astype(np.int32))], kept


def action_loglik(model: Any, batch: ScoringBatch, stored: Sequence[Stored] = (), grouped: bool = False) -> mx.array:
    """Log-likelihood of every action sequence given its prompt, [total actions]; differentiable."""
    return _head_loglik(model, action_states(model, batch, stored, grouped)[0], batch, mx.logsumexp)


def _head_loglik(model: Any, states: mx.array, batch: ScoringBatch, logsumexp: Callable[..., mx.array]) -> mx.array:
    """The output head at ``states``, normalised by ``logsumexp``, summed per action."""
    logits = output_head(model)(states).astype(mx.float32)
    logprobs = logits - logsumexp(logits, axis=-1, keepdims=True)
    picked = logprobs[mx.array(batch.gather_head), mx.array(batch.gather_tok)]
    return _summed(by_choice(picked, batch), batch)


def by_choice(picked: mx.array, batch: ScoringBatch) -> mx.array:
    """Scored tokens' log-probabilities, those of decisions scored by choice renormalised over the tokens their
    legal actions continue with at the same node (see ScoringBatch); differentiable; the rest as they are."""
    if not batch.choice_pick.size:
        return picked
    siblings = mx.concatenate([picked[mx.array(batch.choice_pick)], mx.array([-mx.inf], dtype=picked.dtype)])
    norm = mx.logsumexp(siblings[mx.array(batch.choice_table)], axis=1)
    return picked - mx.concatenate([norm, mx.zeros(1, picked.dtype)])[mx.array(batch.choice_group)]


def _summed(picked: mx.array, batch: ScoringBatch) -> mx.array:
    """Sum token log-probs per action: gather them into [actions, longest action] (a zero past each one's end)."""
    padded = mx.concatenate([picked, mx.zeros(1, picked.dtype)])[mx.array(_token_table(batch.gather_action))]
    return padded.sum(axis=1)


def inference_scores(model: Any, batch: ScoringBatch, stored: Sequence[Stored] = (),
                     kept_rows: Sequence[int] = ()) -> tuple[mx.array, list[Stored]]:
    """``action_loglik`` without gradients, and the prompt rows ``kept_rows``' keys and values (``action_states``):
    its exps on the host where that is faster (``host_math``), else by MLX's compiled kernels where the JIT
    vectorises them (``fused_math``: the same bits as MLX's library)."""
    if not host_math(model):
        if not fused_math():
            states, kept = action_states(model, batch, stored, grouped=True, kept_rows=kept_rows)
            return _head_loglik(model, states, batch, mx.logsumexp), kept
        with fused_kernels(model):
            states, kept = action_states(model, batch, stored, grouped=True, kept_rows=kept_rows)
        return _head_loglik(model, states, batch, fused.logsumexp), kept
    with host_kernels(model):
        states, kept = action_states(model, batch, stored, grouped=True, kept_rows=kept_rows)
    matrix = head_matrix(model)
    if matrix is not None and matrix[0].dtype == mx.float32:
        picked = head_log_probs(states, *matrix, batch.gather_head, batch.gather_tok)
    else:
        logits = output_head(model)(states).astype(mx.float32)
        mx.eval(logits)
        picked = np.asarray(logits)[batch.gather_head, batch.gather_tok] - log_normalisers(logits)[batch.gather_head]
    return _summed(by_choice(mx.array(picked.astype(np.float32)), batch), batch), kept


def inference_loglik(model: Any, batch: ScoringBatch, stored: Sequence[Stored] = ()) -> mx.array:
    """``inference_scores``' log-likelihoods alone."""
    return inference_scores(model, batch, stored)[0]


def prompt_positions(batch: ScoringBatch, caches: Sequence[PrefixCache], row: int) -> np.ndarray:
    """Where prompt row ``row``'s own tokens sit in the caches its actions extend (see ``action_states``)."""
    if not batch.tails.size and not batch.stored:
        width = batch.prompts.shape[1]
        return np.arange(batch.prompt_pad[row], width)
    width = caches[0].keys.shape[2] - batch.tails.shape[1]
    stem = batch.tail_stem[row]
    computed = batch.prompts.shape[0] if batch.prompts.size else 0
    stem_len = (batch.prompts.shape[1] - batch.prompt_pad[stem] if stem < computed
                else batch.stored[stem - computed][1])
    return np.concatenate([np.arange(width - stem_len, width), width + np.arange(batch.tail_len[row])])


def _token_table(action_of_token: np.ndarray) -> np.ndarray:
    """[actions, longest action] indices of each action's scored tokens (which are consecutive), padded with the
    index one past the last token."""
    counts = np.bincount(action_of_token)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    column = np.arange(counts.max(initial=1))[None, :]
    return np.where(column < counts[:, None], starts[:, None] + column, len(action_of_token)).astype(np.int32)


def masked_log_softmax(loglik: mx.array, offsets: Sequence[int], temperature: float,
                       logsumexp: Callable[..., mx.array] = mx.logsumexp) -> mx.array:
    """Per decision, log-softmax over its legal actions of loglik / temperature, [total actions] (``logsumexp``:
    MLX's, or ``fused.logsumexp`` for inference: see inference_log_softmax)."""
    scaled = loglik / temperature
    n = offsets[-1]
    segment = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    onehot = mx.array(segment)[None, :] == mx.arange(len(offsets) - 1)[:, None]  # [decisions, actions]
    masked = mx.where(onehot, scaled[None, :], -mx.inf)
    norm = logsumexp(masked, axis=1)  # [decisions]
    return scaled - norm[mx.array(segment)] if n else scaled


def inference_log_softmax(loglik: mx.array, offsets: Sequence[int], temperature: float) -> mx.array:
    """``masked_log_softmax`` for play: its logsumexp compiled where inference takes the compiled kernels."""
    return masked_log_softmax(loglik, offsets, temperature, fused.logsumexp if fused_math() else mx.logsumexp)


def legal_logp(model: Any, batch: ScoringBatch, temperature: float) -> mx.array:
    """Every legal action's log-probability under ``model``'s masked, tempered softmax, [total actions]; the
    training path (one tail level, differentiable), so a policy's targets and its fit read the same arithmetic."""
    return masked_log_softmax(action_loglik(model, batch), batch.action_offsets, temperature)


def per_decision(flat: np.ndarray, offsets: Sequence[int]) -> list[np.ndarray]:
    """``flat`` (one value per legal action, [total actions]) cut into one array per decision."""
    return [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
