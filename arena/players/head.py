"""The model's output head: where it is, that head-only scoring applies it as the model does, its float matrix."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import mlx.core as mx

from arena.core.errors import ArenaError
from arena.players.kvcache import PrefixCache

_FLOAT_HEADS: dict[int, tuple[mx.array, mx.array]] = {}  # id(head) -> (its packed weight, the dequantised copy)


def float_weight(head: Any) -> mx.array | None:
    """On the CPU, a quantised output head's dequantised weight (made once, kept while the packed weight is the same
    array), else None. MLX 0.32's CPU 4-bit matmul is ~25x slower than float BLAS for a 151,936-row head (100 rows:
    10.2 s vs 0.40 s, max gap 4e-6); the copy costs vocab x hidden floats of memory. Always float32, whatever the
    scales' dtype: the quantised matmul computes ``scale * q + bias`` in float32, and a GGUF's float16 scales
    dequantised into float16 round every weight to 11 bits (SmolLM2's logits moved by 0.042). The scales are cast
    first: MLX 0.32's ``dequantize(..., dtype=float32)`` still rounds through the scales' dtype."""
    if mx.default_device() != mx.cpu or "scales" not in head or getattr(head, "mode", "affine") != "affine":
        return None
    cached = _FLOAT_HEADS.get(id(head))
    if cached is None:  # the copy goes with the module (a quantised model's every projection has one on the host)
        weakref.finalize(head, _FLOAT_HEADS.pop, id(head), None)
    if cached is None or cached[0] is not head["weight"]:
        biases = head.get("biases")
        weight = mx.dequantize(head["weight"], head["scales"].astype(mx.float32),
                               None if biases is None else biases.astype(mx.float32), group_size=head.group_size,
                               bits=head.bits)
        mx.eval(weight)
        cached = _FLOAT_HEADS[id(head)] = (head["weight"], weight)
    return cached[1]


def float_head(head: Any) -> Callable[[mx.array], mx.array] | None:
    """A quantised output head as a float matmul with ``float_weight``'s copy, else None."""
    weight, bias = float_weight(head), head.get("bias")
    if weight is None:
        return None
    return (lambda x: x @ weight.T) if bias is None else (lambda x: x @ weight.T + bias)


def _head_module(model: Any) -> tuple[Any, bool]:
    """The module that applies the model's output head, and whether it is the tied embedding (``as_linear``)."""
    body, args = getattr(model, "model", None), getattr(model, "args", None)
    tied = getattr(args, "tie_word_embeddings", None)
    lm_head = getattr(model, "lm_head", None) if "lm_head" in model else None
    if lm_head is not None and tied is not True:
        return lm_head, False
    embed = getattr(body, "embed_tokens", None) if body is not None and "embed_tokens" in body else None
    if embed is not None and hasattr(embed, "as_linear") and (tied or lm_head is None):
        return embed, True
    raise ArenaError(f"cannot find the output head of model type {getattr(model, 'model_type', type(model).__name__)}"
                     " (no lm_head, no tied model.embed_tokens): arena scores mlx-lm models shaped like qwen2/qwen3")


def output_head(model: Any) -> Callable[[mx.array], mx.array]:
    """The model's own output head (hidden states -> logits), as its ``__call__`` applies it."""
    module, embedding = _head_module(model)
    return float_head(module) or (module.as_linear if embedding else module)


def head_matrix(model: Any) -> tuple[mx.array, mx.array | None] | None:
    """The output head as a float matrix product: its weight [vocab, hidden] (dequantised on the CPU) and bias, or
    None where it is not one."""
    module, _ = _head_module(model)
    weight = float_weight(module) if "scales" in module else module.get("weight")
    return None if weight is None or weight.ndim != 2 else (weight, module.get("bias"))


def check_head(model: Any) -> None:
    """Fail clearly unless head(body(x)) equals the model's own logits (e.g. a model that rescales its logits)."""
    ids = mx.array([[0, 1]], dtype=mx.int32)
    full = model(ids)
    zero = mx.zeros(1, mx.int32)
    ours = output_head(model)(model.model(ids, cache=[PrefixCache(zero, zero, padded=False) for _ in model.layers]))
    gap = mx.abs(full.astype(mx.float32) - ours.astype(mx.float32)).max().item()
    # Both sides multiply the same float32 weights (a quantised head's float copy is float32: float_weight), so they
    # differ by summation order alone: 0 on SmolLM2's 49,152 x 576 8-bit head (logits up to 33), ~1e-6 of the largest
    # logit for MLX's quantised matmul against float BLAS. 1e-4 of it leaves a 100x margin over that and refuses
    # what changes the arithmetic (a logit scale or softcap; float16-rounded weights moved SmolLM2's logits by 0.042,
    # 1.3e-3 of its largest).
    if not math.isfinite(gap) or gap > 1e-4 * max(1.0, mx.abs(full).max().item()):
        raise ArenaError(f"model type {getattr(model, 'model_type', '?')} does not apply its output head as "
                         f"lm_head(model(x)) or embed_tokens.as_linear(model(x)) (max gap {gap:.3g}): "
                         "arena's head-only scoring would be wrong for it")
