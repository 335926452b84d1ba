"""Inference softmax, logsumexp and attention as MLX compiled functions: MLX's own bits, vectorised by arena's JIT.

Why: MLX 0.32's x86 library computes ``softmax`` and ``logsumexp`` with a scalar ``exp`` that calls libm's ``fmaf``
(~14 ns an element); the same arithmetic written as MLX ops and ``mx.compile``d is built by arena's vector JIT
(``arena/core/jit.py``) at ~3 ns. The compiled forms copy the library kernels' order of operations (the maximum,
``exp(x - max)``, a sequential sum, a multiply by the sum's reciprocal; ``log(sum) + max``), so their results are the
same bits, and ``attention`` is ``mx.fast.scaled_dot_product_attention``'s own CPU graph with that softmax
(``tests/test_fused.py`` checks all three bit for bit). Inference only: a compiled function's gradient is not the
library's, so training keeps MLX's kernels.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import mlx.core as mx

from arena.core.jit import vector_jit


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


@contextlib.contextmanager
def swapped(model: Any, stand_ins: dict[str, Callable[[Callable[..., mx.array]], Callable[..., mx.array]]]
            ) -> Iterator[None]:
    """While inside, each module-level name in ``stand_ins`` that the model's attention and MLP layers call (mlx-lm's
    ``scaled_dot_product_attention``, ``swiglu``) is replaced by ``stand_ins[name](original)``; restored after."""
    names = {sys.modules[type(part).__module__] for layer in model.layers
             for part in (layer.get("self_attn"), layer.get("mlp")) if part is not None}
    swaps = [(module, name, getattr(module, name)) for module in names for name in stand_ins
             if hasattr(module, name)]
    try:
        for module, name, original in swaps:
            setattr(module, name, stand_ins[name](original))
        yield
    finally:
        for module, name, original in swaps:
            setattr(module, name, original)


def fused_kernels(model: Any) -> contextlib.AbstractContextManager[None]:
    """While inside, the model's attention takes the compiled softmax (inference only: see the module's docstring)."""
    return swapped(model, {"scaled_dot_product_attention": attend_with(attention)})
