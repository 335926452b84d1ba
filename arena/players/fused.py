"""Inference softmax, logsumexp, attention and RoPE as MLX compiled functions: MLX's bits, vectorised by arena's JIT.

Why: MLX 0.32's x86 library computes ``softmax`` and ``logsumexp`` with a scalar ``exp`` that calls libm's ``fmaf``
(~14 ns an element); the same arithmetic written as MLX ops and ``mx.compile``d is built by arena's vector JIT
(``arena/core/jit.py``) at ~3 ns. The compiled forms copy the library kernels' order of operations (the maximum,
``exp(x - max)``, a sequential sum, a multiply by the sum's reciprocal; ``log(sum) + max``), so their results are the
same bits, and ``attention`` is ``mx.fast.scaled_dot_product_attention``'s own CPU graph with that softmax
(``tests/test_fused.py`` checks all three bit for bit); ``FusedRope`` is ``mx.fast.rope``'s CPU graph compiled, and
takes a trie level's one position per token without moving its tokens. Inference only: a compiled function's
gradient is not the library's, so training keeps MLX's kernels.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from arena.core.jit import vector_jit
from arena.players.kvcache import children_replaced


def fused_math() -> bool:
    """Whether inference takes the compiled kernels: the CPU, with MLX's JIT building vector code."""
    return mx.default_device() == mx.cpu and vector_jit()


@mx.compile
def softmax(x: mx.array) -> mx.array:
    """``mx.softmax(x, axis=-1, precise=True)``, the same bits."""
    e = mx.exp(x - mx.max(x, axis=-1, keepdims=True))
    return e * (1.0 / mx.sum(e, axis=-1, keepdims=True))


@mx.compile
def _logsumexp(x: mx.array) -> mx.array:
    top = mx.max(x, axis=-1, keepdims=True)
    total = mx.sum(mx.exp(x - top), axis=-1, keepdims=True)
    return mx.where(mx.isinf(top), top, mx.log(total) + top)


def logsumexp(x: mx.array, axis: int = -1, keepdims: bool = False) -> mx.array:
    """``mx.logsumexp`` over the last axis, the same bits."""
    if axis not in (-1, x.ndim - 1):
        raise ValueError(f"fused logsumexp reduces the last axis only, not axis {axis} of a {x.ndim}-d array")
    out = _logsumexp(x)
    return out if keepdims else out.squeeze(-1)


@mx.compile
def _rotated(x: mx.array, positions: mx.array, inverse_frequencies: mx.array) -> mx.array:
    half = inverse_frequencies.shape[0]
    theta = positions[..., None] * inverse_frequencies
    cos, sin = mx.cos(theta), mx.sin(theta)
    x1, x2 = x[..., :half], x[..., half:2 * half]
    rest = [x[..., 2 * half:]] if x.shape[-1] > 2 * half else []
    return mx.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos, *rest], axis=-1)


class FusedRope(nn.Module):
    """``nn.RoPE`` (not traditional) as MLX's CPU computes ``mx.fast.rope`` (positions ``(arange + offset) x scale``,
    inverse frequencies ``exp(-i x log(base) / half)``, each half rotated by the angles' cos and sin), compiled; an
    offset may also be [rows, tokens], one position per token (a trie level), so no token is moved to run it."""

    per_token = True  # arena.players.kvcache's trie levels hand it [rows, tokens] offsets as they are

    def __init__(self, rope: nn.RoPE) -> None:
        super().__init__()
        half = rope.dims // 2
        self.scale = rope.scale
        self.inverse_frequencies = mx.exp(mx.arange(0, -half, -1, dtype=mx.float32)
                                          * mx.array(math.log(rope.base) / half, mx.float32))

    def __call__(self, x: mx.array, offset: Any = 0) -> mx.array:
        tokens = x.shape[-2]
        if isinstance(offset, mx.array) and offset.ndim == 2:  # [rows, tokens]: each token's own position
            start = mx.arange(1, dtype=mx.float32) + offset[:, None, :]
        else:
            offset = offset[:, None, None] if isinstance(offset, mx.array) and offset.ndim == 1 else offset
            start = mx.arange(tokens, dtype=mx.float32) + offset
        return _rotated(x, start * mx.array(self.scale, mx.float32), self.inverse_frequencies)


