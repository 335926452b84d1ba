"""Keys and values for scoring: a pass's per-layer caches (padded rows, action tries) and the cross-turn store."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.base import create_causal_mask

from arena.core.errors import ArenaError

# One prompt's keys and values at every layer as one array, [2 x layers, kv heads, tokens, head dim]: the layers' keys,
# then their values. One array a prompt, not two a layer: keeping and restoring prompts costs an MLX operation each
# (64 compact Liar's Dice prompts a pass: 64 copies, not 512 gathers).
Stored = mx.array


def bound_buffer_cache(limit: int) -> None:
    """Cap MLX's cache of freed buffers at ``limit`` bytes (it defaults to the memory limit, and passes of ever-new
    shapes would fill it); never raise a lower cap someone else set."""
    previous = mx.set_cache_limit(limit)
    if previous < limit:
        mx.set_cache_limit(previous)


class PrefixCache:
    """One layer's keys and values for a batch of rows, in the interface mlx-lm's attention layers call.

    The first level is left-padded (``pad``): pad positions attend only to earlier pads, so no softmax is empty, and
    real positions never see pads. A continuation level (``select``) attends to the cached keys its row may see
    (``valid``) and causally to its own tokens; a trie level (``tree``) to the cached keys and to its own tokens'
    ancestors (``tree_mask``), each token at its own absolute position. ``offset`` is each row's next position
    ([rows]), or each token's position ([rows, tokens], a trie level), so rotary embeddings match an unpadded run.
    """

    def __init__(self, pos: mx.array, pad: mx.array | None = None, valid: mx.array | None = None,
                 keys: mx.array | None = None, values: mx.array | None = None, padded: bool = True,
                 tree_mask: mx.array | None = None) -> None:
        self.pos, self.pad, self.valid, self.keys, self.values, self.padded = pos, pad, valid, keys, values, padded
        self.tree_mask = tree_mask

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
        own = self.tree_mask[:, None] if self.tree_mask is not None else create_causal_mask(n)
        if self.valid is not None:
            rows, cached = self.valid.shape
            seen = mx.broadcast_to(self.valid[:, None, None, :], (rows, 1, n, cached))
            return mx.concatenate([seen, mx.broadcast_to(own, (rows, 1, n, n))], axis=-1)
        if not self.padded and not return_array:
            return "causal"
        pad = self.pad[:, None, None, None]
        query, key = mx.arange(n)[:, None], mx.arange(n)[None]
        return own & ((key >= pad) | (query < pad))

    def visible(self, lengths: mx.array | None = None) -> tuple[mx.array, mx.array]:
        """After this level's tokens: which cached keys each row may see [rows, keys], and its next position."""
        total = self.keys.shape[2]
        if self.valid is None:
            return mx.arange(total)[None] >= self.pad[:, None], total - self.pad
        new = total - self.valid.shape[1]
        return mx.concatenate([self.valid, mx.arange(new)[None] < lengths[:, None]], axis=1), self.pos + lengths

    def select(self, rows: mx.array, lengths: mx.array | None = None) -> PrefixCache:
        """The cache rows ``rows`` extend (repeats allowed), after this level's tokens (``lengths`` real tokens per
        row of a right-padded level; None for the left-padded first level)."""
        valid, pos = self.visible(lengths)
        return PrefixCache(pos[rows], valid=valid[rows], keys=self.keys[rows], values=self.values[rows])

    def tree(self, lengths: mx.array | None, depth: mx.array, mask: mx.array,
             rows: mx.array | None = None) -> PrefixCache:
        """Each row's action trie as one packed level over this cache (all rows: no copy of it; else the rows
        ``rows``): token j of row r sits at position (the row's next) + ``depth[r, j]`` and sees the row's cached
        keys and ``mask[r, j]``."""
        valid, pos = self.visible(lengths)
        keys, values = self.keys, self.values
        if rows is not None:
            valid, pos, keys, values = valid[rows], pos[rows], keys[rows], values[rows]
        return PrefixCache(pos[:, None] + depth, valid=valid, keys=keys, values=values, tree_mask=mask)


