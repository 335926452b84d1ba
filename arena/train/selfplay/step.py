"""train@rN of a GRPO round: the learner's decisions with group advantages, their GRPO steps, and the training round."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from arena.core.artifacts import atomic_dir, dump_json
from arena.core.config import as_dict
from arena.core.hashing import canonical_json, digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig
from arena.games.base import Observation
from arena.play.distributed import PlayerPool
from arena.play.records import read_shard
from arena.players.config import sampling_config
from arena.players.memo import PolicyMemo
from arena.players.memory import budget_note, say_once
from arena.players.mlx import MLXPlayer
from arena.train.config import SelfPlayConfig, TrainConfig
from arena.train.fuse import lookahead, save_fused
from arena.train.lora import adapter_config, attach_lora, check_trainable
from arena.train.selfplay.branches import decision_values, read_branches
from arena.train.selfplay.dataparallel import World
from arena.train.selfplay.neurd import NeuRDFit
from arena.train.selfplay.schedule import neurd_rate, round_clip, round_learning_rate
from arena.train.selfplay.update import GRPOUpdate, chosen_logp, distinct_rows

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
    # With branch rollouts (train.objective: neurd): each legal action's sampled value (None: a branch errored),
    # and the decision's visit weight, 1 / the finished games of its game.
    values: list[np.ndarray | None] | None = None
    visit_weights: np.ndarray | None = None


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


def _group_ids(records: Iterable[Mapping[str, Any]], group_by: str) -> list[int]:
    """A group is every game of one deal of one game (seeds repeat across the games of a mix), from one seat too
    where ``group_by`` is ``seat``."""
    keys: dict[tuple[str, str, int, int], int] = {}
    return [keys.setdefault((r["game_id"], canonical_json(r["variant"]), r["seed"],
                             r["first_seat"] if group_by == "seat" else -1), len(keys)) for r in records]


def learner_decisions(records: Sequence[Mapping[str, Any]], learner_spec: str, config: TrainConfig,
                      branches: Sequence[Mapping[str, Any]] | None = None) -> Decisions:
    """The learner's decisions with group advantages (a group = every game played from one deal of one game, from
    one seat where ``config.group_by`` says so), and with ``branches`` (their branch games) every action's value."""
    from arena.train.selfplay.grpo import group_advantages

    games = _scored_games(records, learner_spec, config)
    decisions = _flat_decisions(games, group_advantages([g[2] for g in games],
                                                        _group_ids((g[0] for g in games), config.group_by),
                                                        normalise_std=config.normalise_std))
    if branches is None:
        return decisions
    values, weights = decision_values(games, branches, config.invalid_penalty, config.neurd_weighting)
    return replace(decisions, values=values, visit_weights=weights)


def _flat_decisions(games: list[tuple[Mapping[str, Any], int, float]], grouped: Any) -> Decisions:
    """Every learner decision of ``games``, in order, with its game's advantage."""
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


def _reference_logp(ref: MLXPlayer, data: Decisions, keep: np.ndarray, temperature: float) -> np.ndarray:
    """The reference's log-probability of each kept decision's choice (0 for the others), each distinct (prompt,
    legal actions, choice) scored once, in scoring passes."""
    prompt = ref.prompts.prompt_ids
    keys = [(PolicyMemo.key(prompt(data.observations[i]), data.observations[i].legal_actions), int(data.chosen[i]))
            for i in keep]
    first, _ = distinct_rows(keys)
    row_of = {keys[j]: r for r, j in enumerate(first)}
    distinct = np.zeros(len(first))
    for start, end, batch in ref.scoring_passes([data.observations[keep[j]] for j in first]):
        part = keep[first[start:end]]
        distinct[start:end] = np.array(chosen_logp(ref.model, batch, data.chosen[part], temperature))
    logp_ref = np.zeros(len(data.chosen))
    logp_ref[keep] = distinct[[row_of[key] for key in keys]]
    return logp_ref


