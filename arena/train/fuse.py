"""fuse@r: a round's trained weights (full) or LoRA adapter as a standalone, pinned model directory.

A float model's adapter is merged into its weights. A quantised model's is not (option "keep the adapter"): merging
means dequantise, add, re-quantise, and re-quantising rounds an update smaller than a quantisation step back to the
old weights (mlx-lm's fuse onto a quantised base is known to drop adapters this way). Its snapshot is the quantised
weights it was trained on plus the adapter, loaded as such (pin quant ``q4+lora``): exactly the trained policy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir
from arena.core.errors import ArenaError
from arena.core.hashing import digest_file, digest_path
from arena.core.pins import ADAPTER_WEIGHTS, model_pin, write_meta
from arena.train.lora import ADAPTER_CONFIG, is_quantised, weights_digest

WEIGHTS = "model.safetensors"
# Written by a training round with no data to learn from: the round keeps the previous weights, explicitly.
NO_UPDATE = "no_update.json"


def _copy_non_weights(source: Path, dest: Path) -> None:
    """Config, tokenizer and template files (an adapter's config too), never meta.json or weights."""
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


def lookahead(model: Any, start: Any, alpha: float) -> None:
    """Move ``model``'s weights back to ``start + alpha * (weights - start)`` (Lookahead's slow-weight step; 1: none).

    In a game, the gradient field rotates around an equilibrium, so the fast weights of many steps overshoot and
    the last iterate cycles; a slow step a fraction ``alpha`` of the way damps the rotation (Lookahead-minimax).
    """
    import mlx.core as mx
    from mlx.utils import tree_map

    if alpha != 1.0:
        model.update(tree_map(lambda s, f: s + alpha * (f - s), start, model.parameters()))
        mx.eval(model.parameters())


def _fuse_lora(previous: Path, adapter: Path, out: Path) -> None:
    import mlx_lm
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model, _ = mlx_lm.load(str(previous))
    settings = json.loads((adapter / "adapter_config.json").read_text())
    model.freeze()
    linear_to_lora_layers(model, settings["num_layers"], settings["lora_parameters"])
    model.load_weights(str(adapter / "adapters.safetensors"), strict=False)
    save_fused(model, out / WEIGHTS)


def _copy_weights(source: Path, dest: Path) -> None:
    """The model's weights, and the adapter a quantised snapshot carries."""
    for weights in sorted(source.glob("model*.safetensors")):
        shutil.copy2(weights, dest / weights.name)
    if (source / ADAPTER_WEIGHTS).exists():
        shutil.copy2(source / ADAPTER_WEIGHTS, dest / ADAPTER_WEIGHTS)


def _keep_adapter(previous: Path, adapter: Path, out: Path) -> None:
    """A quantised snapshot: the quantised weights the adapter was trained over, and the adapter beside them."""
    settings = json.loads((adapter / ADAPTER_CONFIG).read_text())
    if settings.get("base_weights") != weights_digest(previous):
        raise ArenaError(f"{adapter} was trained over other weights than {previous}'s quantised ones "
                         f"(base_weights {str(settings.get('base_weights'))[:16]} vs "
                         f"{weights_digest(previous)[:16]}); rerun its train step")
    for weights in sorted(previous.glob("model*.safetensors")):
        shutil.copy2(weights, out / weights.name)
    shutil.copy2(adapter / ADAPTER_WEIGHTS, out / ADAPTER_WEIGHTS)
    shutil.copy2(adapter / ADAPTER_CONFIG, out / ADAPTER_CONFIG)


def _adapter_changes_nothing(previous: Path, snapshot: Path) -> bool:
    """Whether a kept adapter is the previous snapshot's own, or all-zero (it would leave the policy unchanged)."""
    import mlx.core as mx

    if (previous / ADAPTER_WEIGHTS).exists() and \
            digest_file(previous / ADAPTER_WEIGHTS) == digest_file(snapshot / ADAPTER_WEIGHTS):
        return True
    weights = mx.load(str(snapshot / ADAPTER_WEIGHTS))
    return not any(bool(mx.any(value != 0).item()) for name, value in weights.items() if name.endswith("lora_b"))


def _update_lost(previous: Path, snapshot: Path) -> bool:
    if (snapshot / ADAPTER_WEIGHTS).exists():
        return _adapter_changes_nothing(previous, snapshot)
    return digest_file(snapshot / WEIGHTS) == digest_file(previous / WEIGHTS)


def fuse_round(previous: str | Path, trained: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write the round's snapshot: the previous snapshot's config and tokenizer with the new weights.

    A LoRA adapter trained over quantised weights is kept beside them (see the module docstring); over float
    weights it is merged. A round that had nothing to learn from says so in ``NO_UPDATE`` (with its reason);
    only then is the previous snapshot carried over unchanged, and the reason is recorded in its meta.json.
    """
    previous, trained = Path(previous), Path(trained)
    with atomic_dir(out_dir) as tmp:
        _copy_non_weights(previous, tmp)
        unchanged = None
        if (trained / ADAPTER_WEIGHTS).exists() and is_quantised(previous):
            _keep_adapter(previous, trained, tmp)
        elif (trained / ADAPTER_WEIGHTS).exists():
            _fuse_lora(previous, trained, tmp)
        elif (trained / "weights.safetensors").exists():
            shutil.copy2(trained / "weights.safetensors", tmp / WEIGHTS)
        elif (trained / NO_UPDATE).exists():
            unchanged = json.loads((trained / NO_UPDATE).read_text())["reason"]
            _copy_weights(previous, tmp)
        else:
            raise ArenaError(f"{trained} holds neither adapters.safetensors nor weights.safetensors "
                             f"nor {NO_UPDATE}; rerun train")
        # Known upstream failure mode: a fuse that silently drops the update leaves the old weights.
        if unchanged is None and _update_lost(previous, tmp):
            raise ArenaError(f"fusing {trained} into {previous} left the weights unchanged; the update was lost")
        return write_meta(tmp, inputs={"previous": digest_path(previous), "trained": digest_path(trained)},
                          config={"unchanged": unchanged} if unchanged else None, pin=model_pin(tmp))


def copy_snapshot(source: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Round 0's snapshot: the base model's files under the snapshot path every round reads from."""
    source = Path(source)
    with atomic_dir(out_dir) as tmp:
        _copy_non_weights(source, tmp)
        _copy_weights(source, tmp)
        return write_meta(tmp, inputs={"base": digest_path(source)}, pin=model_pin(tmp))
