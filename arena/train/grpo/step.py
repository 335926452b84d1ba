"""train@rN of a GRPO round: the learner's decisions with group advantages, the GRPO step, and the training round."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from arena.core.artifacts import atomic_dir, dump_json
from arena.core.config import as_dict
from arena.core.hashing import canonical_json, digest_path
from arena.core.pins import write_meta
from arena.games.base import Observation
from arena.play.records import read_shard
from arena.players.config import sampling_config
from arena.players.memory import budget_note
from arena.players.mlx import MLXPlayer
from arena.train.config import SelfPlayConfig, TrainConfig
from arena.train.fuse import save_fused
from arena.train.grpo.dataparallel import World, micro_batch_rounds
from arena.train.lora import adapter_config, attach_lora, check_trainable

# ----------------------------------------------------------------------------------------------- training data


@dataclass(frozen=True)
class Decisions:
    """The learner's decisions of a round, flattened: what was seen, what was chosen, and its advantage."""

    observations: list[Observation]
    chosen: np.ndarray          # index into each observation's legal actions
    logp_old: np.ndarray        # log-probability the sampling policy gave the choice
    advantages: np.ndarray
    zero_group: np.ndarray
    rewards: np.ndarray         # the learner's reward in the decision's game


def _scored_games(records: Sequence[Mapping[str, Any]], learner_spec: str,
                  config: TrainConfig) -> list[tuple[Mapping[str, Any], int, float]]:
    """Each finished game with the learner's seat (the first seat) and its reward less the invalid-move penalty."""
    games = []
    for record in records:
        if record["errored"]:
            continue
        seat = record["first_seat"]
        if record["players"][seat] != learner_spec:
            raise ValueError(f"record seed {record['seed']}: seat {seat} is {record['players'][seat]}, "
                             f"not the learner {learner_spec}")
        reward = record["rewards"][seat] - config.invalid_penalty * record["invalid_moves"][seat]
        games.append((record, seat, reward))
    if not games:
        raise ValueError("no finished games to learn from: every rollout game errored")
    return games


def _group_ids(records: Iterable[Mapping[str, Any]]) -> list[int]:
    """A group is every game of one deal of one game (seeds repeat across the games of a mix)."""
    keys: dict[tuple[str, str, int], int] = {}
    return [keys.setdefault((r["game_id"], canonical_json(r["variant"]), r["seed"]), len(keys)) for r in records]


def learner_decisions(records: Sequence[Mapping[str, Any]], learner_spec: str, config: TrainConfig) -> Decisions:
    """The learner's decisions with group advantages (a group = every game played from one deal of one game)."""
    from arena.train.grpo.loss import group_advantages

    games = _scored_games(records, learner_spec, config)
    grouped = group_advantages([g[2] for g in games], _group_ids(g[0] for g in games),
                               normalise_std=config.normalise_std)
    observations, chosen, logp_old, advantages, zero, rewards = [], [], [], [], [], []
    for (record, seat, reward), advantage, flat in zip(games, grouped.advantages, grouped.zero_group, strict=True):
        for decision in record["decisions"]:
            if decision["player"] != seat:
                continue
            observations.append(Observation(record["game_id"], seat, decision["text"], decision["observation"],
                                            tuple(decision["legal"])))
            chosen.append(decision["legal"].index(decision["action"]))
            logp_old.append(decision["logprob"])
            advantages.append(advantage)
            zero.append(flat)
            rewards.append(reward)
    return Decisions(observations, np.array(chosen), np.array(logp_old, dtype=np.float64),
                     np.array(advantages), np.array(zero, dtype=bool), np.array(rewards))


# ----------------------------------------------------------------------------------------------- training


def _learning_rate(config: TrainConfig, global_step: int) -> float:
    if config.lr_decay == "inverse_sqrt":
        # Decay over the whole multi-round run (global steps), as the tabular study's best recipe does.
        return config.lr / math.sqrt(1.0 + global_step / config.steps)
    return config.lr


def _chosen_logp(model, batch, chosen: np.ndarray, temperature: float):
    """Differentiable log-probability of each chosen action under the masked, tempered softmax."""
    import mlx.core as mx

    from arena.players.scoring import action_loglik, masked_log_softmax

    logp = masked_log_softmax(action_loglik(model, batch), batch.action_offsets, temperature)
    return logp[mx.array(np.asarray(batch.action_offsets[:-1]) + chosen)]


