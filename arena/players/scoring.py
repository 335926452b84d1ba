"""Prefix-shared, head-only scoring of legal actions: each prompt encoded once, the output head only where read."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

from arena.core.errors import ArenaError


@dataclass(frozen=True)
class ScoringBatch:
    """One pass: distinct prompts (left-padded), the multi-token actions' continuations, and what to read.

    Phase 1 runs the distinct prompts through the transformer body once, keeping their keys and values. Phase 2
    runs the actions' token trie as continuations of their prompt's cached keys and values, one token a level (each
    distinct action prefix once: Liar's Dice bids share "[Bid:" and their quantity). Prompts that share a long
    prefix (a game's rules text) share it too: the stems run first, each prompt's tail as their continuation. The
    output head is applied only at the hidden states that predict an
    action token -- the prompt's last position for every first token, a continuation position for the others --
    each distinct one once.
    """

    prompts: np.ndarray          # [S, Ls] int32, left-padded: the prompts, or their shared stems
    prompt_pad: np.ndarray       # [S] int32, left padding of each row
    tails: np.ndarray            # [P, Lt] int32, right-padded: each prompt after its stem (P = 0: no stems)
    tail_stem: np.ndarray        # [P] int32, the stem row each tail extends
    tail_len: np.ndarray         # [P] int32
    levels: tuple[np.ndarray, ...]   # level d: [N_d] int32, the d-th token of each distinct action prefix
    parents: tuple[np.ndarray, ...]  # level d: [N_d] int32, its row at level d - 1 (level 0: the prompt rows)
    head_src: np.ndarray         # [H] int32, index into [P last states] + [N_1 states] + [N_2 states] ...
    gather_head: np.ndarray      # per scored token: its head row,
    gather_tok: np.ndarray       # the token id it must predict,
    gather_action: np.ndarray    # and the action it belongs to
    action_offsets: tuple[int, ...]  # decision d owns actions [offsets[d], offsets[d+1])

    @property
    def tokens(self) -> int:  # token positions run through the body, padding included
        return int(self.prompts.size + self.tails.size + sum(level.size for level in self.levels))


class _Builder:
    """Accumulates decisions into one ScoringBatch, deduplicating prompts, continuations and head rows.

    A pass costs ``P * Lp + C * (Lp + Lc) + H * head_weight`` tokens: P padded prompt rows, C trie nodes
    (each holding a copy of its prompt's keys and values), and H head rows, each weighing as much as
    ``head_weight`` tokens (a vocabulary-sized row of log-probabilities; see ``head_weight``).
    """

    def __init__(self) -> None:
        self.prompts: dict[tuple[int, ...], int] = {}
        self.nodes: dict[tuple[int, tuple[int, ...]], int] = {}  # (prompt row, prefix) -> row in its level
        self.levels: list[list[tuple[int, int]]] = []  # per level: (parent row, token)
        self.heads: dict[tuple[int, tuple[int, ...]], int] = {}
        self.head_src: list[tuple[int, int]] = []  # (0, prompt row) or (level, row in the level)
        self.scored: list[tuple[int, int, int]] = []  # (head row, token, action)
        self.offsets = [0]
        self.lp = self.lc = 0

    def cost_with(self, prompt: tuple[int, ...], legal: Sequence[tuple[int, ...]], head_weight: int) -> int:
        """The pass's cost in tokens if this decision were added; nothing is changed."""
        row = self.prompts.get(prompt, -1)
        new_nodes = {a[:i] for a in legal for i in range(1, len(a)) if (row, a[:i]) not in self.nodes}
        new_heads = {a[:i] for a in legal for i in range(len(a)) if (row, a[:i]) not in self.heads}
        n_prompts = len(self.prompts) + (row < 0)
        n_nodes = len(self.nodes) + len(new_nodes)
        lp = max(self.lp, len(prompt))
        lc = max([self.lc, *map(len, new_nodes)])
        return n_prompts * lp + n_nodes * (lp + lc) + (len(self.heads) + len(new_heads)) * head_weight

    def add(self, prompt: tuple[int, ...], legal: Sequence[tuple[int, ...]]) -> None:
        row = self.prompts.setdefault(prompt, len(self.prompts))
        self.lp = max(self.lp, len(prompt))
        index = self.offsets[-1]
        for action in legal:
            for i, token in enumerate(action):
                key = (row, action[:i])
                if key not in self.heads:
                    self.heads[key] = len(self.head_src)
                    self.head_src.append((0, row) if i == 0 else (i, self._node(row, action[:i])))
                self.scored.append((self.heads[key], token, index))
            index += 1
        self.offsets.append(index)

    def _node(self, row: int, prefix: tuple[int, ...]) -> int:
        """The trie node feeding ``prefix``'s last token (its parent first), as a row of its level."""
        if (row, prefix) not in self.nodes:
            parent = row if len(prefix) == 1 else self._node(row, prefix[:-1])
            if len(self.levels) < len(prefix):
                self.levels.append([])
            self.nodes[row, prefix] = len(self.levels[len(prefix) - 1])
            self.levels[len(prefix) - 1].append((parent, prefix[-1]))
            self.lc = max(self.lc, len(prefix))
        return self.nodes[row, prefix]

    def build(self, pad_id: int) -> ScoringBatch:
        stems, tails, tail_stem = _stems(list(self.prompts))
        prompts, pad = _left_padded(stems, pad_id)
        tail_rows, tail_len = _right_padded(tails, pad_id)
        base = np.cumsum([len(self.prompts)] + [len(level) for level in self.levels])
        src = [arg if level == 0 else base[level - 1] + arg for level, arg in self.head_src]
        as_int = lambda values: np.asarray(values, dtype=np.int32).reshape(-1)  # noqa: E731
        head, tok, act = (as_int([s[k] for s in self.scored]) for k in range(3))
        levels = tuple(as_int([t for _, t in level]) for level in self.levels)
        parents = tuple(as_int([p for p, _ in level]) for level in self.levels)
        return ScoringBatch(prompts, pad, tail_rows, as_int(tail_stem), tail_len, levels, parents, as_int(src),
                            head, tok, act, tuple(self.offsets))


MIN_STEM = 16  # shared prefixes shorter than this are recomputed per prompt


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _stems(prompts: list[tuple[int, ...]]) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[int]]:
    """Split prompts into shared stems and per-prompt tails (each tail >= 1 token), or (prompts, [], []) when that
    saves no padded tokens. Groups are runs of the sorted prompts, so the split depends only
    on the set of prompts."""
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
    if padded >= len(prompts) * max(map(len, prompts)):  # stems that save no padded tokens are not worth a level
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
                 head_weight: int, key: str, pad_id: int = 0) -> Iterator[tuple[int, int, ScoringBatch]]:
    """Consecutive decisions [start, end) in passes of at most ``max_tokens`` (see _Builder); yields each pass.

    The split depends only on the decisions and the budget, so the same inputs always give the same passes.
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
        builder.add(prompt, legal)
    if len(prompts) > start:
        yield start, len(prompts), builder.build(pad_id)


# ----------------------------------------------------------------------------------------------- the model side


class PrefixCache:
    """One layer's keys and values for a batch of rows, in the interface mlx-lm's attention layers call.

    The first level is left-padded (``pad``): pad positions attend only to earlier pads, so no softmax is empty, and
    real positions never see pads. A continuation level (``select``) attends to the cached keys its row may see
    (``valid``) and causally to its own tokens. ``offset`` is each row's next position, so rotary embeddings
    match an unpadded run.
    """

    def __init__(self, pos: mx.array, pad: mx.array | None = None, valid: mx.array | None = None,
                 keys: mx.array | None = None, values: mx.array | None = None, padded: bool = True) -> None:
        self.pos, self.pad, self.valid, self.keys, self.values, self.padded = pos, pad, valid, keys, values, padded

    offset = property(lambda self: self.pos)

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        if self.keys is not None:
            keys = mx.concatenate([self.keys, keys], axis=2)
            values = mx.concatenate([self.values, values], axis=2)
        self.keys, self.values = keys, values
        return keys, values

    def make_mask(self, n: int, return_array: bool = False, window_size: int | None = None) -> Any:
        if window_size is not None:
            raise ArenaError("arena's prefix-shared scoring does not support sliding-window attention models")
        causal = mx.arange(n)[:, None] >= mx.arange(n)[None]
        if self.valid is not None:
            rows, cached = self.valid.shape
            seen = mx.broadcast_to(self.valid[:, None, None, :], (rows, 1, n, cached))
            return mx.concatenate([seen, mx.broadcast_to(causal, (rows, 1, n, n))], axis=-1)
        if not self.padded and not return_array:
            return "causal"
        pad = self.pad[:, None, None, None]
        query, key = mx.arange(n)[:, None], mx.arange(n)[None]
        return causal & ((key >= pad) | (query < pad))

    def select(self, rows: mx.array, lengths: mx.array | None = None) -> PrefixCache:
        """The cache rows ``rows`` extend (repeats allowed), after this level's tokens (``lengths`` real tokens per
        row of a right-padded level; None for the left-padded first level)."""
        total = self.keys.shape[2]
        if self.valid is None:
            valid, pos = mx.arange(total)[None] >= self.pad[:, None], total - self.pad
        else:
            new = total - self.valid.shape[1]
            valid = mx.concatenate([self.valid, mx.arange(new)[None] < lengths[:, None]], axis=1)
            pos = self.pos + lengths
        return PrefixCache(pos[rows], valid=valid[rows], keys=self.keys[rows], values=self.values[rows])


@dataclass(frozen=True)
class ModelShape:
    """What a pass's memory depends on: layers, kv heads, head dim, hidden and MLP sizes, vocabulary, dtype."""

    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    dtype_bytes: int

    def token_bytes(self, training: bool = False) -> int:
        """Bytes one token holds in a pass: its keys and values in every layer plus a few hidden-size activations
        (in training, every layer's activations, kept for the backward pass)."""
        kv = self.layers * 2 * self.kv_heads * self.head_dim * self.dtype_bytes
        live = self.layers * (8 * self.hidden + 3 * self.intermediate) if training else 4 * self.hidden
        return kv + live * self.dtype_bytes

    @property
    def head_weight(self) -> int:
        """Tokens one head row counts as: its float32 logits and log-probabilities over the vocabulary."""
        return max(1, math.ceil(2 * 4 * self.vocab / self.token_bytes()))


