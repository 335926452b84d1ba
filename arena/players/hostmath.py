"""CPU inference on the host where MLX 0.32's x86 kernels are slow: attention, SwiGLU and the output head."""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.base import create_causal_mask

from arena.core.blas import host_blas, sgemm
from arena.players.fused import attend_with, swapped

# Above this vocabulary (a real model's), inference on the CPU takes its exps on the host. MLX 0.32's x86 CPU
# backend has no SIMD transcendentals (ml-explore/mlx#3019 is open): its exp costs ~17 ns an element here, numpy's
# ~2.5 ns. Below it (the embedded default) MLX is kept, so the default's arithmetic never depends on numpy's
# CPU dispatch.
HOST_MATH_VOCAB = 32768
# Elements a block of the output head holds at once (16 MiB of float32): every scored row's logits over a slice of
# the vocabulary, normalised while still in the cache (a [300, 151,936] head: 0.52 s in 16 MiB blocks, 0.59 s as
# one reused [rows, vocab] buffer, 0.65 s in 256 KiB blocks).
BLOCK_ELEMENTS = 1 << 22
# Under e^-80 a term changes a row's sum by at most vocab x e^-80 < 1e-29; clamping there keeps numpy's exp off
# its slow path for denormals.
EXP_FLOOR = -80.0


def host_math(model: Any) -> bool:
    """Whether inference runs on the host: an MLX CPU device, arena's OpenBLAS, a vocabulary over the cutoff."""
    vocab = getattr(getattr(model, "args", None), "vocab_size", 0) or 0
    return mx.default_device() == mx.cpu and host_blas() and vocab > HOST_MATH_VOCAB


