"""The embedded tiny base model, from a seed: a tokenizer trained on game text, a ChatML template, seeded weights.

``write_seeded_model`` and ``write_tokenizer_config`` are shared with the qwen3 stand-in (``standin.py``), so the
stand-in does not import the base stage's module (which imports it).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.train.config import BaseConfig

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
