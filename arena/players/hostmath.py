"""CPU inference on the host where MLX 0.32's x86 kernels are slow: attention, SwiGLU, float projections and the
output head, each call's work split over the CPU's threads without changing a bit."""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.base import create_causal_mask

from arena.core.blas import host_blas, sgemm
from arena.players.fused import attend_with, layer_parts, swapped
from arena.players.head import float_weight
from arena.players.kvcache import children_replaced

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
# Most threads the host kernels share a call's pieces over by default (``$ARENA_HOST_THREADS`` sets the count;
# else ``$OMP_NUM_THREADS``, which Ray sets to a worker's CPUs; else the CPUs this process may use, at most this
# many). The pieces are fixed by the shapes and their partial results combined in one fixed order, so the thread
# count never changes a bit.
MAX_HOST_THREADS = 8
# Most bytes of float32 copies of a quantised model's projections the host keeps (``float_weight``, made once per
# weight): MLX 0.32's x86 quantised matmul is what a 4-bit model spends its time in (SmolLM2-135M q4, 16 Kuhn games
# in the full view: 541 s quantised, 0.42 GB of copies make it float BLAS), but a 4B model's copies would take 16 GB.
HOST_DEQUANT_BYTES = 2 << 30
# Rows one piece of a projection or a SwiGLU takes (the last piece fewer); pieces are spread over the threads.
# OpenBLAS's result for a row depends on where the row sits in its call's tiles, so the cut is fixed here, never
# by the thread count.
BLOCK_ROWS = 96

_Part = TypeVar("_Part")
_Result = TypeVar("_Result")
# The pool (its size and itself), made on first use; a forked child drops its parent's, whose threads it lacks.
_pool: list[tuple[int, ThreadPoolExecutor]] = []
os.register_at_fork(after_in_child=_pool.clear)


def host_math(model: Any) -> bool:
    """Whether inference runs on the host: an MLX CPU device, arena's OpenBLAS, a vocabulary over the cutoff."""
    vocab = getattr(getattr(model, "args", None), "vocab_size", 0) or 0
    return mx.default_device() == mx.cpu and host_blas() and vocab > HOST_MATH_VOCAB