def _log_row(step: int, iteration: int, result: Mapping[str, Any], data: Decisions, picked: np.ndarray,
             elapsed: float) -> dict[str, Any]:
    """One train_log.jsonl row (its tokens_per_sec is moved to logs/ before the log is written)."""
    row = {
        "step": step, "iteration": iteration, "loss": round(result["loss"], 6), "kl": round(result["kl"], 6),
        "clip_fraction": round(result["clip_fraction"], 6),
        "mean_reward": round(float(data.rewards[picked].mean()), 6),
        "zero_adv_fraction": round(float(data.zero_group.mean()), 6),
        "lr": round(result["lr"], 9), "rows": result["rows"],
        "tokens_per_sec": round(result["tokens"] / elapsed, 1),
    }
    if "exploitability" in result:
        row["exploitability"] = result["exploitability"]
    return {**row, "anchors": result["anchors"]} if "anchors" in result else row


@dataclass
class _Steps:
    """Where a round's steps stand: its number, iterations, the batch RNG and the progress bar."""

    round_number: int
    iterations: int
    rng: np.random.Generator
    bar: Any


def _run_steps(update: GRPOUpdate, data: Decisions, keep: np.ndarray, logp_ref: np.ndarray, config: TrainConfig,
               at: _Steps, iteration: int) -> list[dict[str, Any]]:
    """One iteration's ``config.steps`` GRPO steps, each on a random batch of its kept decisions; a row a step."""
    log = []
    for local in range(config.steps):
        step = iteration * config.steps + local
        start = time.perf_counter()
        at.bar.update(1)
        if len(keep) == 0:
            log.append({"step": step, "iteration": iteration, "skipped": "every group had equal rewards"})
            continue
        picked = np.sort(at.rng.choice(keep, size=min(config.batch_size, len(keep)), replace=False))
        global_step = (at.round_number - 1) * at.iterations * config.steps + step
        result = update([data.observations[i] for i in picked], data.chosen[picked], data.logp_old[picked],
                        logp_ref[picked], data.advantages[picked],
                        round_learning_rate(config, global_step, at.iterations * config.steps))
        log.append(_log_row(step, iteration, result, data, picked, time.perf_counter() - start))
    return log


def _fresh_rollouts(policy: MLXPlayer, pool_file: str | Path, selfplay: SelfPlayConfig, seeds: SeedsConfig,
                    round_number: int, config: TrainConfig) -> Callable[[int], Decisions]:
    """Iteration i's decisions: the policy as trained so far plays the iteration's deals against the pool."""
    from arena.train.pool import load_pool
    from arena.train.selfplay.rollouts import play_iteration

    pool: dict[str, Any] = load_pool(pool_file)
    players = PlayerPool()  # frozen pool members, loaded once a round (their memos stay valid)

    def fresh(iteration: int) -> Decisions:
        records, branches = play_iteration(policy, pool, selfplay, seeds, round_number, iteration, players,
                                           branches=config.objective == "neurd")
        return learner_decisions(records, policy.spec, config, branches)

    return fresh


