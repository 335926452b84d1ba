"""The base model stage: the embedded tiny qwen2, the qwen3 stand-in, a GGUF import, or a local/hub model; quantise."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir, atomic_write_json
from arena.core.config import ConfigError, as_dict
from arena.core.pins import PinError, model_pin, read_model_config, write_meta
from arena.train.config import QUANTS, BaseConfig
from arena.train.gguf import is_gguf_source
from arena.train.memory import memory_note

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Action strings and view keywords get their own tokens so a decision's prompt stays tens of tokens
# long and every legal action of a tiny model is scored from as few positions as possible.
GAME_TOKENS = (
    "[check]", "[bet]", "[call]", "[fold]", "[raise]", "[Call]", "[Bid:",
    "card:", "history:", "board:", "mark:", "piles:", "dice:", "bid:", "you:", "opponent:", "action:",
)
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def game_corpus(seed: int, lines: int = 4000) -> list[str]:
    """Deterministic training text for the tokenizer: the words, views and actions of arena's games."""
    rng = random.Random(seed)
    cards, faces = "JQK", "123456"
    corpus = []
    for _ in range(lines):
        kind = rng.randrange(4)
        if kind == 0:
            history = "".join(rng.choice("pb") for _ in range(rng.randrange(3)))
            action = rng.choice(("[check]", "[bet]", "[call]", "[fold]"))
            corpus.append(f"card: {rng.choice(cards)}\nhistory: {history}\naction: {action}")
        elif kind == 1:
            board = "".join(rng.choice("XO.") for _ in range(9))
            corpus.append(f"board: {board[:3]}\n{board[3:6]}\n{board[6:]}\nmark: {rng.choice('XO')}\n"
                          f"action: [{rng.randrange(9)}]")
        elif kind == 2:
            piles = " ".join(str(rng.randrange(8)) for _ in range(3))
            corpus.append(f"piles: {piles}\naction: [{rng.randrange(3)} {rng.randrange(1, 8)}]")
        else:
            dice = " ".join(rng.choice(faces) for _ in range(rng.randrange(1, 6)))
            corpus.append(f"dice: {dice}\nbid: {rng.randrange(1, 10)} x {rng.choice(faces)}\n"
                          f"action: {rng.choice(('[Call]', f'[Bid: {rng.randrange(1, 10)}, {rng.choice(faces)}]'))}")
        corpus[-1] = f"<|im_start|>user\n{corpus[-1]}<|im_end|>\n<|im_start|>assistant\n"
        corpus.append("You are Player 0 in a two-player game. Your move. Valid moves: reply with one action "
                      "in square brackets. The game ends; the winner is the player with more chips.")
    return corpus


def build_tokenizer(out_dir: Path, config: BaseConfig) -> None:
    """Train a byte-level BPE tokenizer on game text and save it with a ChatML chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size - len(GAME_TOKENS),
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(game_corpus(config.seed), trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, normalized=False, single_word=False) for t in GAME_TOKENS])
    tokenizer.save(str(out_dir / "tokenizer.json"))
    write_tokenizer_config(out_dir, CHATML_TEMPLATE, config.max_position_embeddings)


def write_tokenizer_config(out_dir: Path, chat_template: str, max_length: int) -> None:
    """The tokenizer_config.json of a model built here: a fast tokenizer, ChatML's eos and pad, ``chat_template``."""
    atomic_write_json(out_dir / "tokenizer_config.json", {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": chat_template,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": max_length,
        "clean_up_tokenization_spaces": False,
    })


def model_config(config: BaseConfig) -> dict[str, Any]:
    """An mlx-lm qwen2 config.json for the embedded model."""
    return {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "intermediate_size": config.intermediate_size,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "rms_norm_eps": 1.0e-6,
        "vocab_size": config.vocab_size,
        "max_position_embeddings": config.max_position_embeddings,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "eos_token_id": SPECIAL_TOKENS.index("<|im_end|>"),
        "torch_dtype": "float32",
    }


def build_embedded(out_dir: str | Path, config: BaseConfig) -> Path:
    """Write a seeded, random-initialised tiny qwen2 model directory; same config -> same bytes."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(out, config)
    return write_seeded_model(out, model_config(config), config.seed)


def write_seeded_model(out: Path, config: dict[str, Any], seed: int) -> Path:
    """Initialise mlx-lm's model for ``config`` from ``seed``; save its weights and config.json into ``out``."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.utils import _get_classes

    model_class, args_class = _get_classes(config)
    mx.random.seed(seed)
    model = model_class(args_class.from_dict(config))
    weights = dict(sorted(tree_flatten(model.parameters())))
    mx.eval(weights)
    mx.save_safetensors(str(out / "model.safetensors"), weights, metadata={"format": "mlx"})
    atomic_write_json(out / "config.json", config)
    return out