def _scratch(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 work buffer of ``shape``, reused across calls: a fresh large array faults its pages in on first
    touch, which here cost up to twice the product written into it (a [344, 151,936] head: 1.03 s fresh, 0.32 s
    reused). Each name keeps its largest size until its thread ends; each thread has its own."""
    size = math.prod(shape)
    buffers = _SCRATCH.__dict__
    buffer = buffers.get(name)
    if buffer is None or buffer.size < size:
        buffer = buffers[name] = np.empty(size, dtype=np.float32)
    return buffer[:size].reshape(shape)


_SCRATCH = threading.local()  # two threads scoring at once must not share a buffer


def _normalise_block(logits: np.ndarray, top: np.ndarray, total: np.ndarray, work: np.ndarray) -> None:
    """Fold a block of logits [rows, some of the vocabulary] into each row's running log-sum-exp: ``top`` (the max so
    far) and ``total`` (the sum of exps below it), both updated in place; ``work`` (of the block's shape, the block
    itself if it may be overwritten) holds the exps."""
    new_top = np.maximum(top, logits.max(axis=1))
    np.subtract(logits, new_top[:, None], out=work)
    if work.min() < EXP_FLOOR:  # a pass of min costs a third of one of maximum, and the floor is rarely reached
        np.maximum(work, EXP_FLOOR, out=work)
    np.exp(work, out=work)
    total *= np.exp(top - new_top)  # top starts at -inf: the first block's factor is 0
    total += work.sum(axis=1)
    top[:] = new_top


def log_normalisers(logits: np.ndarray | mx.array) -> np.ndarray:
    """Each row's log-sum-exp, [rows] float32 (logits: [rows, vocab] float32), a block of rows at a time."""
    rows = np.asarray(logits)  # an MLX array's buffer is viewed read-only, not copied
    block = max(1, BLOCK_ELEMENTS // max(1, rows.shape[1]))
    top, total = np.full(rows.shape[0], -np.inf, np.float32), np.zeros(rows.shape[0], np.float32)
    for start in range(0, rows.shape[0], block):
        part = slice(start, start + block)
        _normalise_block(rows[part], top[part], total[part], _scratch("head", rows[part].shape))
    return top + np.log(total)


def head_log_probs(states: mx.array, weight: mx.array, bias: mx.array | None, rows: np.ndarray,
                   tokens: np.ndarray) -> np.ndarray:
    """log_softmax(states @ weight.T + bias)[rows, tokens], float32: the head one block of the vocabulary at a time
    (``sgemm`` into a reused buffer), each block folded into its rows' running normaliser while it is in the cache,
    so no [states, vocab] array is ever made."""
    mx.eval(states, weight)
    hidden, matrix = _host(states), _host(weight)
    shift = None if bias is None else np.asarray(bias, dtype=np.float32)
    count, vocab = hidden.shape[0], matrix.shape[0]
    width = max(1, min(vocab, BLOCK_ELEMENTS // max(1, count)))
    top, total = np.full(count, -np.inf, np.float32), np.zeros(count, np.float32)
    picked = np.empty(len(tokens), dtype=np.float32)
    order = np.argsort(tokens, kind="stable")
    bounds = np.searchsorted(tokens[order], np.arange(0, vocab + width, width))
    for i, start in enumerate(range(0, vocab, width)):
        block = sgemm(hidden, matrix[start : start + width], _scratch("head", (count, min(width, vocab - start))),
                      trans_b=True)
        if shift is not None:
            block += shift[start : start + width]
        here = order[bounds[i] : bounds[i + 1]]
        picked[here] = block[rows[here], tokens[here] - start]
        _normalise_block(block, top, total, block)
    return picked - (top + np.log(total))[rows]


def _host(array: mx.array) -> np.ndarray:
    """An evaluated MLX array as a C-contiguous float32 numpy array (a view of its buffer where that is one)."""
    return np.ascontiguousarray(np.asarray(array, dtype=np.float32))


def host_attention_scores(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask: Any) -> mx.array:
    """Scaled dot-product attention on the host: both products by ``sgemm``, the softmax by numpy, in one reused
    [batch, kv heads, group x queries, keys] buffer; grouped-query heads as MLX's own.

    ``mask``: None, "causal", or a boolean array broadcastable to [batch, 1, queries, keys].
    """
    batch, heads, n, dim = queries.shape
    kv_heads, total = keys.shape[1], keys.shape[2]
    group = heads // kv_heads  # query head h reads key/value head h // group
    if isinstance(mask, str):
        mask = create_causal_mask(n, total - n)
    mx.eval(queries, keys, values, *([mask] if mask is not None else []))
    q = _host(queries * scale).reshape(batch, kv_heads, group * n, dim)
    k, v = _host(keys), _host(values)
    scores = _scratch("scores", (batch, kv_heads, group * n, total))
    for b, h in np.ndindex(batch, kv_heads):
        sgemm(q[b, h], k[b, h], scores[b, h], trans_b=True)
    if mask is not None:
        hidden = np.logical_not(np.asarray(mask))
        hidden = hidden.reshape(hidden.shape[0] if hidden.ndim == 4 else 1, 1, 1, n, total)
        np.copyto(scores.reshape(batch, kv_heads, group, n, total), -np.inf, where=hidden)
    # Masked keys are -inf, so exactly 0 after the exp; every scoring mask leaves each query some key.
    np.exp(np.subtract(scores, scores.max(axis=-1, keepdims=True), out=scores), out=scores)
    sums = scores.sum(axis=-1, keepdims=True)
    out = _scratch("attended", (batch, kv_heads, group * n, dim))
    for b, h in np.ndindex(batch, kv_heads):
        sgemm(scores[b, h], v[b, h], out[b, h])
    return mx.array(np.divide(out, sums, out=out).reshape(batch, heads, n, dim))


def host_swiglu(gate: mx.array, x: mx.array) -> mx.array:
    """silu(gate) * x = gate * x / (1 + exp(-gate)), with numpy's exp, in a reused buffer."""
    if gate.dtype != mx.float32 or gate.shape != x.shape:
        return nn.silu(gate) * x
    mx.eval(gate, x)
    host = np.asarray(gate)
    out = _scratch("swiglu", host.shape)
    np.negative(host, out=out)
    with np.errstate(over="ignore"):  # exp(-gate) = inf for a very negative gate: silu is then -0, as it should be
        np.exp(out, out=out)
    out += 1.0
    np.divide(host, out, out=out)
    return mx.array(np.multiply(out, np.asarray(x), out=out))


# The module-level names mlx-lm's layers call, and what stands in for each while inside ``host_kernels``.
_STAND_INS: dict[str, Callable[[Callable[..., mx.array]], Callable[..., mx.array]]] = {
    "scaled_dot_product_attention": attend_with(host_attention_scores),
    "swiglu": lambda original: host_swiglu,
}


def host_kernels(model: Any) -> contextlib.AbstractContextManager[None]:
    """While inside, the model's attention softmax and SwiGLU take their exps on the host; restored after.

    Inference only: numpy is outside MLX's graph, so nothing inside may be differentiated.
    """
    return swapped(model, _STAND_INS)