class GRPOUpdate:
    """One GRPO optimisation step of a player's model on some of its decisions (Adam with bias correction).

    The decisions are scored in micro-batches of at most ``train.max_batch_tokens`` tokens; their gradients are
    accumulated, each weighted by its share of the decisions, so the step equals one over the whole batch.
    With a ``world`` of several ranks each rank computes its share of the micro-batches and every rank adds
    all of them in micro-batch order (``dataparallel.py``), so the step's bytes do not depend on the world.
    ``train_round`` runs these; ``bench/training.py`` times the same object against mlx-lm's own trainer.
    """

    def __init__(self, policy: MLXPlayer, config: TrainConfig, temperature: float, world: World | None = None) -> None:
        import mlx.core as mx
        import mlx.nn as nn
        import mlx.optimizers as optim

        from arena.train.grpo.loss import grpo_loss

        self.policy = policy
        self.world = world or World()
        self.max_tokens = config.max_batch_tokens
        self.optimizer = optim.Adam(learning_rate=config.lr, bias_correction=True)

        def loss_fn(model, batch, chosen, old, reference_logp, advantages):
            new = _chosen_logp(model, batch, chosen, temperature)
            return grpo_loss(new, old, reference_logp, advantages, mx.ones(new.shape),
                             clip_eps=config.clip_eps, beta=config.beta)

        self._value_and_grad = nn.value_and_grad(policy.model, loss_fn)

    def _part(self, start: int, end: int, batch, total: int, chosen: np.ndarray, logp_old: np.ndarray,
              logp_ref: np.ndarray, advantages: np.ndarray) -> tuple[Any, dict[str, Any], Any]:
        """One micro-batch's loss, metrics and gradients, weighted by its share of the step's decisions."""
        import mlx.core as mx
        from mlx.utils import tree_map

        part = slice(start, end)
        (loss, metrics), grads = self._value_and_grad(
            self.policy.model, batch, chosen[part], mx.array(logp_old[part], dtype=mx.float32),
            mx.array(logp_ref[part], dtype=mx.float32), mx.array(advantages[part], dtype=mx.float32))
        if end - start != total:  # micro-batch means, weighted by their share of the decisions
            share = (end - start) / total
            loss, metrics = loss * share, {k: v * share for k, v in metrics.items()}
            grads = tree_map(lambda g, s=share: g * s, grads)
        return loss, metrics, grads

    def __call__(self, observations: Sequence[Observation], chosen: np.ndarray, logp_old: np.ndarray,
                 logp_ref: np.ndarray, advantages: np.ndarray, learning_rate: float) -> dict[str, Any]:
        """Update the model once; returns the loss, metrics, learning rate and tokens run through the model
        (every rank's micro-batches)."""
        import mlx.core as mx

        total, tokens, rank = len(observations), 0, self.world.rank
        accumulated = _Sum(self.policy.model)
        passes = self.policy.scoring_passes(observations, self.max_tokens, "train.max_batch_tokens")
        for chunk in micro_batch_rounds(passes, self.world.size):
            mine = None
            if rank < len(chunk):
                mine = accumulated.flat(self._part(*chunk[rank], total, chosen, logp_old, logp_ref, advantages))
                mx.eval(mine)
            for flat in self.world.gathered(mine, accumulated.template, len(chunk)):
                accumulated.add(flat)
            tokens += sum(batch.tokens for _, _, batch in chunk)
        loss, metrics, grads = accumulated.value
        self.optimizer.learning_rate = learning_rate
        self.optimizer.update(self.policy.model, grads)
        mx.eval(self.policy.model.parameters(), self.optimizer.state, loss, metrics)
        return {"loss": loss.item(), "kl": metrics["kl"].item(), "clip_fraction": metrics["clip_fraction"].item(),
                "lr": float(self.optimizer.learning_rate.item()), "tokens": tokens}


