"""train@rN of a ReST round: build and audit the win set, then LoRA-SFT on it with mlx-lm's own trainer.

The learner's decisions in games it won (the verifiable reward is the outcome alone) become chat-format rows
for ``mlx_lm lora``; mlx-lm's trainer fits a LoRA adapter from the base model (ReST-EM) or from the previous
snapshot. With ``rest.think`` the rows are whole replies (reasoning and move) and ``arena.train.rest.thinksft``
fits the adapter on them instead. Besides the win set under ``data/``, the output directory holds ``audit.json``,
``summary.json``, ``train_log.jsonl`` and the weights fuse@rN merges.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.artifacts import atomic_dir, dump_json
from arena.core.config import as_dict, require
from arena.core.errors import ArenaError
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.play.records import read_shard
from arena.train.config import RestConfig
from arena.train.curriculum import CURRICULUM_FILE
from arena.train.lora import adapter_config, attach_lora, is_quantised
from arena.train.rest.thinksft import thinking_sft
from arena.train.rest.winset import (
    DATA_DIR,
    audit,
    dataset_rows,
    jsonl,
    learner_spec_for,
    load_win_set,
    replay_buffer,
    select_wins,
    write_win_set,
)

AUDIT_FILE = "audit.json"
SUMMARY_FILE = "summary.json"


# ----------------------------------------------------------------------------------------------- mlx-lm SFT


class _LossLog:
    """mlx-lm training callback that keeps the deterministic numbers (loss, lr), never the wall-clock ones."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_train_loss_report(self, info: dict[str, Any]) -> None:
        self.rows.append({"iteration": info["iteration"], "train_loss": round(float(info["train_loss"]), 6),
                          "learning_rate": float(f"{info['learning_rate']:.9g}")})

    def on_val_loss_report(self, info: dict[str, Any]) -> None:
        """No validation set: nothing to log."""


def _lora_model(init: str | Path, config: RestConfig, seed: int) -> tuple[Any, Any]:
    """The model at ``init`` (and its tokenizer), frozen, with fresh LoRA layers drawn from MLX's RNG at ``seed``
    (or, on a QLoRA snapshot, the adapter it carries)."""
    import mlx.core as mx

    from arena.players.mlx import load_model

    model, tokenizer = load_model(init)
    mx.random.seed(seed)
    require(config.lora_layers <= len(model.layers), "rest.lora_layers", config.lora_layers,
            f"must be <= the model's {len(model.layers)} layers")
    attach_lora(model, config, init)
    return model, tokenizer