def model_shape(model: Any) -> ModelShape:
    """The shapes of an mlx-lm model, from its args (qwen2/qwen3/llama-style field names)."""
    from mlx.utils import tree_flatten

    args = getattr(model, "args", None)
    try:
        hidden, heads = args.hidden_size, args.num_attention_heads
        kv_heads = getattr(args, "num_key_value_heads", None) or heads
        head_dim = getattr(args, "head_dim", None) or hidden // heads
        shape = (len(model.layers), hidden, kv_heads, head_dim, getattr(args, "intermediate_size", 4 * hidden),
                 args.vocab_size)
    except AttributeError as error:
        raise ArenaError(f"cannot read the shapes of model type {getattr(model, 'model_type', '?')} ({error}): "
                         "arena scores mlx-lm models whose args name hidden_size, num_attention_heads and vocab_size"
                         ) from error
    floats = [v.dtype for _, v in tree_flatten(model.parameters()) if mx.issubdtype(v.dtype, mx.floating)]
    return ModelShape(*shape, floats[0].size if floats else 4)


def budget_note(shape: ModelShape, max_tokens: int, key: str, training: bool = False) -> str:
    """One line: the memory a scoring budget implies for this model."""
    per_token = shape.token_bytes(training)
    return (f"{key} = {max_tokens} tokens -> up to ~{max_tokens * per_token / 2**20:,.0f} MiB a pass "
            f"({per_token / 1024:.1f} KiB a token: {shape.layers} layers x {shape.kv_heads} kv heads x "
            f"{shape.head_dim} head dim, {shape.dtype_bytes}-byte {'activations kept' if training else 'values'}; "
            f"a scored position's {shape.vocab:,}-token log-probs count as {shape.head_weight} tokens)")


