"""A GGUF's byte-level BPE vocabulary as tokenizer.json (the ``tokenizers`` library) and its tokenizer_config.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.errors import ArenaError

TOKENIZER_MODELS = ("gpt2",)
CONTROL = 3  # llama.cpp's token type of a control token (<|im_start|>, <|endoftext|>): special, never split
USER_DEFINED = 4  # an added token matched whole but not special
# llama.cpp's pre-tokenizer names (tokenizer.ggml.pre) by how they split text before the byte-level merges: the GPT-2
# regex alone, each digit on its own first (llama.cpp's starcoder group, SmolLM's), or Llama 3's regex.
_GPT2 = ("default", "gpt2")
_DIGITS = ("smollm", "starcoder", "refact", "codeshell", "command-r", "exaone", "minerva")
_LLAMA3 = ("llama3", "llama-v3", "llama-bpe", "smaug-bpe", "falcon3", "dbrx")
PRE_TOKENIZERS = _GPT2 + _DIGITS + _LLAMA3
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _text(metadata: dict[str, Any], key: str, default: Any = None) -> Any:
    value = metadata.get(key, default)
    return value.item() if hasattr(value, "item") else value


def pre_tokenizer(kind: str) -> Any:
    """The ``tokenizers`` pre-tokenizer for llama.cpp's ``tokenizer.ggml.pre`` name."""
    from tokenizers import Regex, pre_tokenizers

    if kind in _GPT2:
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if kind in _DIGITS:
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    if kind in _LLAMA3:
        return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(_LLAMA3_SPLIT), behavior="isolated"),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    raise ArenaError(f"GGUF pre-tokenizer tokenizer.ggml.pre = {kind!r} is not supported; supported: "
                     f"{', '.join(PRE_TOKENIZERS)}")


def build_tokenizer(metadata: dict[str, Any]) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` from tokenizer.ggml.tokens/merges/token_type/pre."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, processors

    model = _text(metadata, "tokenizer.ggml.model", "?")
    if model not in TOKENIZER_MODELS:
        raise ArenaError(f"GGUF tokenizer tokenizer.ggml.model = {model!r} is not supported; supported: "
                         f"{', '.join(TOKENIZER_MODELS)} (byte-level BPE)")
    tokens = list(metadata["tokenizer.ggml.tokens"])
    merges = [tuple(merge.split(" ", 1)) for merge in metadata.get("tokenizer.ggml.merges", [])]
    raw = metadata.get("tokenizer.ggml.token_type")
    types = [int(t) for t in (raw.tolist() if hasattr(raw, "tolist") else raw)] if raw is not None else []
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizer(_text(metadata, "tokenizer.ggml.pre", "default"))
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, kind in zip(tokens, types, strict=False) if kind == CONTROL])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False)
                          for t, kind in zip(tokens, types, strict=False) if kind == USER_DEFINED])
    bos = _token(metadata, tokens, "bos")
    if bool(_text(metadata, "tokenizer.ggml.add_bos_token", False)) and bos is not None:
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tokens.index(bos))])
    else:
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def _token(metadata: dict[str, Any], tokens: list[str], which: str) -> str | None:
    value = _text(metadata, f"tokenizer.ggml.{which}_token_id")
    return None if value is None or not 0 <= int(value) < len(tokens) else tokens[int(value)]


def write_tokenizer(metadata: dict[str, Any], out_dir: Path, max_length: int) -> None:
    """Write tokenizer.json and tokenizer_config.json (the GGUF's chat template, bos/eos/pad) into ``out_dir``."""
    tokenizer = build_tokenizer(metadata)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    tokens = list(metadata["tokenizer.ggml.tokens"])
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": _token(metadata, tokens, "bos"),
        "eos_token": _token(metadata, tokens, "eos"),
        "pad_token": _token(metadata, tokens, "padding"),
        "unk_token": None,
        "add_bos_token": bool(_text(metadata, "tokenizer.ggml.add_bos_token", False)),
        "model_max_length": max_length,
        "clean_up_tokenization_spaces": False,
    }
    template = _text(metadata, "tokenizer.chat_template")
    if template:
        config["chat_template"] = template
    atomic_write_json(out_dir / "tokenizer_config.json", config)