def train_round(snapshot: str | Path, reference: str | Path, shard: str | Path, round_number: int,
                selfplay: SelfPlayConfig, config: TrainConfig, out_dir: str | Path, progress: bool = True,
                pool_file: str | Path | None = None, seeds: SeedsConfig | None = None, world: World | None = None,
                code: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Train@r: GRPO steps on the round's rollouts (the first iteration), then ``selfplay.iterations_per_round - 1``
    more iterations of fresh rollouts against ``pool_file``'s pool and steps; write the weights (or LoRA adapter)
    and a log.

    With a ``world`` of several ranks (``launch.py``) every rank runs this and only rank 0 writes; ``code`` is
    what meta.json records as the producing code (default: this process's; a launched rank gets the stage's).
    """
    import mlx.core as mx

    mx.random.seed(config.seed + round_number)
    check_trainable(snapshot, config)
    policy = MLXPlayer(snapshot, sampling_config(selfplay, selfplay.memo_prompts))
    ref = reference_player(reference, selfplay)
    sampled = config.objective == "neurd" and config.neurd_values == "sampled"
    data = learner_decisions(read_shard(shard), policy.spec, config, read_branches(shard) if sampled else None)
    inputs = {"snapshot": digest_path(snapshot), "reference": digest_path(reference), "rollouts": digest_path(shard)}
    more, extra = None, {}
    # Full-width targets come from the game tree, so a round's later iterations play no games.
    if selfplay.iterations_per_round > 1 and config.neurd_values == "sampled":
        if pool_file is None or seeds is None:
            raise ValueError("selfplay.iterations_per_round > 1 needs the round's pool and seed plan")
        more = _fresh_rollouts(policy, pool_file, selfplay, seeds, round_number, config)
        inputs["pool"] = digest_path(pool_file)
        extra = {"selfplay": as_dict(selfplay), "seeds": as_dict(seeds)}
    return optimise(policy, ref, data, snapshot, config, selfplay.temperature, round_number, out_dir, inputs,
                    progress, Iterations(selfplay.iterations_per_round, more, extra), world, code)


def reference_player(reference: str | Path, selfplay: SelfPlayConfig) -> MLXPlayer:
    """The round's reference (the KL anchor, NeuRD's magnet). Its log-probabilities are read on the training path
    (MLX autograd arithmetic, not the host kernels), so a quantised one gets float32 projections on the CPU too:
    through MLX's x86 quantised matmul, SmolLM2's 12 full-view Kuhn prompts took minutes of CPU (floatcopy.py)."""
    from arena.players.floatcopy import float_projections

    ref = MLXPlayer(reference, sampling_config(selfplay))
    float_projections(ref.model)
    return ref


def _update(policy: MLXPlayer, config: TrainConfig, temperature: float, round_number: int,
            world: World) -> GRPOUpdate | NeuRDFit:
    """The round's optimiser: ``train.objective``'s, the GRPO clip as ``train.clip_decay`` has it this round."""
    if config.objective == "grpo":
        return GRPOUpdate(policy, replace(config, clip_eps=round_clip(config, round_number)), temperature, world)
    if world.size > 1:
        raise ValueError(f"train.objective: neurd runs in one process, not across {world.size} ranks: "
                         "unset ARENA_TRAIN_LAUNCH or use train.objective: grpo")
    return NeuRDFit(policy, config, temperature, anchor_seed=(config.seed, round_number, 1))


def _run_neurd(fit: NeuRDFit, ref: MLXPlayer, data: Decisions, config: TrainConfig, at: _Steps,
               iteration: int) -> list[dict[str, Any]]:
    """One iteration's NeuRD targets (the run's outer step) and ``config.steps`` Adam steps fitting them, each on
    at most ``config.batch_size`` distinct prompts; a row a step."""
    outer = (at.round_number - 1) * at.iterations + iteration + 1
    if config.neurd_values == "exact":
        targets = fit.full_width(sorted({o.game_id for o in data.observations}), ref, neurd_rate(config, outer))
    else:
        targets = fit.targets(data, ref, neurd_rate(config, outer))
    count, every = len(targets.observations), np.arange(len(data.chosen))
    log = []
    for local in range(config.steps):
        step = iteration * config.steps + local
        start = time.perf_counter()
        at.bar.update(1)
        if count == 0:
            log.append({"step": step, "iteration": iteration, "skipped": "no decision has every action's value"})
            continue
        picked = np.arange(count) if count <= config.batch_size else np.sort(
            at.rng.choice(count, size=config.batch_size, replace=False))
        global_step = (at.round_number - 1) * at.iterations * config.steps + step
        result = fit(targets, picked, round_learning_rate(config, global_step, at.iterations * config.steps))
        log.append(_log_row(step, iteration, result, data, every, time.perf_counter() - start))
    return log


@dataclass(frozen=True)
class Iterations:
    """A round's later iterations: how many in all, each one's fresh decisions, and what the meta must add."""

    count: int = 1
    fresh: Callable[[int], Decisions] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


def optimise(policy: MLXPlayer, ref: MLXPlayer, data: Decisions, snapshot: str | Path, config: TrainConfig,
             temperature: float, round_number: int, out_dir: str | Path, inputs: dict[str, str],
             progress: bool = True, iterations: Iterations | None = None, world: World | None = None,
             code: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``config.steps`` GRPO steps of ``policy`` on ``data`` (KL to ``ref``), then as many on each later
    iteration's fresh decisions; write the weights and the log.

    Any loop whose decisions carry advantages trains through here (self-play GRPO, LSP's two roles). Every rank
    of ``world`` computes the same steps (each its share of the micro-batches); only rank 0 writes.
    """
    iterations, world = iterations or Iterations(), world or World()
    if config.method == "lora":
        attach_lora(policy.model, config, snapshot)
    if world.is_writer:
        note = budget_note(policy.shape, config.max_batch_tokens, "train.max_batch_tokens", training=True)
        say_once(f"train {config.max_batch_tokens} {policy.shape}", f"[arena] train r{round_number}: {note}")
    update = _update(policy, config, temperature, round_number, world)
    start = policy.model.parameters()  # the update replaces arrays, never mutates them: this stays the start
    bar = tqdm(total=config.steps * iterations.count, desc=f"train r{round_number}", unit="step", file=sys.stderr,
               disable=None if progress and world.is_writer else True, leave=False)
    at = _Steps(round_number, iterations.count, np.random.default_rng([config.seed, round_number]), bar)
    log: list[dict[str, Any]] = []
    for iteration in range(iterations.count):
        if iteration and iterations.fresh is not None:
            data = iterations.fresh(iteration)
        if isinstance(update, NeuRDFit):
            log += _run_neurd(update, ref, data, config, at, iteration)
            continue
        keep = np.flatnonzero(~data.zero_group) if config.drop_zero_groups else np.arange(len(data.chosen))
        log += _run_steps(update, data, keep, _reference_logp(ref, data, keep, temperature), config, at, iteration)
    bar.close()
    lookahead(policy.model, start, config.lookahead)
    timing = [{"step": row["step"], "tokens_per_sec": row.pop("tokens_per_sec")} for row in log if "loss" in row]
    if not world.is_writer:
        return _summary(config, log, round_number)
    _write_timing(round_number, timing)
    return _save_round(policy, config, out_dir, log, inputs, round_number, snapshot, iterations.config, code)


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


def save_trained(policy: MLXPlayer, config: TrainConfig, out: Path, snapshot: str | Path) -> None:
    """A round's trained weights into ``out``: the adapter and its config (lora, over ``snapshot``), or every weight."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    if config.method == "lora":
        weights = dict(sorted(tree_flatten(policy.model.trainable_parameters())))
        mx.save_safetensors(str(out / "adapters.safetensors"), weights)
        (out / "adapter_config.json").write_text(dump_json(adapter_config(config, snapshot)))
    else:
        save_fused(policy.model, out / "weights.safetensors")


def _save_round(policy: MLXPlayer, config: TrainConfig, out_dir: str | Path, log: list[dict[str, Any]],
                inputs: dict[str, str], round_number: int, snapshot: str | Path,
                extra: Mapping[str, Any], code: Mapping[str, str] | None) -> dict[str, Any]:
    summary = _summary(config, log, round_number)
    with atomic_dir(out_dir) as tmp:
        save_trained(policy, config, tmp, snapshot)
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in log))
        (tmp / "summary.json").write_text(dump_json(summary))
        write_meta(tmp, inputs=inputs, config={**as_dict(config), **extra}, code=code)
    return summary
