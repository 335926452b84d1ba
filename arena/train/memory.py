"""Memory a model needs, from its config.json alone: weights, a LoRA's training state, and costs per token."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.core.pins import read_model_config

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
GB = 1e9
# Tokens a pass is assumed to run when no budget is given (the stage logs).
PASS_TOKENS = 4096


@dataclass(frozen=True)
class Shape:
    """The shapes that set a decoder's memory (config.json names in brackets)."""

    layers: int          # num_hidden_layers
    hidden: int          # hidden_size
    heads: int           # num_attention_heads
    kv_heads: int        # num_key_value_heads
    head_dim: int        # head_dim (default hidden / heads)
    intermediate: int    # intermediate_size
    vocab: int           # vocab_size
    tied: bool           # tie_word_embeddings
    bits: int | None     # quantization.bits (None: not quantised)
    group_size: int      # quantization.group_size
    dtype_bytes: int     # torch_dtype: float32 4, bfloat16/float16 2

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Shape:
        quant = config.get("quantization") or config.get("quantization_config") or {}
        heads = int(config["num_attention_heads"])
        return cls(layers=int(config["num_hidden_layers"]), hidden=int(config["hidden_size"]), heads=heads,
                   kv_heads=int(config.get("num_key_value_heads", heads)),
                   head_dim=int(config.get("head_dim") or config["hidden_size"] // heads),
                   intermediate=int(config["intermediate_size"]), vocab=int(config["vocab_size"]),
                   tied=bool(config.get("tie_word_embeddings", False)), bits=quant.get("bits"),
                   group_size=int(quant.get("group_size", 64)),
                   dtype_bytes=DTYPE_BYTES.get(str(config.get("torch_dtype", "float32")), 4))

    def linears(self) -> list[tuple[int, int]]:
        """(in, out) of one layer's projections: q, k, v, o, gate, up, down (what LoRA adapts by default)."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        h, i = self.hidden, self.intermediate
        return [(h, q), (h, kv), (h, kv), (q, h), (h, i), (h, i), (i, h)]

    @property
    def matrix_parameters(self) -> int:
        """Parameters in matrices (quantised when the model is): the layers' projections and the embedding/head."""
        layer = sum(a * b for a, b in self.linears())
        return self.layers * layer + self.vocab * self.hidden * (1 if self.tied else 2)

    @property
    def parameters(self) -> int:
        """All parameters: the matrices plus the RMS norms (two per layer, q/k norms, the final one)."""
        return self.matrix_parameters + self.layers * (2 * self.hidden + 2 * self.head_dim) + self.hidden

    def weights_bytes(self) -> float:
        """Bytes of the weights: bits/8 per quantised parameter plus a scale and a bias per group, or dtype bytes."""
        norms = (self.parameters - self.matrix_parameters) * self.dtype_bytes
        if self.bits is None:
            return self.matrix_parameters * self.dtype_bytes + norms
        packed = self.matrix_parameters * self.bits / 8
        return packed + self.matrix_parameters / self.group_size * 2 * self.dtype_bytes + norms

    def lora_parameters(self, layers: int, rank: int) -> int:
        """A rank-``rank`` adapter on every projection of the last ``layers`` layers."""
        return min(layers, self.layers) * rank * sum(a + b for a, b in self.linears())

    def activation_bytes_per_token(self, context: int) -> float:
        """Saved activations of one token through every layer (for the backward pass), attention over ``context``."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        per_layer = 5 * self.hidden + 2 * q + 2 * kv + 3 * self.intermediate + self.heads * context
        return self.layers * per_layer * self.dtype_bytes


def memory_report(config: Mapping[str, Any], tokens: int, lora_layers: int = 0, lora_rank: int = 8,
                  context: int = 512) -> dict[str, float]:
    """Gigabytes a model needs: weights, the training state, and one pass of ``tokens`` tokens.

    The training state is float32 trained parameters, their gradients and Adam's two moments: a LoRA's (rank
    ``lora_rank`` on the last ``lora_layers`` layers) or, with ``lora_layers`` 0, every parameter's (full).

    Scoring keeps float32 logits and log-probabilities over the vocabulary for every position it computes
    (8 bytes x vocab a position); training also keeps their gradients and every layer's activations. ``tokens``
    is the tokens one pass runs (the scoring budget); the estimate is an upper bound for an engine that computes
    the output head only at the scored positions.
    """
    shape = Shape.from_config(config)
    trained = shape.lora_parameters(lora_layers, lora_rank) if lora_layers else shape.parameters
    logits = 8 * shape.vocab
    return {
        "parameters_millions": shape.parameters / 1e6,
        "weights_gb": shape.weights_bytes() / GB,
        "training_state_gb": trained * 4 * 4 / GB,
        "scoring_pass_gb": tokens * logits / GB,
        "training_pass_gb": tokens * (2 * logits + shape.activation_bytes_per_token(context)) / GB,
        "tokens": tokens,
    }


def memory_note(model_dir: str | Path, tokens: int = PASS_TOKENS, lora_layers: int = 0, lora_rank: int = 8) -> str:
    """One stage-log line: the model's size and what scoring and training a pass of ``tokens`` tokens need."""
    config = read_model_config(model_dir)
    r = memory_report(config, tokens, lora_layers, lora_rank)
    quant = f"q{config.get('quantization', {}).get('bits')}" if config.get("quantization") else "float"
    return (f"memory estimate for {model_dir} ({r['parameters_millions']:.1f}M parameters, {quant}): weights "
            f"{r['weights_gb']:.2f} GB; a pass of {tokens} tokens: scoring +{r['scoring_pass_gb']:.2f} GB, training "
            f"+{r['training_pass_gb']:.2f} GB (+{r['training_state_gb']:.3f} GB {'LoRA' if lora_layers else 'full'} "
            "training state) -- an upper bound "
            "(arena.train.memory)")
