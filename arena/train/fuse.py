"""fuse@r: merge a round's trained weights (full) or LoRA adapter into a standalone, pinned model directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir
from arena.core.errors import ArenaError
from arena.core.hashing import digest_file, digest_path
from arena.core.pins import model_pin, write_meta

WEIGHTS = "model.safetensors"
# Written by a training round with no data to learn from: the round keeps the previous weights, explicitly.
NO_UPDATE = "no_update.json"


def _copy_non_weights(source: Path, dest: Path) -> None:
    for item in sorted(source.iterdir()):
        if item.is_file() and item.suffix in {".json", ".jinja"} and item.name != "meta.json" \
                and not item.name.startswith("model.safetensors"):
            shutil.copy2(item, dest / item.name)


def save_fused(model: Any, out_file: str | Path) -> None:
    """Merge every LoRA layer of ``model`` into its base weights and save the plain weights."""
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    fused = [(name, module.fuse()) for name, module in model.named_modules() if hasattr(module, "fuse")]
    model.update_modules(tree_unflatten(fused))
    mx.save_safetensors(str(out_file), dict(sorted(tree_flatten(model.parameters()))), metadata={"format": "mlx"})


def _fuse_lora(previous: Path, adapter: Path, out: Path) -> None:
    import mlx_lm
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model, _ = mlx_lm.load(str(previous))
    settings = json.loads((adapter / "adapter_config.json").read_text())
    model.freeze()
    linear_to_lora_layers(model, settings["num_layers"], settings["lora_parameters"])
    model.load_weights(str(adapter / "adapters.safetensors"), strict=False)
    save_fused(model, out / WEIGHTS)


def fuse_round(previous: str | Path, trained: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write the round's snapshot: the previous snapshot's config and tokenizer with the new weights.

    A round that had nothing to learn from says so in ``NO_UPDATE`` (with its reason); only then is the
    previous snapshot carried over unchanged, and the reason is recorded in the snapshot's meta.json.
    """
    previous, trained = Path(previous), Path(trained)
    with atomic_dir(out_dir) as tmp:
        _copy_non_weights(previous, tmp)
        unchanged = None
        if (trained / "adapters.safetensors").exists():
            _fuse_lora(previous, trained, tmp)
        elif (trained / "weights.safetensors").exists():
            shutil.copy2(trained / "weights.safetensors", tmp / WEIGHTS)
        elif (trained / NO_UPDATE).exists():
            unchanged = json.loads((trained / NO_UPDATE).read_text())["reason"]
            shutil.copy2(previous / WEIGHTS, tmp / WEIGHTS)
        else:
            raise ArenaError(f"{trained} holds neither adapters.safetensors nor weights.safetensors "
                             f"nor {NO_UPDATE}; rerun train")
        # Known upstream failure mode: a fuse that silently drops the update leaves the old weights.
        if unchanged is None and digest_file(tmp / WEIGHTS) == digest_file(previous / WEIGHTS):
            raise ArenaError(f"fusing {trained} into {previous} left the weights unchanged; the update was lost")
        return write_meta(tmp, inputs={"previous": digest_path(previous), "trained": digest_path(trained)},
                          config={"unchanged": unchanged} if unchanged else None, pin=model_pin(tmp))


def copy_snapshot(source: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Round 0's snapshot: the base model's files under the snapshot path every round reads from."""
    source = Path(source)
    with atomic_dir(out_dir) as tmp:
        _copy_non_weights(source, tmp)
        for weights in sorted(source.glob("model*.safetensors")):
            shutil.copy2(weights, tmp / weights.name)
        return write_meta(tmp, inputs={"base": digest_path(source)}, pin=model_pin(tmp))