def stacked(rows: Sequence[Stored], pad_to: int) -> list[PrefixCache]:
    """Stored prefixes as a left-padded first level (zeros, never attended to) of ``pad_to`` positions."""
    padded = mx.stack([mx.pad(kv, [(0, 0), (0, 0), (pad_to - kv.shape[2], 0), (0, 0)]) for kv in rows], axis=1)
    pad = mx.array([pad_to - kv.shape[2] for kv in rows], dtype=mx.int32)
    layers = rows[0].shape[0] // 2
    return [PrefixCache(-pad, pad, keys=padded[layer], values=padded[layers + layer]) for layer in range(layers)]


def joined(first: list[PrefixCache] | None, second: list[PrefixCache] | None) -> list[PrefixCache]:
    """Two left-padded first levels as one (rows of ``first``, then ``second``), padded to the wider."""
    if first is None or second is None:
        return first if second is None else second
    width = max(first[0].keys.shape[2], second[0].keys.shape[2])
    out = []
    for a, b in zip(first, second, strict=True):
        grow = [width - a.keys.shape[2], width - b.keys.shape[2]]
        keys = [mx.pad(c.keys, [(0, 0), (0, 0), (g, 0), (0, 0)]) for c, g in zip((a, b), grow, strict=True)]
        values = [mx.pad(c.values, [(0, 0), (0, 0), (g, 0), (0, 0)]) for c, g in zip((a, b), grow, strict=True)]
        pad = mx.concatenate([a.pad + grow[0], b.pad + grow[1]])
        out.append(PrefixCache(-pad, pad, keys=mx.concatenate(keys), values=mx.concatenate(values)))
    return out


class _PerTokenRope(nn.Module):
    """A model's own rotary embedding, applied at one position per token when given a [rows, tokens] offset."""

    def __init__(self, rope: Any) -> None:
        super().__init__()
        self.inner = rope

    def __call__(self, x: mx.array, offset: Any = 0) -> mx.array:
        if not (isinstance(offset, mx.array) and offset.ndim == 2) or getattr(self.inner, "per_token", False):
            return self.inner(x, offset=offset)
        rows, heads, n, dim = x.shape  # each token its own batch row, so its offset is its position
        flat = x.transpose(0, 2, 1, 3).reshape(rows * n, heads, 1, dim)
        return self.inner(flat, offset=offset.reshape(-1)).reshape(rows, n, heads, dim).transpose(0, 2, 1, 3)


@contextlib.contextmanager
def per_token_positions(model: Any) -> Iterator[None]:
    """While inside, the model's attention layers accept a position per token (a trie level); restored after."""
    attentions = [getattr(layer, "self_attn", None) for layer in model.layers]
    if any(attention is None or "rope" not in attention for attention in attentions):
        raise ArenaError(f"model type {getattr(model, 'model_type', '?')} has no self_attn.rope in every layer: "
                         "arena's trie scoring places each action token at its own position through it "
                         "(qwen2/qwen3/llama-style models have one)")
    with children_replaced([(attention, "rope", _PerTokenRope(attention.rope)) for attention in attentions]):
        yield


@contextlib.contextmanager
def children_replaced(swaps: Sequence[tuple[Any, str, nn.Module]]) -> Iterator[None]:
    """While inside, each ``(parent, name, child)`` of ``swaps`` has ``parent[name]`` = ``child`` (the caller built
    each from the one it replaces); the originals are restored after, even when a pass fails."""
    originals = [getattr(parent, name) for parent, name, _ in swaps]
    try:
        for parent, name, child in swaps:
            setattr(parent, name, child)
        yield
    finally:
        for (parent, name, _), child in zip(swaps, originals, strict=True):
            setattr(parent, name, child)


