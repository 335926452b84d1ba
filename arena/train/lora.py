"""The LoRA layout GRPO and ReST rounds share: adapters attached by mlx-lm, and the adapter_config.json fuse reads."""

from __future__ import annotations

from typing import Any

from arena.train.config import RestConfig, TrainConfig


def lora_parameters(config: TrainConfig | RestConfig) -> dict[str, Any]:
    """mlx-lm's LoRA parameters for ``config``'s rank and scale (no dropout: training stays deterministic)."""
    return {"rank": config.lora_rank, "scale": config.lora_scale, "dropout": 0.0}


def adapter_config(config: TrainConfig | RestConfig) -> dict[str, Any]:
    """The adapter_config.json fuse@r reads: the LoRA layout only, no paths (so the bytes never depend on where)."""
    return {"fine_tune_type": "lora", "num_layers": config.lora_layers, "lora_parameters": lora_parameters(config)}


def attach_lora(model: Any, config: TrainConfig | RestConfig) -> None:
    """Freeze the model and put LoRA adapters on its last ``config.lora_layers`` layers (mlx-lm's own helper)."""
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model.freeze()
    linear_to_lora_layers(model, config.lora_layers, lora_parameters(config))