def _causal(queries: int, keys: int) -> mx.array:
    """MLX's own causal mask for ``queries`` queries that end at the last of ``keys`` keys."""
    start = max(keys - queries, 0)
    return mx.arange(start, start + queries)[:, None] >= mx.arange(keys)[None]


def attention(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask: Any = None) -> mx.array:
    """``mx.fast.scaled_dot_product_attention`` as MLX's CPU runs it (grouped heads as a broadcast, a boolean mask
    as -inf, an additive one added), with the compiled softmax."""
    batch, heads, n, dim = queries.shape
    kv_heads, total = keys.shape[1], keys.shape[2]
    group = heads // kv_heads
    q = mx.array(scale, dtype=queries.dtype) * queries
    if group > 1:
        q = q.reshape(batch, kv_heads, group, n, dim)
        keys, values = mx.expand_dims(keys, 2), mx.expand_dims(values, 2)
    scores = q @ keys.swapaxes(-1, -2)
    if mask is not None:
        mask = _causal(n, total) if isinstance(mask, str) else mx.broadcast_to(mask, (batch, heads, n, total))
        if group > 1 and mask.ndim == 4:
            mask = mask.reshape(batch, kv_heads, group, n, total)
        if mask.dtype == mx.bool_:
            scores = mx.where(mask, scores, mx.array(-float("inf"), scores.dtype))
        else:
            scores = scores + mask.astype(scores.dtype)
    out = softmax(scores) @ values
    return out.reshape(batch, heads, n, -1) if group > 1 else out


def attend_with(kernel: Callable[..., mx.array]) -> Callable[[Callable[..., mx.array]], Callable[..., mx.array]]:
    """A stand-in for mlx-lm's attention entry point: ``kernel(queries, keys, values, scale, mask)`` where it applies
    (plain float32 keys, no sinks), the original everywhere else."""

    def stand_in(original: Callable[..., mx.array]) -> Callable[..., mx.array]:
        def attend(queries: mx.array, keys: mx.array, values: mx.array, cache: Any = None, scale: float = 1.0,
                   mask: Any = None, **extra: Any) -> mx.array:
            if any(v is not None for v in extra.values()) or hasattr(cache, "bits") or queries.dtype != mx.float32:
                return original(queries, keys, values, cache=cache, scale=scale, mask=mask, **extra)
            return kernel(queries, keys, values, scale, mask)

        return attend

    return stand_in


def layer_parts(model: Any) -> list[Any]:
    """Each layer's attention and MLP modules (``self_attn``, ``mlp``), those a layer has, in layer order."""
    return [part for layer in model.layers for part in (layer.get("self_attn"), layer.get("mlp")) if part is not None]


@contextlib.contextmanager
def swapped(model: Any, stand_ins: dict[str, Callable[[Callable[..., mx.array]], Callable[..., mx.array]]]
            ) -> Iterator[None]:
    """While inside, each module-level name in ``stand_ins`` that the model's attention and MLP layers call (mlx-lm's
    ``scaled_dot_product_attention``, ``swiglu``) is replaced by ``stand_ins[name](original)``; restored after."""
    names = {sys.modules[type(part).__module__] for part in layer_parts(model)}
    swaps = [(module, name, getattr(module, name)) for module in names for name in stand_ins
             if hasattr(module, name)]
    try:
        for module, name, original in swaps:
            setattr(module, name, stand_ins[name](original))
        yield
    finally:
        for module, name, original in swaps:
            setattr(module, name, original)


def fused_ropes(model: Any) -> contextlib.AbstractContextManager[None]:
    """While inside, each attention layer's plain ``nn.RoPE`` is a ``FusedRope`` (others stay); restored after."""
    attentions = [layer.get("self_attn") for layer in model.layers]
    return children_replaced([(attention, "rope", FusedRope(attention.rope)) for attention in attentions
                              if attention is not None and type(attention.get("rope")) is nn.RoPE
                              and not attention.rope.traditional])


@contextlib.contextmanager
def fused_kernels(model: Any) -> Iterator[None]:
    """While inside, the model's attention takes the compiled softmax and its rotary embeddings the compiled rotation
    (inference only: see the module's docstring)."""
    with swapped(model, {"scaled_dot_product_attention": attend_with(attention)}), fused_ropes(model):
        yield
