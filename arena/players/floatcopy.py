"""Float32 copies of a quantised model's projections on the CPU, so QLoRA trains and plays through float BLAS."""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import mlx.nn as nn

from arena.players.fused import layer_parts
from arena.players.hostmath import HOST_DEQUANT_BYTES, LINEAR_NAMES


def dequantised(linear: nn.QuantizedLinear) -> mx.array:
    """An affine-quantised linear's weight in float32: ``scale * q + bias`` computed in float32, the scales cast
    first (a GGUF's float16 scales dequantised in float16 round every weight to 11 bits: players/head.py)."""
    biases = linear.get("biases")
    return mx.dequantize(linear["weight"], linear["scales"].astype(mx.float32),
                         None if biases is None else biases.astype(mx.float32), group_size=linear.group_size,
                         bits=linear.bits)


def _slots(model: Any) -> list[tuple[Any, str]]:
    """Each attention/MLP projection's ``(parent, name)``, looking through a LoRA wrapper to the linear it wraps."""
    slots = []
    for part in layer_parts(model):
        for name in LINEAR_NAMES:
            child = part.get(name)
            if child is not None and "lora_a" in child and "linear" in child:
                slots.append((child, "linear"))
            elif child is not None:
                slots.append((part, name))
    return slots


def float_projections(model: Any) -> int:
    """On an MLX CPU device, replace each affine-quantised projection of the model's layers (a LoRA adapter's base
    included) by a frozen float32 ``nn.Linear`` holding the same weights dequantised, while the copies fit
    ``HOST_DEQUANT_BYTES``; return how many were replaced.

    Why: MLX 0.32's x86 quantised matmul is ~46x slower than float BLAS (a [3660, 576] x [576, 1536] product: 3.06 s
    vs 0.066 s of CPU), and autograd runs through it, so a QLoRA step on SmolLM2-135M's 4-bit weights would take
    minutes. The weights are the shipped 4-bit values either way; only the storage of the frozen base changes (0.42
    GB for SmolLM2), never the adapter, which alone is saved. A 4B model's copies (16 GB) stay quantised.
    """
    if mx.default_device() != mx.cpu:
        return 0
    quantised = [(parent, name) for parent, name in _slots(model)
                 if type(parent[name]) is nn.QuantizedLinear and parent[name].mode == "affine"]
    size = sum(4 * parent[name].weight.shape[0] * parent[name].scales.shape[-1] * parent[name].group_size
               for parent, name in quantised)
    if not quantised or size > HOST_DEQUANT_BYTES:
        return 0
    for parent, name in quantised:
        old = parent[name]
        weight = dequantised(old)
        new = nn.Linear(weight.shape[1], weight.shape[0], bias="bias" in old)
        new.weight = weight
        if "bias" in old:
            new.bias = old["bias"].astype(mx.float32)
        new.freeze()
        mx.eval(new.parameters())
        setattr(parent, name, new)
    return len(quantised)
