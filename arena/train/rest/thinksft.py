"""train@rN's SFT for ``rest.think``: the win set's whole winning replies (reasoning and move) through ``rest_step``.

A thinking learner's win-set row is a whole reply: the reasoning prompt at its decision, the reasoning tokens it
wrote, the answer prefix they end with and the move. Each row becomes an ``arena.train.thinking.Reply`` (its
observation from the game's replay, so the prompt is the one the player saw), and ``config.iters`` steps of
``arena.train.thinking.rest_step`` fit a LoRA adapter on random batches of ``config.batch_size`` replies: the loss is
the mean negative log-probability of each reply's reasoning tokens and its move (the move's masked, tempered
log-softmax over the legal actions, as the player samples it); the prompt is context, never a target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.artifacts import dump_json
from arena.core.config import require
from arena.core.errors import ArenaError
from arena.train.config import RestConfig
from arena.train.lora import adapter_config, attach_lora
from arena.train.rest.winset import REASONING_KEYS, replay_game
from arena.train.thinking import Reply, rest_step, whole_reply, winning


def win_set_replies(games: Sequence[Mapping[str, Any]], player: Any, view: str) -> list[Reply]:
    """Every row of the win set's ``games`` as the whole reply ``player`` scores (game by game, row by row); an
    ArenaError for a row without reasoning (a win set built without ``rest.think``)."""
    out = []
    for game in games:
        _, _, observations, _ = replay_game(game, view)
        seat = game["learner_seat"]
        for row, observation in zip(game["rows"], observations, strict=True):
            if not all(key in row for key in REASONING_KEYS):
                raise ArenaError(f"{game['game_id']} seed {game['seed']} move {row['decision']}: the win set's row "
                                 "has no reasoning to train; rebuild the earlier rounds with the same rest.think")
            out.append(whole_reply(player, observation, row["reasoning_tokens"], row["reasoning"], row["action"],
                                   float(game["rewards"][seat])))
    return out


def _fit(model: Any, batch: Sequence[Reply], config: RestConfig, round_number: int) -> list[dict[str, Any]]:
    """``config.iters`` ``rest_step``s on random batches; eight loss reports (each the mean since the last one)."""
    import mlx.optimizers as optim

    optimizer = optim.Adam(learning_rate=config.lr)
    rng = np.random.default_rng([config.seed, round_number, 2])
    every, log, losses = max(1, config.iters // 8), [], []
    for iteration in range(1, config.iters + 1):
        picked = np.sort(rng.choice(len(batch), size=min(config.batch_size, len(batch)), replace=False))
        losses.append(rest_step(model, optimizer, [batch[i] for i in picked], config.temperature))
        if iteration % every == 0 or iteration == config.iters:
            log.append({"iteration": iteration, "train_loss": round(float(np.mean(losses)), 6),
                        "learning_rate": float(f"{config.lr:.9g}")})
            losses = []
    return log


def thinking_sft(init: str | Path, games: Sequence[Mapping[str, Any]], config: RestConfig, round_number: int,
                 adapter_dir: Path) -> tuple[Any, list[dict[str, Any]]]:
    """LoRA SFT on the win set's whole winning replies from the model at ``init``; the trained model and its log.

    Writes ``adapters.safetensors`` and ``adapter_config.json`` into ``adapter_dir`` (what mlx-lm's trainer writes
    for the move-only rows), so the round's fuse step reads either alike.
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten

    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(init, config.player_config)
    require(config.lora_layers <= len(player.model.layers), "rest.lora_layers", config.lora_layers,
            f"must be <= the model's {len(player.model.layers)} layers")
    mx.random.seed(config.seed + round_number)  # the fresh LoRA layers' draw, as the move-only SFT seeds it
    attach_lora(player.model, config, init)
    batch = winning(win_set_replies(games, player, config.view))
    log = _fit(player.model, batch, config, round_number)
    weights = dict(sorted(tree_flatten(player.model.trainable_parameters())))
    mx.save_safetensors(str(adapter_dir / "adapters.safetensors"), weights)
    (adapter_dir / "adapter_config.json").write_text(dump_json(adapter_config(config, init)))
    return player.model, log