class _Sum:
    """The step's running sum of micro-batch (loss, metrics, gradients), added one micro-batch at a time, in order.

    Parts travel between ranks as flat lists of arrays: the loss, the metrics in ``METRICS`` order, then the
    gradient leaves in the trainable parameters' order (the template a rank without a micro-batch sends zeros of).
    """

    METRICS = ("clip_fraction", "kl", "mean_ratio")  # grpo_loss's metrics (loss.py, _loss_metrics)

    def __init__(self, model) -> None:
        import mlx.core as mx
        from mlx.utils import tree_flatten

        self._structure = model.trainable_parameters()
        scalar = mx.zeros((), mx.float32)  # grpo_loss is float32: the scores are cast before the softmax
        leaves = tree_flatten(self._structure)
        self._names = [name for name, _ in leaves]
        self.template = [scalar] * (1 + len(self.METRICS)) + [value for _, value in leaves]
        self.value: tuple[Any, dict[str, Any], Any] | None = None

    def flat(self, part: tuple[Any, dict[str, Any], Any]) -> list[Any]:
        from mlx.utils import tree_flatten

        loss, metrics, grads = part
        by_name = dict(tree_flatten(grads))
        return [loss, *(metrics[k] for k in self.METRICS), *(by_name[name] for name in self._names)]

    def _unflat(self, flat: list[Any]) -> tuple[Any, dict[str, Any], Any]:
        from mlx.utils import tree_map

        leaves = iter(flat[1 + len(self.METRICS):])
        metrics = dict(zip(self.METRICS, flat[1:1 + len(self.METRICS)], strict=True))
        return flat[0], metrics, tree_map(lambda _: next(leaves), self._structure)

    def add(self, flat: list[Any]) -> None:
        """Add one micro-batch's part (the first one is taken as it is, as the single-process sum always did)."""
        import mlx.core as mx
        from mlx.utils import tree_map

        loss, metrics, grads = self._unflat(flat)
        if self.value is not None:
            old_loss, old_metrics, old_grads = self.value
            loss, grads = old_loss + loss, tree_map(lambda a, b: a + b, old_grads, grads)
            metrics = {k: old_metrics[k] + v for k, v in metrics.items()}
        self.value = (loss, metrics, grads)
        mx.eval(grads, loss, metrics)


def _reference_logp(ref: MLXPlayer, data: Decisions, keep: np.ndarray, temperature: float) -> np.ndarray:
    """The reference's log-probability of each kept decision's choice (0 for the others), in scoring passes."""
    logp_ref = np.zeros(len(data.chosen))
    for start, end, batch in ref.scoring_passes([data.observations[i] for i in keep]):
        part = keep[start:end]
        logp_ref[part] = np.array(_chosen_logp(ref.model, batch, data.chosen[part], temperature))
    return logp_ref


def _log_row(step: int, result: Mapping[str, Any], data: Decisions, picked: np.ndarray,
             elapsed: float) -> dict[str, Any]:
    """One train_log.jsonl row (its tokens_per_sec is moved to logs/ before the log is written)."""
    return {
        "step": step, "loss": round(result["loss"], 6), "kl": round(result["kl"], 6),
        "clip_fraction": round(result["clip_fraction"], 6),
        "mean_reward": round(float(data.rewards[picked].mean()), 6),
        "zero_adv_fraction": round(float(data.zero_group.mean()), 6),
        "lr": round(result["lr"], 9),
        "tokens_per_sec": round(result["tokens"] / elapsed, 1),
    }


def _run_steps(update: GRPOUpdate, data: Decisions, keep: np.ndarray, logp_ref: np.ndarray, config: TrainConfig,
               round_number: int, progress: bool) -> list[dict[str, Any]]:
    """``config.steps`` GRPO steps, each on a random batch of the kept decisions; one log row per step."""
    rng = np.random.default_rng([config.seed, round_number])
    log = []
    bar = tqdm(range(config.steps), desc=f"train r{round_number}", unit="step", file=sys.stderr,
               disable=None if progress else True, leave=False)
    for step in bar:
        start = time.perf_counter()
        if len(keep) == 0:
            log.append({"step": step, "skipped": "every group had equal rewards"})
            continue
        picked = np.sort(rng.choice(keep, size=min(config.batch_size, len(keep)), replace=False))
        result = update([data.observations[i] for i in picked], data.chosen[picked], data.logp_old[picked],
                        logp_ref[picked], data.advantages[picked],
                        _learning_rate(config, (round_number - 1) * config.steps + step))
        log.append(_log_row(step, result, data, picked, time.perf_counter() - start))
    return log