def _training_args(config: RestConfig, rows: Sequence[Mapping[str, Any]], adapter_dir: Path) -> Any:
    """mlx-lm's TrainingArgs: ``config.iters`` steps, eight loss reports, no evaluation and no interim saves."""
    from mlx_lm.tuner.trainer import TrainingArgs

    return TrainingArgs(batch_size=min(config.batch_size, len(rows)), iters=config.iters,
                        steps_per_report=max(1, config.iters // 8), steps_per_eval=config.iters + 1,
                        steps_per_save=config.iters + 1, adapter_file=str(adapter_dir / "adapters.safetensors"),
                        max_seq_length=2048)


@contextlib.contextmanager
def _numpy_seeded(seed: int) -> Iterator[None]:
    """numpy's global RNG seeded with ``seed`` inside the block, and restored to its outer state after it."""
    outer = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(outer)


class ReplyDataset:
    """Win-set rows as the exact tokens the player scores (full view): its prompt, then the move's templated reply.

    mlx-lm's ChatDataset would render the whole conversation (thinking switch at the tokenizer's default, the
    newline after the end-of-turn token trained too); this trains what ``arena.players.prompts`` scores.
    """

    def __init__(self, rows: Sequence[Mapping[str, Any]], tokenizer: Any, config: RestConfig) -> None:
        from arena.players.prompts import ChatPrompts

        self._rows = list(rows)
        self.tokenizer = tokenizer
        self.enable_thinking = config.enable_thinking
        self.prompts = ChatPrompts(tokenizer, config.view, config.enable_thinking)

    def process(self, row: Mapping[str, Any]) -> tuple[list[int], int]:
        from arena.players.prompts import prompt_ids

        *context, reply = row["messages"]
        prompt = prompt_ids(self.tokenizer, context, self.enable_thinking)
        return [*prompt, *self.prompts.action_ids(reply["content"])], len(prompt)

    def __getitem__(self, index: int) -> Mapping[str, Any]:
        return self._rows[index]

    def __len__(self) -> int:
        return len(self._rows)


def _dataset(rows: Sequence[Mapping[str, Any]], tokenizer: Any, config: RestConfig) -> Any:
    """The SFT rows as mlx-lm reads them: its own ChatDataset for the compact view, the scored tokens for full."""
    from mlx_lm.tuner.datasets import CacheDataset, ChatDataset

    if config.view == "compact":
        return CacheDataset(ChatDataset(list(rows), tokenizer, mask_prompt=True))
    return CacheDataset(ReplyDataset(rows, tokenizer, config))


def sft(init: str | Path, rows: Sequence[Mapping[str, Any]], config: RestConfig, round_number: int,
        adapter_dir: Path, progress: bool = True) -> tuple[Any, list[dict[str, Any]]]:
    """LoRA SFT with mlx-lm's own trainer on the chat rows (prompt masked); returns the trained model and its log.

    mlx-lm's batcher shuffles with numpy's global RNG: it is seeded here and restored afterwards.
    """
    import mlx.optimizers as optim
    from mlx_lm.tuner.trainer import train

    seed = config.seed + round_number
    model, tokenizer = _lora_model(init, config, seed)
    dataset = _dataset(rows, tokenizer, config)
    args = _training_args(config, rows, adapter_dir)
    log = _LossLog()
    sink = contextlib.nullcontext() if progress else contextlib.redirect_stdout(io.StringIO())
    with _numpy_seeded(seed), sink:
        train(model, optim.Adam(learning_rate=config.lr), dataset, None, args, training_callback=log)
    (adapter_dir / "adapter_config.json").write_text(dump_json(adapter_config(config, init)))
    return model, log.rows


# ----------------------------------------------------------------------------------------------- the round


@dataclass(frozen=True)
class _WinSet:
    """A round's training data: fresh and replayed games, their rows (shuffled) and provenance, and its checks."""

    fresh: list[dict[str, Any]]
    replayed: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    provenance: list[dict[str, Any]]
    stats: dict[str, Any]
    audit: dict[str, Any]

    @property
    def games(self) -> list[dict[str, Any]]:
        return self.fresh + self.replayed


def _build_win_set(snapshot: str | Path, rollouts: str | Path, previous_train: str | Path, config: RestConfig,
                   round_number: int) -> _WinSet:
    """This round's verified wins plus earlier ones to replay, audited; an ArenaError if the audit fails."""
    fresh, stats = select_wins(read_shard(rollouts), learner_spec_for(snapshot), config, round_number)
    if stats["rejected"]:
        print(f"round {round_number}: {stats['rejected']} won game(s) failed replay and were left out: "
              f"{stats['rejections'][0]}", file=sys.stderr)
    rng = np.random.default_rng([config.seed, round_number])
    replayed = replay_buffer(load_win_set(previous_train), fresh, config.replay_games, rng)
    games = fresh + replayed
    rows, provenance = dataset_rows(games, rng, config.view)
    report = audit(games, config, round_number)
    if report["failures"]:
        raise ArenaError(f"round {round_number}: the win-set audit failed on {len(report['failures'])} check(s), "
                         f"first: {report['failures'][0]}; the data is not trusted, nothing was trained")
    return _WinSet(fresh, replayed, rows, provenance, stats, report)


def _summary(win_set: _WinSet, config: RestConfig, round_number: int) -> dict[str, Any]:
    """summary.json (less the final loss): what the win set holds and where it came from."""
    fresh, replayed, stats = win_set.fresh, win_set.replayed, win_set.stats
    return {
        "round": round_number, "loop": "rest", "init": config.init, "games": len(win_set.games),
        "rows": len(win_set.rows), "fresh_games": len(fresh), "fresh_rows": sum(len(g["rows"]) for g in fresh),
        "replay_games": len(replayed), "replay_rows": sum(len(g["rows"]) for g in replayed),
        "won_games": stats["won"], "played_games": stats["games"], "forfeit_fraction": stats["forfeit_fraction"],
        "updated": bool(win_set.rows),
    }


def _fit(init: str | Path, win_set: _WinSet, config: RestConfig, round_number: int, adapter_dir: Path,
         progress: bool) -> tuple[Any, list[dict[str, Any]]]:
    """The round's SFT from ``init``: (prompt, move) rows through mlx-lm, or with ``rest.think`` whole replies."""
    if config.think:
        return thinking_sft(init, win_set.games, config, round_number, adapter_dir)
    return sft(init, win_set.rows, config, round_number, adapter_dir, progress)


def _learn(tmp: Path, snapshot: str | Path, base: str | Path, win_set: _WinSet, config: RestConfig,
           round_number: int, progress: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Write the round's weights into ``tmp`` (or why there are none); the training log and any extra input digest."""
    from arena.train.fuse import NO_UPDATE, save_fused

    if not win_set.rows:
        reason = (f"round {round_number}: no game was won (of {win_set.stats['games']} played) and no earlier win "
                  "remains to replay; the previous weights are kept")
        print(reason, file=sys.stderr)
        (tmp / NO_UPDATE).write_text(dump_json({"reason": reason}))
        return [], {}
    if config.init == "base" and is_quantised(base):
        # QLoRA: the adapter stays an adapter (fuse@r keeps it beside the quantised weights it was trained over).
        _, log = _fit(base, win_set, config, round_number, tmp, progress)
        return log, {"base": digest_path(base)}
    if config.init == "base":
        inputs = {"base": digest_path(base)}
        (tmp / "lora").mkdir()
        model, log = _fit(base, win_set, config, round_number, tmp / "lora", progress)
        save_fused(model, tmp / "weights.safetensors")
        return log, inputs
    _, log = _fit(snapshot, win_set, config, round_number, tmp, progress)
    return log, {}


def train_rest_round(snapshot: str | Path, base: str | Path, rollouts: str | Path, previous_train: str | Path,
                     round_number: int, config: RestConfig, out_dir: str | Path,
                     progress: bool = True) -> dict[str, Any]:
    """train@r (ReST): build and audit the win set, then LoRA-SFT from the base or the previous snapshot.

    With ``init: base`` the adapter belongs to the base model, so the fused weights are written
    (``weights.safetensors``, which fuse@r copies) and the adapter is kept under ``lora/``; with
    ``init: previous`` the adapter itself is written for fuse@r to merge into the previous snapshot. On a
    quantised base (QLoRA) the adapter is always written as such, and fuse@r keeps it beside the quantised weights.
    With no win at all (none this round and none to replay) nothing can be learned: the round writes
    ``no_update.json`` with the reason, and fuse@r carries the previous weights over, saying so in its meta.
    """
    win_set = _build_win_set(snapshot, rollouts, previous_train, config, round_number)
    summary = _summary(win_set, config, round_number)
    inputs = {"snapshot": digest_path(snapshot), "rollouts": digest_path(rollouts),
              "previous_train": digest_path(previous_train)}
    with atomic_dir(out_dir) as tmp:
        write_win_set(tmp / DATA_DIR, win_set.games, win_set.rows, win_set.provenance)
        (tmp / AUDIT_FILE).write_text(dump_json({"round": round_number, **win_set.stats, "audit": win_set.audit}))
        log, trained_from = _learn(tmp, snapshot, base, win_set, config, round_number, progress)
        summary["final_loss"] = log[-1]["train_loss"] if log else None
        (tmp / "train_log.jsonl").write_text(jsonl(log))
        (tmp / SUMMARY_FILE).write_text(dump_json(summary))
        write_meta(tmp, inputs={**inputs, **trained_from}, config=as_dict(config))
    return summary


def empty_win_set(out_dir: str | Path) -> dict[str, Any]:
    """train0: round 0's training output, an empty win set, so round 1 has an earlier (empty) replay buffer."""
    with atomic_dir(out_dir) as tmp:
        write_win_set(tmp / DATA_DIR, [], [], [])
        summary = {"round": 0, "loop": "rest", "init": None, "updated": False, "forfeit_fraction": 0.0,
                   **dict.fromkeys(("games", "rows", "fresh_games", "fresh_rows", "replay_games", "replay_rows",
                                    "won_games", "played_games"), 0)}
        (tmp / SUMMARY_FILE).write_text(dump_json(summary))
        write_meta(tmp, inputs={})
    return summary


# ----------------------------------------------------------------------------------------------- metrics


def load_rest_summary(train_dir: str | Path) -> dict[str, Any] | None:
    """A ReST round's summary.json (None for a GRPO round's output, which has no win set)."""
    path = Path(train_dir) / SUMMARY_FILE
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    return summary if summary.get("loop") == "rest" else None


def round_metrics(rollouts: str | Path | None, trained: str | Path | None) -> dict[str, Any]:
    """What a ReST round adds to eval@r's metrics: the curriculum's chosen tiers and the win set's numbers.

    Empty for a GRPO round (its rollouts have no curriculum.json and its training output no ReST summary).
    """
    metrics: dict[str, Any] = {}
    plan = Path(rollouts) / CURRICULUM_FILE if rollouts else None
    if plan is not None and plan.exists():
        record = json.loads(plan.read_text())
        metrics["curriculum"] = {
            "chosen": "; ".join(record["chosen_labels"]), "tiers": record["chosen"],
            "hardest_tier": max(record["chosen"]), "lowered": len(record["attempts"]) - 1,
            "probe_win_rate": {task["label"]: task["win_rate"] for task in record["tasks"]},
        }
    summary = load_rest_summary(trained) if trained else None
    if summary is not None:
        metrics["rest"] = {key: summary[key] for key in (
            "rows", "games", "fresh_games", "replay_games", "won_games", "played_games", "forfeit_fraction",
            "updated")}
    return metrics