def bound_buffer_cache(limit: int) -> None:
    """Cap MLX's cache of freed buffers at ``limit`` bytes (it defaults to the memory limit, and passes of ever-new
    shapes would fill it); never raise a lower cap someone else set."""
    previous = mx.set_cache_limit(limit)
    if previous < limit:
        mx.set_cache_limit(previous)


def output_head(model: Any) -> Callable[[mx.array], mx.array]:
    """The model's own output head (hidden states -> logits), as its ``__call__`` applies it."""
    body, args = getattr(model, "model", None), getattr(model, "args", None)
    tied = getattr(args, "tie_word_embeddings", None)
    lm_head = getattr(model, "lm_head", None) if "lm_head" in model else None
    if lm_head is not None and tied is not True:
        return lm_head
    embed = getattr(body, "embed_tokens", None) if body is not None and "embed_tokens" in body else None
    if embed is not None and hasattr(embed, "as_linear") and (tied or lm_head is None):
        return embed.as_linear
    raise ArenaError(f"cannot find the output head of model type {getattr(model, 'model_type', type(model).__name__)}"
                     " (no lm_head, no tied model.embed_tokens): arena scores mlx-lm models shaped like qwen2/qwen3")


def check_head(model: Any) -> None:
    """Fail clearly unless head(body(x)) equals the model's own logits (e.g. a model that rescales its logits)."""
    ids = mx.array([[0, 1]], dtype=mx.int32)
    full = model(ids)
    zero = mx.zeros(1, mx.int32)
    ours = output_head(model)(model.model(ids, cache=[PrefixCache(zero, zero, padded=False) for _ in model.layers]))
    gap = mx.abs(full.astype(mx.float32) - ours.astype(mx.float32)).max().item()
    if not math.isfinite(gap) or gap > 1e-3 * max(1.0, mx.abs(full).max().item()):
        raise ArenaError(f"model type {getattr(model, 'model_type', '?')} does not apply its output head as "
                         f"lm_head(model(x)) or embed_tokens.as_linear(model(x)) (max gap {gap:.3g}): "
                         "arena's head-only scoring would be wrong for it")