def train_round(snapshot: str | Path, reference: str | Path, shard: str | Path, round_number: int,
                selfplay: SelfPlayConfig, config: TrainConfig, out_dir: str | Path,
                progress: bool = True, world: World | None = None,
                code: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Train@r: GRPO steps on the round's rollouts; write the trained weights (or LoRA adapter) and a log.

    With a ``world`` of several ranks (``launch.py``) every rank runs this and only rank 0 writes; ``code`` is
    what meta.json records as the producing code (default: this process's; a launched rank gets the stage's).
    """
    import mlx.core as mx

    mx.random.seed(config.seed + round_number)
    player_config = sampling_config(selfplay)
    check_trainable(snapshot, config)
    policy = MLXPlayer(snapshot, player_config)
    ref = MLXPlayer(reference, player_config)
    data = learner_decisions(read_shard(shard), policy.spec, config)
    return optimise(policy, ref, data, snapshot, config, selfplay.temperature, round_number, out_dir, {
        "snapshot": digest_path(snapshot), "reference": digest_path(reference), "rollouts": digest_path(shard),
    }, progress, world, code)


def optimise(policy: MLXPlayer, ref: MLXPlayer, data: Decisions, snapshot: str | Path, config: TrainConfig,
             temperature: float, round_number: int, out_dir: str | Path, inputs: dict[str, str],
             progress: bool = True, world: World | None = None,
             code: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``config.steps`` GRPO steps of ``policy`` on ``data`` (KL to ``ref``); write the weights and the log.

    Any loop whose decisions carry advantages trains through here (self-play GRPO, LSP's two roles). Every rank
    of ``world`` computes the same steps (each its share of the micro-batches); only rank 0 writes.
    """
    world = world or World()
    keep = np.flatnonzero(~data.zero_group) if config.drop_zero_groups else np.arange(len(data.chosen))
    logp_ref = _reference_logp(ref, data, keep, temperature)
    if config.method == "lora":
        attach_lora(policy.model, config, snapshot)
    if world.is_writer:
        print(f"[arena] train r{round_number}: "
              f"{budget_note(policy.shape, config.max_batch_tokens, 'train.max_batch_tokens', training=True)}",
              file=sys.stderr)
    update = GRPOUpdate(policy, config, temperature, world)
    log = _run_steps(update, data, keep, logp_ref, config, round_number, progress and world.is_writer)
    timing = [{"step": row["step"], "tokens_per_sec": row.pop("tokens_per_sec")} for row in log if "loss" in row]
    if not world.is_writer:
        return _summary(config, log, round_number)
    _write_timing(round_number, timing)
    return _save_round(policy, config, out_dir, log, inputs, round_number, snapshot, code)


def _write_timing(round_number: int, timing: list[dict[str, float]]) -> None:
    """Throughput goes to logs/ (git-ignored, not a DVC output): wall-clock numbers would break byte identity."""
    from arena.core.artifacts import atomic_write_text

    atomic_write_text(Path("logs") / f"train-r{round_number}-timing.jsonl",
                      "".join(json.dumps(row, sort_keys=True) + "\n" for row in timing))


def _summary(config: TrainConfig, log: list[dict[str, Any]], round_number: int) -> dict[str, Any]:
    """The round's summary.json: its steps, the last and largest KL, the last batch's mean reward."""
    trained = [row for row in log if "loss" in row]
    return {
        "round": round_number, "method": config.method, "steps": len(log),
        "final_kl": trained[-1]["kl"] if trained else 0.0,
        "max_kl": max((row["kl"] for row in trained), default=0.0),
        "mean_reward": trained[-1]["mean_reward"] if trained else 0.0,
    }


def _save_round(policy: MLXPlayer, config: TrainConfig, out_dir: str | Path, log: list[dict[str, Any]],
                inputs: dict[str, str], round_number: int, snapshot: str | Path,
                code: Mapping[str, str] | None) -> dict[str, Any]:
    import mlx.core as mx
    from mlx.utils import tree_flatten

    summary = _summary(config, log, round_number)
    with atomic_dir(out_dir) as tmp:
        if config.method == "lora":
            weights = dict(sorted(tree_flatten(policy.model.trainable_parameters())))
            mx.save_safetensors(str(tmp / "adapters.safetensors"), weights)
            (tmp / "adapter_config.json").write_text(dump_json(adapter_config(config, snapshot)))
        else:
            save_fused(policy.model, tmp / "weights.safetensors")
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in log))
        (tmp / "summary.json").write_text(dump_json(summary))
        write_meta(tmp, inputs=inputs, config=as_dict(config), code=code)
    return summary
