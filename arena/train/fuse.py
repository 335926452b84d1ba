"""fuse@r: merge a round's trained weights (full) or LoRA adapter into a standalone, pinned model directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from arena.artifacts import atomic_dir
from arena.errors import ArenaError
from arena.hashing import digest_file, digest_path
from arena.pins import model_pin, write_meta

WEIGHTS = "model.safetensors"


def _copy_non_weights(source: Path, dest: Path) -> None:
    for item in sorted(source.iterdir()):
        if item.is_file() and item.suffix in {".json", ".jinja"} and item.name != "meta.json" \
                and not item.name.startswith("model.safetensors"):
            shutil.copy2(item, dest / item.name)


def _fuse_lora(previous: Path, adapter: Path, out: Path) -> None:
    import mlx.core as mx
    import mlx_lm
    from mlx.utils import tree_flatten, tree_unflatten
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model, _ = mlx_lm.load(str(previous))
    settings = json.loads((adapter / "adapter_config.json").read_text())
    model.freeze()
    linear_to_lora_layers(model, settings["num_layers"], settings["lora_parameters"])
    model.load_weights(str(adapter / "adapters.safetensors"), strict=False)
    fused = [(name, module.fuse()) for name, module in model.named_modules() if hasattr(module, "fuse")]
    model.update_modules(tree_unflatten(fused))
    mx.save_safetensors(str(out / WEIGHTS), dict(sorted(tree_flatten(model.parameters()))),
                        metadata={"format": "mlx"})


def fuse_round(previous: str | Path, trained: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write the round's snapshot: the previous snapshot's config and tokenizer with the new weights."""
    previous, trained = Path(previous), Path(trained)
    with atomic_dir(out_dir) as tmp:
        _copy_non_weights(previous, tmp)
        if (trained / "adapters.safetensors").exists():
            _fuse_lora(previous, trained, tmp)
        elif (trained / "weights.safetensors").exists():
            shutil.copy2(trained / "weights.safetensors", tmp / WEIGHTS)
        else:
            raise ArenaError(f"{trained} holds neither adapters.safetensors nor weights.safetensors; rerun train")
        # Known upstream failure mode: a fuse that silently drops the update leaves the old weights.
        if digest_file(tmp / WEIGHTS) == digest_file(previous / WEIGHTS):
            raise ArenaError(f"fusing {trained} into {previous} left the weights unchanged; the update was lost")
        return write_meta(tmp, inputs={"previous": digest_path(previous), "trained": digest_path(trained)},
                          pin=model_pin(tmp))


def copy_snapshot(source: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Round 0's snapshot: the base model's files under the snapshot path every round reads from."""
    source = Path(source)
    with atomic_dir(out_dir) as tmp:
        _copy_non_weights(source, tmp)
        for weights in sorted(source.glob("model*.safetensors")):
            shutil.copy2(weights, tmp / weights.name)
        return write_meta(tmp, inputs={"base": digest_path(source)}, pin=model_pin(tmp))