def rows_kv(caches: Sequence[PrefixCache], rows: Sequence[int], positions: Sequence[np.ndarray]) -> list[Stored]:
    """Each of ``rows``' keys and values at its own ``positions`` of every layer's cache, as an array of its own
    (``Stored``): a gather per layer for all the rows, then one copy per row."""
    width = max(map(len, positions))
    index = np.zeros((len(rows), 1, width, 1), dtype=np.int32)
    for i, where in enumerate(positions):
        index[i, 0, : len(where), 0] = where
    index, picked = mx.array(index), mx.array(np.asarray(rows, dtype=np.int32))
    layers = [mx.take_along_axis(getattr(cache, part)[picked], index, axis=2)
              for part in ("keys", "values") for cache in caches]
    return [mx.concatenate([layer[i: i + 1, :, : len(where)] for layer in layers])
            for i, where in enumerate(positions)]


class TurnCache:
    """Per game stream, the keys and values of its last prompt, so its next prompt re-encodes only what is new.

    A game's prompt at one turn usually extends its prompt at the last (TextArena's observation only grows), and
    rotary positions are absolute, so the cached prefix is exact. Keyed by the stream (a game and seat in one
    match), never by what else was batched; bounded by ``capacity`` tokens over all entries, evicting the least
    recently used stream first, so the same calls always leave the same entries. ``tokens`` counts what is held and
    ``bytes`` the entries' own arrays: in the pass's dtype (float32 where the projections run as float32 copies,
    whatever the weights' dtype), or in ``dtype`` where one is given (``player.store_dtype: model``: the weights'
    float16 halves them), handed back to a pass in the dtype they came in.
    """

    def __init__(self, capacity: int, min_tokens: int, dtype: mx.Dtype | None = None) -> None:
        self.capacity, self.min_tokens, self.dtype = capacity, min_tokens, dtype
        self.pass_dtype: mx.Dtype | None = None  # the dtype entries came in (and go back out) in
        self.entries: OrderedDict[Hashable, tuple[np.ndarray, Stored]] = OrderedDict()
        self.tokens = self.bytes = 0
        self.hits = self.reused = 0

    def reusable(self, stream: Hashable | None, prompt: Sequence[int]) -> int:
        """How many leading tokens of ``prompt`` the stream's entry holds (leaving it one of its own), or 0."""
        entry = self.entries.get(stream) if stream is not None else None
        if entry is None:
            return 0
        tokens, width = entry[0], min(len(entry[0]), len(prompt) - 1)
        differ = np.flatnonzero(tokens[:width] != np.asarray(prompt[:width]))
        shared = int(differ[0]) if differ.size else width
        return shared if shared >= self.min_tokens else 0

    def prefix(self, stream: Hashable, tokens: int) -> Stored:
        """The stream's first ``tokens`` keys and values (marks it recently used)."""
        self.entries.move_to_end(stream)
        self.hits, self.reused = self.hits + 1, self.reused + tokens
        kv = self.entries[stream][1][:, :, :tokens]
        return kv if self.pass_dtype is None or kv.dtype == self.pass_dtype else kv.astype(self.pass_dtype)

    def store(self, stream: Hashable, prompt: Sequence[int], kv: Stored) -> None:
        """Keep ``kv`` (the whole prompt's) as the stream's entry, then evict down to the capacity."""
        self.drop(stream)
        if len(prompt) > self.capacity:
            return
        if self.dtype is not None and kv.dtype != self.dtype:
            self.pass_dtype, kv = kv.dtype, kv.astype(self.dtype)
            mx.eval(kv)
        self.entries[stream] = (np.asarray(prompt, dtype=np.int64), kv)
        self.tokens, self.bytes = self.tokens + len(prompt), self.bytes + kv.nbytes
        while self.tokens > self.capacity:
            self.drop(next(iter(self.entries)))

    def drop(self, stream: Hashable) -> None:
        entry = self.entries.pop(stream, None)
        if entry is not None:
            self.tokens, self.bytes = self.tokens - len(entry[0]), self.bytes - entry[1].nbytes

    def clear(self) -> None:
        self.entries.clear()
        self.tokens = self.bytes = 0