def resolve_source(source: str) -> Path:
    """A local mlx-lm model directory, or a hub id downloaded through huggingface_hub (needs network)."""
    path = Path(source).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        raise ConfigError(f"base.source = {source!r} is a GGUF file: write it as 'gguf:{source}'")
    if path.exists():
        try:
            read_model_config(path)
        except PinError as error:
            raise ConfigError(f"base.source = {source!r}: {error}") from error
        return path
    if source.count("/") != 1 or source.startswith((".", "/", "~")):
        raise ConfigError(
            f"base.source = {source!r} is invalid: expected 'embedded', 'standin', 'smollm2', 'gguf:PATH', an "
            "existing local model directory, or a hub id 'org/name'"
        )
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(source, allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.txt"]))
    except Exception as error:  # noqa: BLE001 -- any hub failure means the same thing to the user
        raise ConfigError(
            f"base.source = {source!r} looks like a hub id but could not be fetched ({type(error).__name__}); "
            "hub ids need network access, or download the model and set base.source to its local directory"
        ) from error


def quantise(source: Path, out: Path, bits: int) -> None:
    """Quantise with mlx-lm's own converter (its output directory must not exist yet)."""
    from mlx_lm import convert

    group_size = 64 if _hidden_size(source) % 64 == 0 else 32
    convert(str(source), str(out), quantize=True, q_bits=bits, q_group_size=group_size)


def _hidden_size(model_dir: Path) -> int:
    return int(read_model_config(model_dir)["hidden_size"])


def build_base(config: BaseConfig, out_dir: str | Path) -> dict[str, Any]:
    """Build ``artifacts/models/base`` atomically and write its meta.json; return the meta."""
    with atomic_dir(out_dir) as tmp:
        full = tmp / "full"
        if config.source == "embedded":
            source = build_embedded(full, config)
            inputs = {"embedded_seed": str(config.seed)}
        elif is_gguf_source(config.source):
            source, inputs = _import_gguf(config, full)
        elif config.source == "standin":
            from arena.train.standin import build_standin

            source = build_standin(full, config)
            inputs = {"standin_seed": str(config.seed)}
        else:
            source = resolve_source(config.source)
            inputs = {"source": source.as_posix()}
        bits = QUANTS[config.quant]
        if bits is None:
            _copy_model(source, tmp)
        else:
            quantise(source, tmp / "quantised", bits)
            _copy_model(tmp / "quantised", tmp)
        shutil.rmtree(full, ignore_errors=True)
        shutil.rmtree(tmp / "quantised", ignore_errors=True)
        _normalise_config(tmp)
        meta = write_meta(tmp, inputs=inputs, config=as_dict(config), pin=model_pin(tmp))
    print(f"base: {memory_note(out_dir)}", file=sys.stderr)
    return meta


def _import_gguf(config: BaseConfig, out: Path) -> tuple[Path, dict[str, str]]:
    """``smollm2`` or ``gguf:PATH`` as an mlx-lm directory, its weights as shipped, pinned by the file's blake3."""
    from arena.train.gguf import SMOLLM2, check_smollm2, gguf_file, import_gguf

    path = gguf_file(config.source)
    inputs = import_gguf(path, out)
    if config.source == SMOLLM2:
        check_smollm2(inputs)
    if QUANTS[config.quant] is not None and "quantization" in read_model_config(out):
        raise ConfigError(f"base.quant = {config.quant!r} with base.source = {config.source!r}: the GGUF is already "
                          "quantised and is kept as shipped; set base.quant: none")
    return out, inputs


def _copy_model(source: Path, dest: Path) -> None:
    for item in sorted(source.iterdir()):
        if item.is_file() and (item.suffix in {".json", ".safetensors", ".jinja"}) and item.name != "meta.json":
            shutil.copy2(item, dest / item.name)


def _normalise_config(model_dir: Path) -> None:
    """Rewrite config.json with sorted keys so the same model always has the same bytes."""
    path = model_dir / "config.json"
    atomic_write_json(path, json.loads(path.read_text()))
