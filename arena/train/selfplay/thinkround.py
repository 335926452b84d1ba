"""train@rN of a thinking GRPO round (``selfplay.think``): whole replies, role baselines, per-token KL to the reference.

The round's rollouts were played by thinking players, so each learner decision carries its reasoning tokens. Each
is a whole reply (``arena.train.thinking.Reply``: reasoning tokens, answer prefix, move); its advantage is the seat's
reward minus SPIRAL's role-conditioned baseline (a running mean per (game, seat) carried from round to round in the
training output's ``role_baseline.json``, updated once a round, after it is used). ``train.steps`` steps each take a
random batch of ``train.batch_size`` replies: PPO's clipped per-token surrogate against the sampling policy's
per-token log-probabilities (the round's start weights) plus ``train.beta`` x the per-token k3 KL to the reference.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.artifacts import atomic_dir, atomic_write_text, dump_json
from arena.core.config import as_dict
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.play.records import read_shard
from arena.players.config import sampling_config
from arena.players.mlx import MLXPlayer
from arena.train.config import SelfPlayConfig, TrainConfig
from arena.train.lora import attach_lora, check_trainable
from arena.train.selfplay.schedule import round_clip, round_learning_rate
from arena.train.selfplay.step import reference_player, save_trained
from arena.train.thinking import Reply, RoleBaseline, clipped_step, reasoning_stats, reference_logps, replies

BASELINE_FILE = "role_baseline.json"


def carried_baseline(previous: str | Path | None) -> RoleBaseline:
    """The role baseline the previous round's training output left (none yet: every role's mean is 0)."""
    path = Path(previous) / BASELINE_FILE if previous is not None else None
    if path is None or not path.exists():
        return RoleBaseline()
    return RoleBaseline.from_json(json.loads(path.read_text(encoding="utf-8")))


def _steps(policy: MLXPlayer, batch: Sequence[Reply], advantages: np.ndarray, reference: Sequence[Any],
           old: Sequence[Any], config: TrainConfig, temperature: float, round_number: int) -> list[dict[str, Any]]:
    """``config.steps`` clipped GRPO steps, each on a random batch of the round's replies; a log row a step."""
    import mlx.optimizers as optim

    optimizer = optim.Adam(learning_rate=config.lr, bias_correction=True)
    rng, clip, log = np.random.default_rng([config.seed, round_number]), round_clip(config, round_number), []
    for step in range(config.steps):
        start = time.perf_counter()
        picked = np.sort(rng.choice(len(batch), size=min(config.batch_size, len(batch)), replace=False))
        optimizer.learning_rate = round_learning_rate(config, (round_number - 1) * config.steps + step, config.steps)
        rows = [batch[i] for i in picked]
        loss, kl = clipped_step(policy.model, optimizer, rows, advantages[picked], [reference[i] for i in picked],
                                config.beta, temperature, [old[i] for i in picked], clip)
        tokens = sum(len(r.context) * len(r.actions) for r in rows)
        log.append({"step": step, "iteration": 0, "loss": round(loss, 6), "kl": round(kl, 6),
                    "mean_reward": round(float(np.mean([r.reward for r in rows])), 6),
                    "mean_advantage": round(float(advantages[picked].mean()), 6),
                    "lr": round(float(optimizer.learning_rate.item()), 9), "rows": len(rows),
                    "tokens_per_sec": round(tokens / (time.perf_counter() - start), 1)})
    return log


def train_thinking_round(snapshot: str | Path, reference: str | Path, shard: str | Path, round_number: int,
                         selfplay: SelfPlayConfig, config: TrainConfig, out_dir: str | Path,
                         previous: str | Path | None = None) -> dict[str, Any]:
    """Train@r for ``selfplay.think``: GRPO over the learner's whole replies in the round's rollouts (``previous``:
    the last round's training output, whose role baseline this round starts from); write the weights (or LoRA
    adapter), the carried role baseline, the log and a summary with the rollouts' reasoning statistics."""
    import mlx.core as mx

    mx.random.seed(config.seed + round_number)
    check_trainable(snapshot, config)
    policy = MLXPlayer(snapshot, sampling_config(selfplay))
    records = read_shard(shard)
    batch = replies(records, policy, learner_only=True, invalid_penalty=config.invalid_penalty)
    if not batch:
        raise ValueError(f"{shard}: no finished game has a reasoned learner decision to learn from")
    ref = reference_player(reference, selfplay)
    if config.method == "lora":
        attach_lora(policy.model, config, snapshot)
    print(f"[arena] train r{round_number}: thinking GRPO over {len(batch)} whole replies", file=sys.stderr)
    baseline = carried_baseline(previous)
    advantages = baseline.advantages(batch)
    reference_lp = reference_logps(ref.model, batch, selfplay.temperature)
    old = reference_logps(policy.model, batch, selfplay.temperature)  # the sampling policy: the round's start
    log = _steps(policy, batch, advantages, reference_lp, old, config, selfplay.temperature, round_number)
    summary = {"round": round_number, "method": config.method, "steps": len(log), "replies": len(batch),
               "final_kl": log[-1]["kl"] if log else 0.0, "max_kl": max((row["kl"] for row in log), default=0.0),
               "mean_reward": log[-1]["mean_reward"] if log else 0.0, "reasoning": reasoning_stats(records)}
    inputs = {"snapshot": digest_path(snapshot), "reference": digest_path(reference), "rollouts": digest_path(shard)}
    if previous is not None and (Path(previous) / BASELINE_FILE).exists():
        inputs["role_baseline"] = digest_path(Path(previous) / BASELINE_FILE)
    _save(policy, config, out_dir, log, summary, baseline, inputs, snapshot, selfplay)
    return summary


def _save(policy: MLXPlayer, config: TrainConfig, out_dir: str | Path, log: list[dict[str, Any]],
          summary: Mapping[str, Any], baseline: RoleBaseline, inputs: dict[str, str], snapshot: str | Path,
          selfplay: SelfPlayConfig) -> None:
    """The training output (throughput to logs/, not a DVC output: wall-clock numbers would break byte identity)."""
    timing = [{"step": row["step"], "tokens_per_sec": row.pop("tokens_per_sec")} for row in log]
    atomic_write_text(Path("logs") / f"train-r{summary['round']}-timing.jsonl",
                      "".join(json.dumps(row, sort_keys=True) + "\n" for row in timing))
    with atomic_dir(out_dir) as tmp:
        save_trained(policy, config, tmp, snapshot)
        (tmp / BASELINE_FILE).write_text(dump_json(baseline.as_json()))
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in log))
        (tmp / "summary.json").write_text(dump_json(summary))
        write_meta(tmp, inputs=inputs, config={**as_dict(config), "think": dict(selfplay.think)})