def host_threads() -> int:
    """How many threads a host kernel splits its work over."""
    for name in ("ARENA_HOST_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(name, "")
        if text:
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {text!r}: unset it or set e.g. 2")
            return int(text)
    return max(1, min(MAX_HOST_THREADS, len(os.sched_getaffinity(0))))


def _each(work: Callable[[_Part], _Result], parts: Sequence[_Part]) -> list[_Result]:
    """``[work(p) for p in parts]``, the parts cut into one contiguous run per thread: the first run on the calling
    thread, the others on the pool's (OpenBLAS and numpy's large loops release the GIL); results in the parts'
    order."""
    available = host_threads()
    threads = min(len(parts), available)
    if threads < 2:
        return [work(part) for part in parts]
    if not _pool or _pool[0][0] != available - 1:
        for _, old in _pool:
            old.shutdown(wait=False)
        _pool[:] = [(available - 1, ThreadPoolExecutor(available - 1, thread_name_prefix="arena-host"))]
    runs = [parts[len(parts) * i // threads : len(parts) * (i + 1) // threads] for i in range(threads)]
    pending = [_pool[0][1].submit(lambda run=run: [work(part) for part in run]) for run in runs[1:]]
    try:
        done = [work(part) for part in runs[0]]
    finally:
        wait(pending)  # no piece may still write into a caller's buffer once this call has returned or raised
    for future in pending:
        done.extend(future.result())
    return done


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
# The most bytes of work buffers this thread keeps once a pass is over (``drop_scratch``): attention's scores grow with
# rows x queries x keys, not with the pass's token budget (64 Liar's Dice games' first full-view pass: ~0.6 GB).
KEEP_SCRATCH_BYTES = 64 << 20


def drop_scratch(keep: int = KEEP_SCRATCH_BYTES) -> None:
    """Free this thread's work buffers larger than ``keep`` bytes (the next pass makes them afresh where it needs
    them: page faults, no change to a value)."""
    buffers = _SCRATCH.__dict__
    for name in [name for name, buffer in buffers.items() if buffer.nbytes > keep]:
        del buffers[name]


def _block_normaliser(logits: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's maximum over a block of logits [rows, some of the vocabulary] and its sum of exps below that
    maximum; ``work`` (of the block's shape, the block itself if it may be overwritten) holds the exps."""
    top = logits.max(axis=1)
    np.subtract(logits, top[:, None], out=work)
    if work.min() < EXP_FLOOR:  # a pass of min costs a third of one of maximum, and the floor is rarely reached
        np.maximum(work, EXP_FLOOR, out=work)
    np.exp(work, out=work)
    return top, work.sum(axis=1)


def _merged_normalisers(blocks: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each row's log-sum-exp from its blocks' (maximum, sum of exps), folded in block order."""
    top = np.max([block_top for block_top, _ in blocks], axis=0)
    total = np.zeros_like(top)
    for block_top, block_total in blocks:
        total += block_total * np.exp(block_top - top)
    return top + np.log(total)


def log_normalisers(logits: np.ndarray | mx.array) -> np.ndarray:
    """Each row's log-sum-exp, [rows] float32 (logits: [rows, vocab] float32), blocks of rows over the threads."""
    rows = np.asarray(logits)  # an MLX array's buffer is viewed read-only, not copied
    block = max(1, BLOCK_ELEMENTS // max(1, rows.shape[1]))

    def normaliser(start: int) -> np.ndarray:
        part = rows[start : start + block]
        return _merged_normalisers([_block_normaliser(part, _scratch("head", part.shape))])

    parts = _each(normaliser, range(0, rows.shape[0], block))
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def head_log_probs(states: mx.array, weight: mx.array, bias: mx.array | None, rows: np.ndarray,
                   tokens: np.ndarray) -> np.ndarray:
    """log_softmax(states @ weight.T + bias)[rows, tokens], float32: the head one block of the vocabulary at a time
    (``sgemm`` into a reused buffer, blocks over the threads), each block's normaliser taken while it is in the
    cache, so no [states, vocab] array is ever made."""
    mx.eval(states, weight)
    hidden, matrix = _host(states), _host(weight)
    shift = None if bias is None else np.asarray(bias, dtype=np.float32)
    count, vocab = hidden.shape[0], matrix.shape[0]
    width = max(1, min(vocab, BLOCK_ELEMENTS // max(1, count)))
    picked = np.empty(len(tokens), dtype=np.float32)
    order = np.argsort(tokens, kind="stable")
    bounds = np.searchsorted(tokens[order], np.arange(0, vocab + width, width))

    def block_normaliser(i: int) -> tuple[np.ndarray, np.ndarray]:
        start = i * width
        block = sgemm(hidden, matrix[start : start + width], _scratch("head", (count, min(width, vocab - start))),
                      trans_b=True)
        if shift is not None:
            block += shift[start : start + width]
        here = order[bounds[i] : bounds[i + 1]]
        picked[here] = block[rows[here], tokens[here] - start]  # each block writes its own tokens' entries
        return _block_normaliser(block, block)

    normalisers = _merged_normalisers(_each(block_normaliser, range(-(-vocab // width))))
    return picked - normalisers[rows]


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
    out = _scratch("attended", (batch, kv_heads, group * n, dim))
    hidden = None
    if mask is not None:
        hidden = np.logical_not(np.asarray(mask))
        hidden = hidden.reshape(hidden.shape[0] if hidden.ndim == 4 else 1, 1, n, total)

    def attend(b: int) -> None:  # one batch row: every thread writes its own rows of the caller's buffers
        for h in range(kv_heads):
            sgemm(q[b, h], k[b, h], scores[b, h], trans_b=True)
        if hidden is not None:
            np.copyto(scores[b].reshape(kv_heads, group, n, total), -np.inf, where=hidden[b % hidden.shape[0]])
        # Masked keys are -inf, so exactly 0 after the exp; every scoring mask leaves each query some key.
        row = np.subtract(scores[b], scores[b].max(axis=-1, keepdims=True), out=scores[b])
        np.exp(row, out=row)
        sums = row.sum(axis=-1, keepdims=True)
        for h in range(kv_heads):
            sgemm(scores[b, h], v[b, h], out[b, h])
        np.divide(out[b], sums, out=out[b])

    _each(attend, range(batch))
    return mx.array(out.reshape(batch, heads, n, dim))


def host_swiglu(gate: mx.array, x: mx.array) -> mx.array:
    """silu(gate) * x = gate * x / (1 + exp(-gate)), with numpy's exp, in a reused buffer."""
    if gate.dtype != mx.float32 or gate.shape != x.shape:
        return nn.silu(gate) * x
    mx.eval(gate, x)
    host, other = np.asarray(gate), np.asarray(x)
    out = _scratch("swiglu", host.shape)
    flat = [a.reshape(-1, host.shape[-1]) for a in (host, other, out)]

    def silu_times(start: int) -> None:
        g, y, o = (a[start : start + BLOCK_ROWS] for a in flat)
        np.negative(g, out=o)
        with np.errstate(over="ignore"):  # exp(-gate) = inf for a very negative gate: silu is then -0, as it should be
            np.exp(o, out=o)
        o += 1.0
        np.divide(g, o, out=o)
        np.multiply(o, y, out=o)

    _each(silu_times, range(0, flat[0].shape[0], BLOCK_ROWS))
    return mx.array(out)


# The module-level names mlx-lm's layers call, and what stands in for each while inside ``host_kernels``.
_STAND_INS: dict[str, Callable[[Callable[..., mx.array]], Callable[..., mx.array]]] = {
    "scaled_dot_product_attention": attend_with(host_attention_scores),
    "swiglu": lambda original: host_swiglu,
}


class HostLinear(nn.Module):
    """A float32 ``nn.Linear`` (or a quantised one, through its float32 copy) on the host: ``sgemm`` over fixed blocks
    of its input rows, spread over the threads."""

    def __init__(self, linear: nn.Linear | nn.QuantizedLinear) -> None:
        super().__init__()
        weight = float_weight(linear) if isinstance(linear, nn.QuantizedLinear) else linear.weight
        self.matrix = _host(weight)  # numpy, so not a parameter: this stand-in is never trained
        self.shift = np.asarray(linear.bias, dtype=np.float32) if "bias" in linear else None

    def __call__(self, x: mx.array) -> mx.array:
        mx.eval(x)
        rows = _host(x).reshape(-1, x.shape[-1])
        out = np.empty((rows.shape[0], self.matrix.shape[0]), dtype=np.float32)

        def product(start: int) -> None:
            part = slice(start, start + BLOCK_ROWS)
            sgemm(rows[part], self.matrix, out[part], trans_b=True)
            if self.shift is not None:
                out[part] += self.shift

        _each(product, range(0, rows.shape[0], BLOCK_ROWS))
        return mx.array(out).reshape(*x.shape[:-1], self.matrix.shape[0])


LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def host_linears(model: Any) -> contextlib.AbstractContextManager[None]:
    """While inside, each float32 ``nn.Linear`` of the model's attention and MLP layers is a ``HostLinear``, and so is
    each affine-quantised one while their float32 copies fit ``HOST_DEQUANT_BYTES``."""
    slots = [(part, name) for part in layer_parts(model) for name in LINEAR_NAMES]
    quantised = [p[n] for p, n in slots if type(p.get(n)) is nn.QuantizedLinear and p[n].mode == "affine"]
    copies = sum(4 * q.weight.shape[0] * q.scales.shape[-1] * q.group_size for q in quantised) <= HOST_DEQUANT_BYTES

    def on_host(linear: Any) -> bool:
        if type(linear) is nn.Linear:
            return linear.weight.dtype == mx.float32
        return copies and type(linear) is nn.QuantizedLinear and linear.mode == "affine"

    return children_replaced([(p, n, HostLinear(p[n])) for p, n in slots if on_host(p.get(n))])


@contextlib.contextmanager
def host_kernels(model: Any) -> Iterator[None]:
    """While inside, the model's attention, SwiGLU and float32 projections run on the host; restored after.

    Inference only: numpy is outside MLX's graph, so nothing inside may be differentiated.
    """
    with swapped(model, _STAND_INS), host_linears(model):
        yield
