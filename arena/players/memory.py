"""The one memory formula: a decoder's shapes (from config.json or a loaded model) and the bytes they imply."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena.core.errors import ArenaError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class ModelShape:
    """The shapes that set a decoder's memory (config.json names in brackets)."""

    layers: int               # num_hidden_layers
    hidden: int               # hidden_size
    heads: int                # num_attention_heads
    kv_heads: int             # num_key_value_heads
    head_dim: int             # head_dim (default hidden / heads)
    intermediate: int         # intermediate_size
    vocab: int                # vocab_size
    dtype_bytes: int          # torch_dtype: float32 4, bfloat16/float16 2
    tied: bool = False        # tie_word_embeddings
    bits: int | None = None   # quantization.bits (None: not quantised)
    group_size: int = 64      # quantization.group_size

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelShape:
        quant = config.get("quantization") or config.get("quantization_config") or {}
        heads = int(config["num_attention_heads"])
        return cls(layers=int(config["num_hidden_layers"]), hidden=int(config["hidden_size"]), heads=heads,
                   kv_heads=int(config.get("num_key_value_heads") or heads),
                   head_dim=int(config.get("head_dim") or config["hidden_size"] // heads),
                   intermediate=int(config.get("intermediate_size") or 4 * config["hidden_size"]),
                   vocab=int(config["vocab_size"]),
                   dtype_bytes=DTYPE_BYTES.get(str(config.get("torch_dtype", "float32")), 4),
                   tied=bool(config.get("tie_word_embeddings", False)), bits=quant.get("bits"),
                   group_size=int(quant.get("group_size", 64)))

    # ------------------------------------------------------------------------------------- a pass, per token

    @property
    def kv_token_bytes(self) -> int:
        """One token's keys and values in every layer."""
        return self.layers * 2 * self.kv_heads * self.head_dim * self.dtype_bytes

    def token_bytes(self, training: bool = False, context: int = 0) -> int:
        """Bytes one token holds in a pass: its keys and values plus a few hidden-size activations (in training,
        every layer's activations kept for the backward pass, attention weights over ``context`` keys included)."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        per_layer = 5 * self.hidden + 2 * q + 2 * kv + 3 * self.intermediate + self.heads * context
        live = self.layers * per_layer if training else 4 * self.hidden
        return self.kv_token_bytes + live * self.dtype_bytes

    @property
    def head_weight(self) -> int:
        """Tokens one head row counts as: its float32 logits and log-probabilities over the vocabulary."""
        return max(1, math.ceil(2 * 4 * self.vocab / self.token_bytes()))

    def pass_bytes(self, tokens: int, training: bool = False, context: int = 0) -> int:
        """A pass of ``tokens`` budget tokens (head rows counted at ``head_weight`` each, so they are inside)."""
        return tokens * self.token_bytes(training, context)

    # ------------------------------------------------------------------------------------- weights, training state

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

    def training_state_bytes(self, lora_layers: int, lora_rank: int) -> int:
        """float32 trained parameters, their gradients and Adam's two moments: a LoRA's, or (0 layers) all."""
        trained = self.lora_parameters(lora_layers, lora_rank) if lora_layers else self.parameters
        return trained * 4 * 4


def model_dtype(model: Any) -> Any:
    """The float dtype of a loaded model's weights (a quantised model's: its scales'), float32 when it has none."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    floats = [v.dtype for _, v in tree_flatten(model.parameters()) if mx.issubdtype(v.dtype, mx.floating)]
    return floats[0] if floats else mx.float32


def model_shape(model: Any) -> ModelShape:
    """The shapes of a loaded mlx-lm model, from its args (qwen2/qwen3/llama-style field names)."""
    import mlx.nn as nn

    args = getattr(model, "args", None)
    try:
        hidden, heads = args.hidden_size, args.num_attention_heads
        config = {"num_hidden_layers": len(model.layers), "hidden_size": hidden, "num_attention_heads": heads,
                  "num_key_value_heads": getattr(args, "num_key_value_heads", None),
                  "head_dim": getattr(args, "head_dim", None),
                  "intermediate_size": getattr(args, "intermediate_size", None), "vocab_size": args.vocab_size,
                  "tie_word_embeddings": getattr(args, "tie_word_embeddings", False)}
    except AttributeError as error:
        raise ArenaError(f"cannot read the shapes of model type {getattr(model, 'model_type', '?')} ({error}): "
                         "arena scores mlx-lm models whose args name hidden_size, num_attention_heads and vocab_size"
                         ) from error
    quantized = [m for _, m in model.named_modules() if isinstance(m, nn.QuantizedLinear | nn.QuantizedEmbedding)]
    shape = ModelShape.from_config(config)
    return ModelShape(**{**shape.__dict__, "dtype_bytes": model_dtype(model).size,
                         "bits": quantized[0].bits if quantized else None,
                         "group_size": quantized[0].group_size if quantized else 64})


def budget_note(shape: ModelShape, max_tokens: int, key: str, training: bool = False,
                held: ModelShape | None = None, kept_tokens: int = 0, extra_weights: float = 0.0,
                kept_token_bytes: int | None = None) -> str:
    """One line: the bound a scoring budget puts on a pass's memory for this model (``pass_bytes``).

    ``held``: the shape with the dtype a pass really holds (``shape`` counts the budget: its ``head_weight`` is what
    a scored row counts as); ``kept_tokens``: the keys and values a player keeps across turns, bounded in tokens too;
    ``extra_weights``: bytes beside the weights (float32 copies of quantised projections on the CPU)."""
    held = held or shape
    per_token = held.token_bytes(training)
    note = (f"memory bound: {key} = {max_tokens} tokens, so a {'training' if training else 'scoring'} pass stays "
            f"under ~{held.pass_bytes(max_tokens, training) / 2**20:,.0f} MiB ({per_token / 1024:.1f} KiB a token: "
            f"{held.layers} layers x {held.kv_heads} kv heads x {held.head_dim} head dim, "
            f"{held.dtype_bytes}-byte {'activations kept' if training else 'values'}; a scored position's "
            f"{shape.vocab:,}-token log-probs count as {shape.head_weight} tokens)")
    if kept_tokens:
        per_kept = kept_token_bytes or held.kv_token_bytes
        dtype = f", {per_kept // (2 * held.layers * held.kv_heads * held.head_dim)}-byte values" if (
            per_kept != held.kv_token_bytes) else ""
        note += (f", the keys and values kept across turns under ~{kept_tokens * per_kept / 2**20:,.0f} MiB "
                 f"({kept_tokens} tokens{dtype})")
    weights = shape.weights_bytes() + extra_weights
    copies = f" ({extra_weights / 2**20:,.0f} MiB of them float32 copies)" if extra_weights else ""
    return f"{note}, the weights ~{weights / 2**20:,.0f} MiB{copies}"


_SAID: set[str] = set()


def say_once(key: str, line: str) -> None:
    """Print ``line`` to stderr the first time ``key`` is said in this process: a stage (one process) builds its
    model several times (rollouts, pool, evaluation) and states each bound once."""
    if key not in _SAID:
        _SAID.add(key)
        print(line, file=sys.stderr)


def machine_memory_bytes() -> int:
    """This machine's physical memory: the bound no model's weights (and training state) may pass."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def fits_note(need: float, what: str) -> str | None:
    """None when ``need`` bytes fit this machine's memory, else the clause saying by how much they do not."""
    have = machine_memory_bytes()
    if need <= have:
        return None
    return f"{what} ~{need / 1e9:,.1f} GB (arena.players.memory) but this machine has {have / 1e9:,.1f} GB of memory"


def require_loadable(config: Mapping[str, Any], where: str) -> None:
    """Raise an ArenaError, before any weight is read, when a config.json's weights cannot fit this machine."""
    try:
        shape = ModelShape.from_config(config)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
        return  # not a shape this formula reads: the loader reports it
    if min(shape.layers, shape.hidden, shape.heads, shape.vocab, shape.intermediate) < 1:
        raise ArenaError(f"{where}: config.json has a size below 1 ({shape}); the model directory is damaged")
    note = fits_note(shape.weights_bytes(), "its weights need")
    if note is not None:
        sizes = ", ".join(f"{key} = {config.get(key)}" for key in ("num_hidden_layers", "hidden_size",
                                                                   "intermediate_size", "vocab_size"))
        raise ArenaError(f"{where}: config.json's {sizes}: {note}; not loaded")
