"""A quantised model directory's float32 copy (the same values, dequantised) for serving through mlx_lm.server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir
from arena.core.pins import model_pin, write_meta

# The tokenizer and template files a served model needs beside its weights.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


def float_weights(model: Any) -> dict[str, Any]:
    """Every parameter of ``model``, each quantised linear or embedding replaced by its float32 dequantised weight
    (scales and biases cast to float32 first, so the values are exactly ``scale * q + bias``)."""
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    weights = dict(tree_flatten(model.parameters()))
    for name, module in model.named_modules():
        if isinstance(module, nn.QuantizedLinear | nn.QuantizedEmbedding):
            biases = module.get("biases")
            weights[f"{name}.weight"] = mx.dequantize(
                module["weight"], module["scales"].astype(mx.float32),
                None if biases is None else biases.astype(mx.float32), group_size=module.group_size, bits=module.bits)
            weights.pop(f"{name}.scales")
            weights.pop(f"{name}.biases", None)
    return dict(sorted(weights.items()))


def dequantised_copy(base: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write ``out_dir``: ``base``'s config without its quantization, its tokenizer files and float32 weights.

    MLX's x86 quantised matmul is ~46x slower than float BLAS (``arena.players.floatcopy``), so mlx_lm.server on a
    4-bit directory takes minutes a reply on a CPU; this copy is the same model at float speed. Returns the meta."""
    import mlx.core as mx

    from arena.players.mlx import load_model

    base = Path(base)
    model, _ = load_model(base)
    with atomic_dir(out_dir) as tmp:
        mx.save_safetensors(str(tmp / "model.safetensors"), float_weights(model))
        config = json.loads((base / "config.json").read_text(encoding="utf-8"))
        config.pop("quantization", None)
        config.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        for name in TOKENIZER_FILES:
            if (base / name).is_file():
                shutil.copy(base / name, tmp / name)
        base_meta = json.loads((base / "meta.json").read_text(encoding="utf-8"))
        meta = write_meta(tmp, inputs={"base": base_meta["digest"]}, config={"dtype": "float32"},
                          pin=model_pin(tmp))
    return meta
