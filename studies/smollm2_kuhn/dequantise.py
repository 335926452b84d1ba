"""The cold SmolLM2 for mlx_lm.server: the imported 4-bit model's weights dequantised into float32, same values.

MLX 0.32's x86 quantised matmul is ~46x slower than float BLAS (arena/players/floatcopy.py), so a server on the
4-bit directory took minutes a reply on this machine; the float32 copy holds exactly the shipped 4-bit values
(``scale * q + bias`` in float32, scales cast first: ``arena.train.dequantise.float_weights``), so it is the same
model, served at float speed. The real-model pipeline's `cold` stage writes the same copy with its meta.json
(``arena.train.dequantise.dequantised_copy``); this script also takes a directory without one.

Usage: python studies/smollm2_kuhn/dequantise.py BASE_DIR OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import mlx.core as mx


def dequantise(base: Path, out: Path) -> None:
    """Write OUT: BASE's config without its quantization, its tokenizer files, float32 weights."""
    from arena.players.mlx import load_model
    from arena.train.dequantise import float_weights

    model, _ = load_model(base)
    out.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(out / "model.safetensors"), float_weights(model))
    config = json.loads((base / "config.json").read_text())
    config.pop("quantization", None), config.pop("quantization_config", None)
    (out / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(base / name, out / name)


if __name__ == "__main__":
    dequantise(Path(sys.argv[1]), Path(sys.argv[2]))
