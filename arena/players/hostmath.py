"""CPU inference through numpy's vectorised exp, where MLX 0.32's x86 kernels are scalar: attention, SwiGLU, head."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.base import create_causal_mask

# Above this vocabulary (a real model's), inference on the CPU takes its exps on the host. MLX 0.32's x86 CPU
# backend has no SIMD transcendentals (ml-explore/mlx#3019 is open): its exp costs ~17 ns an element here, numpy's
# ~2.5 ns. Below it (the embedded default) MLX is kept, so the default's arithmetic never depends on numpy's
# CPU dispatch.
HOST_MATH_VOCAB = 32768
# Elements a block of the head's normalisation holds at once (16 MiB of float32): small enough to stay in the
# cache and be reused for every block, so a pass does not fault in a fresh [rows, vocab] scratch each time.
BLOCK_ELEMENTS = 1 << 22
# Under e^-80 a term changes a row's sum by at most vocab x e^-80 < 1e-29; clamping there keeps numpy's exp off
# its slow path for denormals.
EXP_FLOOR = -80.0


def host_math(model: Any) -> bool:
    """Whether inference takes its exps on the host: an MLX CPU device and a vocabulary over the cutoff."""
    vocab = getattr(getattr(model, "args", None), "vocab_size", 0) or 0
    return mx.default_device() == mx.cpu and vocab > HOST_MATH_VOCAB


def log_normalisers(logits: mx.array) -> np.ndarray:
    """Each row's log-sum-exp, [rows] float32 (logits: [rows, vocab] float32), a block of rows at a time."""
    rows = np.asarray(logits)  # a read-only view of MLX's buffer, no copy
    top = rows.max(axis=1)
    block = max(1, BLOCK_ELEMENTS // max(1, rows.shape[1]))
    scratch = np.empty((min(block, rows.shape[0]), rows.shape[1]), dtype=np.float32)
    sums = np.empty(rows.shape[0], dtype=np.float32)
    for start in range(0, rows.shape[0], block):
        part = scratch[: min(block, rows.shape[0] - start)]
        np.subtract(rows[start : start + len(part)], top[start : start + len(part), None], out=part)
        np.exp(np.maximum(part, EXP_FLOOR, out=part), out=part)
        sums[start : start + len(part)] = part.sum(axis=1)
    return top + np.log(sums)


def host_attention_scores(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask: Any) -> mx.array:
    """Scaled dot-product attention whose softmax runs on the host; grouped-query heads as MLX's own.

    ``mask``: None, "causal", or a boolean array broadcastable to [batch, 1, queries, keys].
    """
    batch, heads, n, dim = queries.shape
    kv_heads, total = keys.shape[1], keys.shape[2]
    group = heads // kv_heads  # query head h reads key/value head h // group
    scores = (queries * scale).reshape(batch, kv_heads, group * n, dim) @ keys.swapaxes(-1, -2)
    if isinstance(mask, str):
        mask = create_causal_mask(n, total - n)
    if mask is not None:
        bias = mx.where(mask, mx.array(0.0, mx.float32), mx.array(-np.inf, mx.float32))
        bias = bias.reshape(bias.shape[0] if bias.ndim == 4 else 1, 1, 1, n, total)
        scores = (scores.reshape(batch, kv_heads, group, n, total) + bias).reshape(batch, kv_heads, group * n, total)
    mx.eval(scores)
    # In place in the scores' own fresh buffer, which nothing else holds: a copy each way would cost as much as the
    # exp itself ([rows, heads, queries, keys] float32, tens of MB a layer). Masked keys are -inf, so exactly 0.
    host = np.asarray(scores)
    shared = host.flags.c_contiguous and host.flags.writeable
    host = host if shared else np.array(host)
    np.exp(np.subtract(host, host.max(axis=-1, keepdims=True), out=host), out=host)
    sums = mx.array(host.sum(axis=-1, keepdims=True))
    scores = scores if shared else mx.array(host)
    out = (scores @ values) / sums
    return out.reshape(batch, heads, n, dim)


def host_swiglu(gate: mx.array, x: mx.array) -> mx.array:
    """silu(gate) * x with numpy's exp, written into the gate's fresh buffer (the gate projection's output)."""
    mx.eval(gate, x)
    host = np.asarray(gate)
    if not (host.flags.c_contiguous and host.flags.writeable) or gate.dtype != mx.float32 or gate.shape != x.shape:
        return nn.silu(gate) * x
    scratch = np.negative(host)
    with np.errstate(over="ignore"):  # exp(-gate) = inf for a very negative gate: silu is then -0, as it should be
        np.exp(scratch, out=scratch)
    scratch += 1.0
    np.divide(host, scratch, out=host)
    np.multiply(host, np.asarray(x), out=host)
    return gate


def _attend(original: Callable[..., mx.array]) -> Callable[..., mx.array]:
    """mlx-lm's attention entry point, through the host where it can be (plain float32 keys, no sinks)."""

    def attend(queries: mx.array, keys: mx.array, values: mx.array, cache: Any = None, scale: float = 1.0,
               mask: Any = None, **extra: Any) -> mx.array:
        if any(v is not None for v in extra.values()) or hasattr(cache, "bits") or queries.dtype != mx.float32:
            return original(queries, keys, values, cache=cache, scale=scale, mask=mask, **extra)
        return host_attention_scores(queries, keys, values, scale, mask)

    return attend


# The module-level names mlx-lm's layers call, and what stands in for each while inside ``host_kernels``.
_STAND_INS: dict[str, Callable[[Callable[..., mx.array]], Callable[..., mx.array]]] = {
    "scaled_dot_product_attention": _attend,
    "swiglu": lambda original: host_swiglu,
}


@contextlib.contextmanager
def host_kernels(model: Any) -> Iterator[None]:
    """While inside, the model's attention softmax and SwiGLU take their exps on the host; restored after.

    mlx-lm's layers call their module's ``scaled_dot_product_attention`` and ``swiglu``; those names are swapped
    for the duration (inference only: numpy is outside MLX's graph, so nothing inside may be differentiated).
    """
    names = {sys.modules[type(part).__module__] for layer in model.layers
             for part in (layer.get("self_attn"), layer.get("mlp")) if part is not None}
    swaps = [(module, name, getattr(module, name)) for module in names for name in _STAND_INS
             if hasattr(module, name)]
    try:
        for module, name, original in swaps:
            setattr(module, name, _STAND_INS[name](original))
        yield
    finally:
        for module, name, original in swaps:
            setattr(module, name, original)
