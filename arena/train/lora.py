"""The LoRA layout GRPO and ReST rounds share: adapters attached by mlx-lm, and the adapter_config.json fuse reads.

On a quantised model (QLoRA) a snapshot keeps its adapter beside the quantised weights it was trained on instead
of fusing it (arena.train.fuse): the next round trains that same adapter further.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arena.core.config import ConfigError
from arena.core.hashing import digest_config, digest_file
from arena.core.pins import ADAPTER_WEIGHTS, model_quant
from arena.train.config import RestConfig, TrainConfig

ADAPTER_CONFIG = "adapter_config.json"


def lora_parameters(config: TrainConfig | RestConfig) -> dict[str, Any]:
    """mlx-lm's LoRA parameters for ``config``'s rank and scale (no dropout: training stays deterministic)."""
    return {"rank": config.lora_rank, "scale": config.lora_scale, "dropout": 0.0}


def is_quantised(model_dir: str | Path) -> bool:
    """Whether the model directory's weights are quantised (its config.json says so)."""
    return not model_quant(model_dir).startswith("none")


def weights_digest(model_dir: str | Path) -> str:
    """Digest of a model directory's own weights (``model*.safetensors``), adapters left out."""
    files = sorted(Path(model_dir).glob("model*.safetensors"))
    return digest_config({path.name: digest_file(path) for path in files})


def adapter_config(config: TrainConfig | RestConfig, trained_on: str | Path | None = None) -> dict[str, Any]:
    """The adapter_config.json fuse@r reads: the LoRA layout, no paths (so the bytes never depend on where).

    An adapter trained over quantised weights (``trained_on`` is quantised) also names their digest: its snapshot
    keeps it beside exactly those weights.
    """
    layout = {"fine_tune_type": "lora", "num_layers": config.lora_layers, "lora_parameters": lora_parameters(config)}
    if trained_on is not None and is_quantised(trained_on):
        layout["base_weights"] = weights_digest(trained_on)
    return layout


def carried_layout(model_dir: str | Path) -> dict[str, Any] | None:
    """The LoRA layout of the adapter a snapshot carries (a QLoRA snapshot), or None."""
    path = Path(model_dir)
    if not (path / ADAPTER_WEIGHTS).exists() or not (path / ADAPTER_CONFIG).exists():
        return None
    settings = json.loads((path / ADAPTER_CONFIG).read_text())
    return {"num_layers": settings["num_layers"], "lora_parameters": settings["lora_parameters"]}


def _section(config: TrainConfig | RestConfig) -> str:
    return "rest" if isinstance(config, RestConfig) else "train"


def check_trainable(model_dir: str | Path, config: TrainConfig) -> None:
    """A ConfigError for full fine-tuning of a quantised model (its packed weights take no gradient)."""
    if config.method == "full" and is_quantised(model_dir):
        raise ConfigError(f"train.method = 'full' is invalid for {model_dir}: its weights are quantised "
                          f"({model_quant(model_dir)}) and cannot be trained; use train.method: lora (QLoRA) "
                          "or base.quant: none")


def attach_lora(model: Any, config: TrainConfig | RestConfig, model_dir: str | Path | None = None) -> None:
    """Freeze the model and train LoRA adapters on its last ``config.lora_layers`` layers (mlx-lm's own helper).

    A model loaded from a snapshot that carries an adapter (``model_dir``, QLoRA) trains that adapter further;
    any other gets fresh adapters.
    """
    from mlx_lm.tuner.utils import linear_to_lora_layers

    from arena.players.floatcopy import float_projections

    float_projections(model)  # QLoRA on the CPU: the frozen 4-bit base as float32 copies (float BLAS, not qmm)
    model.freeze()
    carried = carried_layout(model_dir) if model_dir is not None else None
    if carried is None:
        linear_to_lora_layers(model, config.lora_layers, lora_parameters(config))
        return
    wanted = {"num_layers": config.lora_layers, "lora_parameters": lora_parameters(config)}
    if carried != wanted:
        section = _section(config)
        raise ConfigError(f"{section}.lora_layers/lora_rank/lora_scale = {wanted} is invalid: {model_dir} carries "
                          f"an adapter with layout {carried}, which this round trains further; keep the LoRA "
                          "layout the same across rounds")
    model.unfreeze(keys=["lora_a", "lora_b"], strict=False)
