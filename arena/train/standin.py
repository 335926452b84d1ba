"""The realistic stand-in base model: a seeded qwen3 with Qwen's vocabulary size and a Qwen3-style thinking template."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from arena.core.config import ConfigError
from arena.train.config import BaseConfig
from arena.train.embedded import write_seeded_model, write_tokenizer_config

# Modelled on Qwen3's own template (tools left out): the system message first, the empty think block on the last
# assistant turn after the last user message, and with enable_thinking false an empty, closed think block in the
# generation prompt, so the reply that follows is the answer itself.
QWEN3_TEMPLATE = """{%- if messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(searching=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- if ns.searching and message.role == 'user' %}
        {%- set ns.searching = false %}
        {%- set ns.last_query_index = (messages|length - 1) - loop.index0 %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- elif '</think>' in content %}
            {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index and (loop.last or reasoning_content) %}
            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n'
                + content.lstrip('\\n') }}
        {%- else %}
            {{- '<|im_start|>assistant\\n' + content }}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""
# Qwen2/Qwen3's pre-tokenizer split (digits one by one, newlines kept together), before byte-level BPE.
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
              r"|\s+(?!\S)|\s+")
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
THINK_TOKENS = ("<think>", "</think>")
CORPUS_GAMES = ("kuhn", "leduc", "liarsdice", "tictactoe", "nim")


def standin_corpus(seed: int, games_per_id: int = 40) -> list[str]:
    """Tokenizer training text: real TextArena observations (full and compact views) of random games, and moves."""
    from arena.games.registry import make_game
    from arena.players.prompts import SYSTEM_PROMPT, prompt_text

    rng = random.Random(seed)
    corpus = [SYSTEM_PROMPT]
    for game_id in CORPUS_GAMES:
        for game_seed in range(games_per_id):
            game = make_game(game_id, seed * 1000 + game_seed)
            while not game.done:
                observation = game.observation()
                action = rng.choice(observation.legal_actions)
                corpus += [prompt_text(observation, "full"), observation.compact, action]
                game.step(action)
    return corpus


def build_standin_tokenizer(out_dir: Path, config: BaseConfig) -> tuple[int, int]:
    """Train a Qwen-style byte-level BPE on game text, save it with the thinking template; its size and eos id."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=config.vocab_size - len(SPECIAL_TOKENS) - len(THINK_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(standin_corpus(config.seed), trainer=trainer)
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL_TOKENS])
    tokenizer.add_tokens([AddedToken(t, normalized=False, special=False) for t in THINK_TOKENS])
    tokenizer.save(str(out_dir / "tokenizer.json"))
    write_tokenizer_config(out_dir, QWEN3_TEMPLATE, config.max_position_embeddings)
    return tokenizer.get_vocab_size(), tokenizer.token_to_id("<|im_end|>")


def standin_model_config(config: BaseConfig, eos_token_id: int) -> dict[str, Any]:
    """An mlx-lm qwen3 config.json: ``config``'s shapes, head_dim = hidden / heads, tied embeddings, Qwen3's rope."""
    return {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "intermediate_size": config.intermediate_size,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.hidden_size // config.num_heads,
        "rms_norm_eps": 1.0e-6,
        "vocab_size": config.vocab_size,
        "max_position_embeddings": config.max_position_embeddings,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": True,
        "eos_token_id": eos_token_id,
        "torch_dtype": "float32",
    }


def build_standin(out_dir: str | Path, config: BaseConfig) -> Path:
    """Write the seeded stand-in model directory (embedding rows past the tokenizer's ids stay unused, as Qwen's do)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    size, eos_token_id = build_standin_tokenizer(out, config)
    if size > config.vocab_size:
        raise ConfigError(f"base.vocab_size = {config.vocab_size} is invalid: the stand-in's tokenizer has {size} "
                          f"tokens; use at least {size} (Qwen's is 151936)")
    return write_seeded_model(out, standin_model_config(config, eos_token_id), config.seed)
