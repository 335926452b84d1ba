"""Memory a model needs, from its config.json alone, by the players' one formula (arena.players.memory)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.core.config import ConfigError
from arena.core.pins import read_model_config
from arena.players.memory import ModelShape, fits_note

GB = 1e9
# Tokens a pass is assumed to run when no budget is given (the stage logs).
PASS_TOKENS = 4096
# Attention context assumed for a training pass's saved attention weights when none is given.
CONTEXT = 512


def memory_report(config: Mapping[str, Any], tokens: int, lora_layers: int = 0, lora_rank: int = 8,
                  context: int = CONTEXT) -> dict[str, float]:
    """Gigabytes a model needs: weights, the training state, one pass of ``tokens`` budget tokens, the turn store.

    The training state is float32 trained parameters, their gradients and Adam's two moments: a LoRA's (rank
    ``lora_rank`` on the last ``lora_layers`` layers) or, with ``lora_layers`` 0, every parameter's (full).
    A pass's bytes are ``ModelShape.pass_bytes``: the budget counts every scored head row as ``head_weight``
    tokens, so the same number bounds the scoring engine's passes (``player.max_batch_tokens``) and training's
    (``train.max_batch_tokens``); a player also keeps up to one pass's worth of keys and values across turns.
    """
    shape = ModelShape.from_config(config)
    return {
        "parameters_millions": shape.parameters / 1e6,
        "weights_gb": shape.weights_bytes() / GB,
        "training_state_gb": shape.training_state_bytes(lora_layers, lora_rank) / GB,
        "scoring_pass_gb": shape.pass_bytes(tokens) / GB,
        "turn_cache_gb": tokens * shape.kv_token_bytes / GB,
        "training_pass_gb": shape.pass_bytes(tokens, training=True, context=context) / GB,
        "tokens": tokens,
    }


def training_bound_gb(report: Mapping[str, float]) -> float:
    """What a training step may add to a process: weights, the training state and one training pass."""
    return report["weights_gb"] + report["training_state_gb"] + report["training_pass_gb"]


def memory_note(model_dir: str | Path, tokens: int = PASS_TOKENS, lora_layers: int = 0, lora_rank: int = 8) -> str:
    """One stage-log line: the model's size and what scoring and training a pass of ``tokens`` tokens need."""
    config = read_model_config(model_dir)
    r = memory_report(config, tokens, lora_layers, lora_rank)
    quant = f"q{config.get('quantization', {}).get('bits')}" if config.get("quantization") else "float"
    return (f"memory bound for {model_dir} ({r['parameters_millions']:.1f}M parameters, {quant}), from its shapes "
            f"(arena.players.memory), not measured: a training step stays under {training_bound_gb(r):.2f} GB = "
            f"weights {r['weights_gb']:.2f} GB + {r['training_state_gb']:.3f} GB {'LoRA' if lora_layers else 'full'} "
            f"training state + a full pass of {tokens} tokens {r['training_pass_gb']:.2f} GB; scoring a full pass "
            f"adds at most {r['scoring_pass_gb']:.2f} GB (+{r['turn_cache_gb']:.2f} GB of keys and values kept across "
            "turns)")


# base: keys -> config.json names, for the shapes built from a seed (embedded, standin).
_BASE_SHAPE = {"num_layers": "num_hidden_layers", "hidden_size": "hidden_size", "num_heads": "num_attention_heads",
               "num_kv_heads": "num_key_value_heads", "intermediate_size": "intermediate_size",
               "vocab_size": "vocab_size"}


def check_base_fits(base: Any, train: Any) -> None:
    """Refuse, before any work, a base model whose weights and training state cannot fit this machine's memory
    (``base:`` shapes built from a seed, or a local directory's config.json; ``train:`` sets the training state)."""
    lora = (train.lora_layers, train.lora_rank) if train.method == "lora" else (0, 8)
    source = Path(str(base.source))
    if base.source in ("embedded", "standin"):
        config = {json_key: getattr(base, key) for key, json_key in _BASE_SHAPE.items()}
        defaults = type(base)()
        key = max(_BASE_SHAPE, key=lambda k: getattr(base, k) / max(1, getattr(defaults, k)))
        named = f"base.{key} = {getattr(base, key)}"
    elif (source / "config.json").is_file():
        config, named = read_model_config(source), f"base.source = {base.source!r}"
    else:
        return
    try:
        report = memory_report(config, 1, *lora)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return  # a config.json this formula cannot read: loading it reports why
    need = (report["weights_gb"] + report["training_state_gb"]) * GB
    note = fits_note(need, f"its weights and {train.method} training state need")
    if note is not None:
        raise ConfigError(f"{named} is invalid: {note}; shrink the base model")
