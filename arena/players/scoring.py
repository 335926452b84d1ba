"""Prefix-shared, head-only scoring of legal actions: each prompt encoded once, the output head only where read."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

from arena.core.errors import ArenaError
from arena.players import fused
from arena.players.fused import fused_kernels, fused_math
from arena.players.head import head_matrix, output_head
from arena.players.hostmath import head_log_probs, host_kernels, host_math, log_normalisers
from arena.players.kvcache import KV, PrefixCache, joined, stacked
from arena.players.levels import tail_states, trie_states


@dataclass(frozen=True)
class ScoringBatch:
    """One pass: distinct prompts (left-padded), each prompt's action trie, and what to read.

    Phase 1 runs the distinct prompts through the transformer body once, keeping their keys and values. Prompts
    that share a long prefix (a game's rules text) share it: the stems run first, each prompt's tail as their
    continuation; a stem may instead come from the cross-turn store (``stored``: a game's previous prompt, see
    arena.players.kvcache.TurnCache). Phase 2 runs every prompt's multi-token actions as one packed row over its
    cached keys and values: each distinct action prefix once (Liar's Dice bids share "[Bid:" and their quantity),
    each token at its own position, seeing its ancestors only. Tails and tries run rows of similar width together
    (see arena.players.levels). The output head is applied only at the hidden states that predict an action token
    -- the prompt's last position for every first token, a trie position for the others -- each distinct one once.
    """

    prompts: np.ndarray          # [S, Ls] int32, left-padded: the prompts, or their computed stems
    prompt_pad: np.ndarray       # [S] int32, left padding of each row
    tails: np.ndarray            # [P, Lt] int32, right-padded: each prompt after its stem (P = 0: no stems)
    tail_stem: np.ndarray        # [P] int32, the stem each tail extends: a computed row, then the stored ones
    tail_len: np.ndarray         # [P] int32
    trie: np.ndarray             # [P, N] int32, right-padded: each prompt's distinct action-prefix tokens
    trie_depth: np.ndarray       # [P, N] int32, each one's position after the prompt's last (0: right after)
    trie_mask: np.ndarray        # [P, N, N] bool, which of the row's trie tokens each one sees (its ancestors, itself)
    trie_len: np.ndarray         # [P] int32, each row's real trie tokens (the rest of its N is padding)
    head_src: np.ndarray         # [H] int32, index into [P last states] + [P x N trie states, row-major]
    gather_head: np.ndarray      # per scored token: its head row,
    gather_tok: np.ndarray       # the token id it must predict,
    gather_action: np.ndarray    # and the action it belongs to
    action_offsets: tuple[int, ...]  # decision d owns actions [offsets[d], offsets[d+1])
    stored: tuple[tuple[int, int], ...] = ()  # per stored stem: (decision whose stream holds it, its tokens)

    @property
    def tokens(self) -> int:  # token positions run through the body, padding included
        return int(self.prompts.size + self.tails.size + self.trie.size)

    @property
    def prompt_rows(self) -> int:
        return int(self.tails.shape[0] if self.tails.size or self.stored else self.prompts.shape[0])


class _Builder:
    """Accumulates decisions into one ScoringBatch, deduplicating prompts, trie nodes and head rows.

    A pass costs ``P * Lp + [P * (Lp + N)] + H * head_weight`` tokens: P padded prompt rows, their tries (when any
    action has more than one token: N nodes a row at most, over a copy of the prompt's keys and values), and H
    head rows, each weighing as much as ``head_weight`` tokens (a vocabulary-sized row of log-probabilities).
    """

    def __init__(self) -> None:
        self.prompts: dict[tuple[int, ...], int] = {}
        self.reuse: dict[int, tuple[int, int]] = {}  # prompt row -> (stored tokens, decision that holds them)
        self.nodes: dict[tuple[int, tuple[int, ...]], int] = {}  # (prompt row, prefix) -> its column in the row
        self.rows: list[list[tuple[int, int, int]]] = []  # per prompt row: (parent column or -1, token, depth)
        self.heads: dict[tuple[int, tuple[int, ...]], int] = {}
        self.head_src: list[tuple[int, int]] = []  # (prompt row, -1: its last state; else its trie column)
        self.scored: list[tuple[int, int, int]] = []  # (head row, token, action)
        self.offsets = [0]
        self.lp = self.width = 0
        self.decisions = 0

    def cost_with(self, prompt: tuple[int, ...], legal: Sequence[tuple[int, ...]], head_weight: int) -> int:
        """The pass's cost in tokens if this decision were added; nothing is changed."""
        row = self.prompts.get(prompt, -1)
        new_nodes = {a[:i] for a in legal for i in range(1, len(a)) if (row, a[:i]) not in self.nodes}
        new_heads = {a[:i] for a in legal for i in range(len(a)) if (row, a[:i]) not in self.heads}
        n_prompts = len(self.prompts) + (row < 0)
        lp = max(self.lp, len(prompt))
        width = max(self.width, len(new_nodes) + (len(self.rows[row]) if row >= 0 else 0))
        trie = n_prompts * (lp + width) if width else 0
        return n_prompts * lp + trie + (len(self.heads) + len(new_heads)) * head_weight

    def add(self, prompt: tuple[int, ...], legal: Sequence[tuple[int, ...]], reuse: int = 0) -> None:
        row = self.prompts.setdefault(prompt, len(self.prompts))
        if row == len(self.rows):
            self.rows.append([])
        if reuse > self.reuse.get(row, (0, 0))[0]:
            self.reuse[row] = (reuse, self.decisions)
        self.decisions += 1
        self.lp = max(self.lp, len(prompt))
        index = self.offsets[-1]
        for action in legal:
            for i, token in enumerate(action):
                key = (row, action[:i])
                if key not in self.heads:
                    self.heads[key] = len(self.head_src)
                    self.head_src.append((row, -1 if i == 0 else self._node(row, action[:i])))
                self.scored.append((self.heads[key], token, index))
            index += 1
        self.offsets.append(index)

    def _node(self, row: int, prefix: tuple[int, ...]) -> int:
        """The trie column holding ``prefix``'s last token (its parent first)."""
        if (row, prefix) not in self.nodes:
            parent = -1 if len(prefix) == 1 else self._node(row, prefix[:-1])
            self.nodes[row, prefix] = len(self.rows[row])
            self.rows[row].append((parent, prefix[-1], len(prefix) - 1))
            self.width = max(self.width, len(self.rows[row]))
        return self.nodes[row, prefix]

    def build(self, pad_id: int) -> ScoringBatch:
        prompts = list(self.prompts)
        if any(len(prompts[i]) < 2 for i in range(len(prompts)) if i not in self.reuse):
            self.reuse = {}  # a one-token prompt has no stem to run beside stored ones: compute them all
        fresh = [i for i in range(len(prompts)) if i not in self.reuse]
        stems, tails, tail_stem = _stems([prompts[i] for i in fresh], force=bool(self.reuse))
        if self.reuse:  # stored stems follow the computed ones; every prompt gets a tail
            order = sorted(self.reuse)
            all_tails, all_stem = [()] * len(prompts), [0] * len(prompts)
            for i, tail, stem in zip(fresh, tails, tail_stem, strict=True):
                all_tails[i], all_stem[i] = tail, stem
            for j, i in enumerate(order):
                all_tails[i], all_stem[i] = prompts[i][self.reuse[i][0]:], len(stems) + j
            tails, tail_stem = all_tails, all_stem
        stored = tuple((self.reuse[i][1], self.reuse[i][0]) for i in sorted(self.reuse))
        prompt_rows, pad = _left_padded(stems, pad_id) if stems else (np.zeros((0, 0), np.int32), np.zeros(0, np.int32))
        tail_rows, tail_len = _right_padded(tails, pad_id)
        trie, depth, mask = self._trie(pad_id)
        widths = np.asarray([len(nodes) for nodes in self.rows], dtype=np.int32)
        src = [r if col < 0 else len(prompts) + r * trie.shape[1] + col for r, col in self.head_src]
        as_int = lambda values: np.asarray(values, dtype=np.int32).reshape(-1)  # noqa: E731
        head, tok, act = (as_int([s[k] for s in self.scored]) for k in range(3))
        return ScoringBatch(prompt_rows, pad, tail_rows, as_int(tail_stem), tail_len, trie, depth, mask,
                            widths, as_int(src), head, tok, act, tuple(self.offsets), stored)

    def _trie(self, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each prompt row's trie as [P, N] tokens and depths and its [P, N, N] ancestor mask (none: N = 0)."""
        n = self.width
        tokens = np.full((len(self.rows), n), pad_id, dtype=np.int32)
        depth = np.zeros((len(self.rows), n), dtype=np.int32)
        mask = np.zeros((len(self.rows), n, n), dtype=bool)
        for r, nodes in enumerate(self.rows if n else ()):
            for col, (parent, token, d) in enumerate(nodes):
                tokens[r, col], depth[r, col] = token, d
                mask[r, col] = mask[r, parent] if parent >= 0 else False
                mask[r, col, col] = True
            mask[r, np.arange(len(nodes), n), np.arange(len(nodes), n)] = True  # padding sees itself
        return tokens, depth, mask


MIN_STEM = 16  # shared prefixes shorter than this are recomputed per prompt


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _stems(prompts: list[tuple[int, ...]], force: bool = False
           ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[int]]:
    """Split prompts into shared stems and per-prompt tails (each tail >= 1 token), or (prompts, [], []) when that
    saves no padded tokens (unless ``force``: stored stems need every prompt split). Groups are runs of the sorted
    prompts, so the split depends only on the set of prompts."""
    if not prompts:
        return [], [], []
    order = sorted(range(len(prompts)), key=prompts.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups:
            shared = _common(prompts[groups[-1][0]], prompts[i])
            if shared >= MIN_STEM and (len(groups[-1]) == 1 or shared >= _group_stem(prompts, groups[-1]) // 2):
                groups[-1].append(i)
                continue
        groups.append([i])
    stems, tails, tail_stem = [], [()] * len(prompts), [0] * len(prompts)
    for group in groups:  # a lone prompt's stem is all but its last token
        cut = _group_stem(prompts, group) if len(group) > 1 else len(prompts[group[0]]) - 1
        for i in group:
            tails[i], tail_stem[i] = prompts[i][cut:], len(stems)
        stems.append(prompts[group[0]][:cut])
    padded = len(stems) * max(map(len, stems)) + len(tails) * max(map(len, tails))
    if not force and padded >= len(prompts) * max(map(len, prompts)):  # stems saving no padded tokens: not worth it
        return prompts, [], []
    return stems, tails, tail_stem


def _group_stem(prompts: list[tuple[int, ...]], group: list[int]) -> int:
    """The group's shared prefix, leaving every prompt at least one token of its own."""
    first, last = prompts[group[0]], prompts[group[-1]]  # sorted: the ends share the least
    return min(_common(first, last), *(len(prompts[i]) - 1 for i in group))


def _left_padded(rows: list[tuple[int, ...]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    width = max(map(len, rows))
    out = np.full((len(rows), width), pad_id, dtype=np.int32)
    pad = np.zeros(len(rows), dtype=np.int32)
    for i, seq in enumerate(rows):
        out[i, width - len(seq):] = seq
        pad[i] = width - len(seq)
    return out, pad


def _right_padded(rows: list[tuple[int, ...]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    out = np.full((len(rows), max(map(len, rows), default=0)), pad_id, dtype=np.int32)
    for i, seq in enumerate(rows):
        out[i, : len(seq)] = seq
    return out, np.asarray(list(map(len, rows)), dtype=np.int32)


def _checked(prompt: Sequence[int], legal: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    if not prompt:
        raise ValueError("cannot score an empty prompt")
    if any(not action for action in legal):
        raise ValueError("cannot score an empty action")
    return tuple(prompt), [tuple(action) for action in legal]


def build_batch(prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[Sequence[int]]],
                pad_id: int = 0) -> ScoringBatch:
    """Every decision in one pass, whatever its size (see ScoringBatch)."""
    builder = _Builder()
    for prompt, legal in zip(prompts, actions, strict=True):
        builder.add(*_checked(prompt, legal))
    return builder.build(pad_id)


def pack_batches(prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[Sequence[int]]], max_tokens: int,
                 head_weight: int, key: str, pad_id: int = 0, reuse: Sequence[int] | None = None
                 ) -> Iterator[tuple[int, int, ScoringBatch]]:
    """Consecutive decisions [start, end) in passes of at most ``max_tokens`` (see _Builder); yields each pass.

    ``reuse[d]``: how many leading tokens of decision d's prompt the cross-turn store holds (0: none); a pass
    counts those prompts at full length, so the split depends only on the decisions and the budget.
    """
    builder, start = _Builder(), 0
    for index, (prompt, legal) in enumerate(zip(prompts, actions, strict=True)):
        prompt, legal = _checked(prompt, legal)
        if builder.cost_with(prompt, legal, head_weight) > max_tokens and index > start:
            yield start, index, builder.build(pad_id)
            builder, start = _Builder(), index
        alone = builder.cost_with(prompt, legal, head_weight)
        if alone > max_tokens:
            raise ArenaError(
                f"one decision needs {alone} scoring tokens (a {len(prompt)}-token prompt and {len(legal)} legal "
                f"actions of up to {max(map(len, legal))} tokens, each scored position of the output head counting "
                f"{head_weight}), over {key} = {max_tokens}: raise {key} to at least {alone}")
        builder.add(prompt, legal, reuse[index] if reuse is not None else 0)
    if len(prompts) > start:
        yield start, len(prompts), builder.build(pad_id)


# ----------------------------------------------------------------------------------------------- the model side


def _prompt_states(model: Any, batch: ScoringBatch, stored: Sequence[KV] = (), grouped: bool = False
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
        caches = joined(caches, stacked(stored, max(kv[0][0].shape[2] for kv in stored)))
    last, caches = tail_states(model, caches, batch.tails, batch.tail_stem, batch.tail_len, grouped)
    return last, caches, mx.array(batch.tail_len)


def action_states(model: Any, batch: ScoringBatch, stored: Sequence[KV] = (),
                  keep: Callable[[list[PrefixCache], mx.array | None], None] | None = None,
                  grouped: bool = False) -> mx.array:
    """The hidden states the output head reads, [H, hidden] (``batch.head_src`` order); differentiable.

    ``stored``: the keys and values of ``batch.stored``'s stems, in order. ``keep(caches, lengths)``, if given,
    sees the prompts' caches before the actions extend them (to store them for the game's next turn). ``grouped``:
    the prompts' tails in groups of similar length (scoring for play; training keeps one level, so the default's
    trained bytes stay what they were).
    """
    last, caches, lengths = _prompt_states(model, batch, stored, grouped)
    if keep is not None:
        keep(caches, lengths)
    if not batch.trie.size:
        return last[mx.array(batch.head_src)]
    packed, where = trie_states(model, caches, lengths, batch.trie, batch.trie_depth, batch.trie_mask,
                                batch.trie_len)
    rows = last.shape[0]  # head_src counts trie states row-major after the rows' last states
    src = batch.head_src.astype(np.int64)
    node = np.maximum(src - rows, 0)
    src = np.where(src < rows, src, rows + where.reshape(-1)[node])
    return mx.concatenate([last, packed])[mx.array(src.astype(np.int32))]


def action_loglik(model: Any, batch: ScoringBatch, stored: Sequence[KV] = (),
                  keep: Callable[[list[PrefixCache], mx.array | None], None] | None = None,
                  grouped: bool = False) -> mx.array:
    """Log-likelihood of every action sequence given its prompt, [total actions]; differentiable."""
    return _head_loglik(model, action_states(model, batch, stored, keep, grouped), batch, mx.logsumexp)


def _head_loglik(model: Any, states: mx.array, batch: ScoringBatch, logsumexp: Callable[..., mx.array]) -> mx.array:
    """The output head at ``states``, normalised by ``logsumexp``, summed per action."""
    logits = output_head(model)(states).astype(mx.float32)
    logprobs = logits - logsumexp(logits, axis=-1, keepdims=True)
    picked = logprobs[mx.array(batch.gather_head), mx.array(batch.gather_tok)]
    return _summed(picked, batch)


def _summed(picked: mx.array, batch: ScoringBatch) -> mx.array:
    """Sum token log-probs per action: gather them into [actions, longest action] (a zero past each one's end)."""
    padded = mx.concatenate([picked, mx.zeros(1, picked.dtype)])[mx.array(_token_table(batch.gather_action))]
    return padded.sum(axis=1)


def inference_loglik(model: Any, batch: ScoringBatch, stored: Sequence[KV] = (),
                     keep: Callable[[list[PrefixCache], mx.array | None], None] | None = None) -> mx.array:
    """``action_loglik`` without gradients: its exps on the host where that is faster (``host_math``), else by MLX's
    compiled kernels where the JIT vectorises them (``fused_math``: the same bits as MLX's library)."""
    if not host_math(model):
        if not fused_math():
            return action_loglik(model, batch, stored, keep, grouped=True)
        with fused_kernels(model):
            states = action_states(model, batch, stored, keep, grouped=True)
        return _head_loglik(model, states, batch, fused.logsumexp)
    with host_kernels(model):
        states = action_states(model, batch, stored, keep, grouped=True)
    matrix = head_matrix(model)
    if matrix is not None and matrix[0].dtype == mx.float32:
        picked = head_log_probs(states, *matrix, batch.gather_head, batch.gather_tok)
    else:
        logits = output_head(model)(states).astype(mx.float32)
        mx.eval(logits)
        picked = np.asarray(logits)[batch.gather_head, batch.gather_tok] - log_normalisers(logits)[batch.gather_head]
    return _summed(mx.array(picked.astype(np.float32)), batch)


def prompt_positions(batch: ScoringBatch, caches: Sequence[PrefixCache], row: int) -> np.ndarray:
    """Where prompt row ``row``'s own tokens sit in the caches ``action_loglik`` hands to ``keep``."""
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