def _prompt_states(model: Any, batch: ScoringBatch) -> tuple[mx.array, list[PrefixCache], mx.array | None]:
    """Each prompt's last hidden state, the caches its continuations extend, and the tails' lengths (None: no
    stems)."""
    pad = mx.array(batch.prompt_pad)
    caches = [PrefixCache(-pad, pad, padded=bool(batch.prompt_pad.any())) for _ in model.layers]
    hidden = model.model(mx.array(batch.prompts), cache=caches)
    if not batch.tails.size:
        return hidden[:, -1], caches, None
    stems = mx.array(batch.tail_stem)
    caches = [c.select(stems) for c in caches]
    hidden = model.model(mx.array(batch.tails), cache=caches)
    lengths = mx.array(batch.tail_len)
    return hidden[mx.arange(hidden.shape[0]), lengths - 1], caches, lengths


def action_loglik(model: Any, batch: ScoringBatch) -> mx.array:
    """Log-likelihood of every action sequence given its prompt, [total actions]; differentiable."""
    last, caches, lengths = _prompt_states(model, batch)
    states = [last]
    for tokens, parents in zip(batch.levels, batch.parents, strict=True):
        rows = mx.array(parents)
        caches = [c.select(rows, lengths) for c in caches]
        states.append(model.model(mx.array(tokens)[:, None], cache=caches)[:, 0])
        lengths = mx.ones(len(tokens), dtype=mx.int32)
    picked_states = (mx.concatenate(states) if len(states) > 1 else last)[mx.array(batch.head_src)]
    logits = output_head(model)(picked_states).astype(mx.float32)
    logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    picked = logprobs[mx.array(batch.gather_head), mx.array(batch.gather_tok)]
    # Sum token log-probs per action: gather them into [actions, longest action] (a zero past each one's end).
    padded = mx.concatenate([picked, mx.zeros(1, picked.dtype)])[mx.array(_token_table(batch.gather_action))]
    return padded.sum(axis=1)


def _token_table(action_of_token: np.ndarray) -> np.ndarray:
    """[actions, longest action] indices of each action's scored tokens (which are consecutive), padded with the
    index one past the last token."""
    counts = np.bincount(action_of_token)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    column = np.arange(counts.max(initial=1))[None, :]
    return np.where(column < counts[:, None], starts[:, None] + column, len(action_of_token)).astype(np.int32)


def masked_log_softmax(loglik: mx.array, offsets: Sequence[int], temperature: float) -> mx.array:
    """Per decision, log-softmax over its legal actions of loglik / temperature, [total actions]."""
    scaled = loglik / temperature
    n = offsets[-1]
    segment = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    onehot = mx.array(segment)[None, :] == mx.arange(len(offsets) - 1)[:, None]  # [decisions, actions]
    masked = mx.where(onehot, scaled[None, :], -mx.inf)
    norm = mx.logsumexp(masked, axis=1)  # [decisions]
    return scaled - norm[mx.array(segment)] if n else scaled
