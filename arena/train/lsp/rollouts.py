"""rollouts@rN of an LSP round: the challenger's proposals, G solver answers to each, and both roles' rewards."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from arena.core import seeds as seed_plan
from arena.core.artifacts import atomic_dir
from arena.core.config import as_dict
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig
from arena.games import puzzles as grammar
from arena.players.config import sampling_config
from arena.players.mlx import MLXPlayer
from arena.train.config import LspConfig
from arena.train.lsp.advantages import (
    challenger_advantages,
    challenger_rewards,
    quality,
    query_values,
    solver_advantages,
)

ROLLOUTS_FILE = "proposals.jsonl"
# Streams of one proposal's seed: its challenger choices, its solver answers (and the benchmark's one answer).
CHALLENGER, SOLVER = 0, 1


def draw(probs: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn from ``probs`` with one uniform from ``rng`` (the MLX player's inverse-CDF draw)."""
    cumulative = np.cumsum(probs)
    return min(int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")), len(probs) - 1)


def _model_proposals(player: MLXPlayer, kinds: Sequence[str], seeds: Sequence[int],
                     progress: bool) -> list[list[dict[str, Any]]]:
    """Every proposal's choices, sampled in lockstep (one scoring pass per choice depth over all open proposals)."""
    steps: list[list[dict[str, Any]]] = [[] for _ in seeds]
    bar = tqdm(desc="propose", unit="choice", file=sys.stderr, disable=None if progress else True, leave=False)
    while True:
        open_steps = [(i, step) for i in range(len(seeds))
                      if (step := grammar.next_step(kinds, [s["choice"] for s in steps[i]])) is not None]
        if not open_steps:
            return steps
        policies = player.policy([grammar.challenger_observation(step) for _, step in open_steps])
        for (i, step), probs in zip(open_steps, policies, strict=True):
            pick = draw(probs, np.random.default_rng([seeds[i], CHALLENGER, len(steps[i])]))
            steps[i].append({"prompt": step.prompt, "options": list(step.options), "choice": step.options[pick],
                             "logprob": float(np.log(probs[pick]))})
        bar.update(len(open_steps))


def _answers(player: MLXPlayer, puzzles: Sequence[grammar.Puzzle], seeds: Sequence[int],
             count: int) -> list[list[dict[str, Any]]]:
    """``count`` sampled answers to each puzzle that has a right answer (none to the others: all would score 0)."""
    open_ids = [i for i, p in enumerate(puzzles) if grammar.status(p) == grammar.OK]
    policies = player.policy([grammar.solver_observation(puzzles[i]) for i in open_ids])
    out: list[list[dict[str, Any]]] = [[] for _ in puzzles]
    for i, probs in zip(open_ids, policies, strict=True):
        legal = grammar.answers(puzzles[i])
        for g in range(count):
            pick = draw(probs, np.random.default_rng([seeds[i], SOLVER, g]))
            out[i].append({"answer": legal[pick], "logprob": float(np.log(probs[pick])),
                           "reward": grammar.verify(puzzles[i], legal[pick])})
    return out


def score_proposals(records: list[dict[str, Any]], config: LspConfig) -> list[dict[str, Any]]:
    """Fill in each proposal's value, quality, challenger reward and advantage, and its answers' advantages."""
    rewards = [[a["reward"] for a in r["answers"]] for r in records]
    values = query_values(rewards)
    flags = quality([r["status"] == grammar.OK for r in records], rewards)
    paid = challenger_rewards(values, flags, use_quality=config.quality, quality_weight=config.quality_weight)
    advantages = challenger_advantages(paid)
    solver, zero = solver_advantages(rewards)
    position = 0
    for record, value, flag, reward, advantage in zip(records, values, flags, paid, advantages, strict=True):
        record.update(value=round(float(value), 6), quality=bool(flag), challenger_reward=float(reward),
                      challenger_advantage=float(advantage))
        for answer in record["answers"]:
            answer.update(advantage=float(solver[position]), zero_group=bool(zero[position]))
            position += 1
    return records


def propose_and_answer(player: MLXPlayer, config: LspConfig, seeds: Sequence[int],
                       progress: bool = True) -> list[dict[str, Any]]:
    """One LSP iteration's data: a proposal per seed (the model's, or the uniform grammar's) and its answers."""
    kinds = config.puzzles
    if config.challenger == "model":
        steps = _model_proposals(player, kinds, seeds, progress)
        choices = [[s["choice"] for s in proposal] for proposal in steps]
    else:
        # GRPO on uniformly sampled puzzles: the benchmark's distribution, drawn from training seeds; nothing to train.
        drawn = [grammar.uniform_puzzle(kinds, seed)[0] for seed in seeds]
        steps, choices = [[] for _ in seeds], drawn
    puzzles = [grammar.build(kinds, c) for c in choices]
    answers = _answers(player, puzzles, seeds, config.answers_per_proposal)
    records = [{"seed": seed, "choices": c, "puzzle": p.to_json(), "status": grammar.status(p),
                "features": grammar.features(p), "challenger": s, "answers": a}
               for seed, c, p, s, a in zip(seeds, choices, puzzles, steps, answers, strict=True)]
    return score_proposals(records, config)


def lsp_rollouts(snapshot: str | Path, config: LspConfig, seeds: SeedsConfig, round_number: int,
                 out_dir: str | Path, progress: bool = True) -> list[dict[str, Any]]:
    """rollouts@rN: the round's proposals and answers from ``snapshot``, as JSONL with a meta.json."""
    block = seed_plan.lsp_seeds(seeds, config.proposals, round_number)
    player = MLXPlayer(snapshot, sampling_config(config))
    records = propose_and_answer(player, config, list(block), progress)
    with atomic_dir(out_dir) as tmp:
        (tmp / ROLLOUTS_FILE).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        write_meta(tmp, inputs={"snapshot": digest_path(snapshot)},
                   config={"lsp": as_dict(config), "round": round_number, "seeds": [block.start, block.stop]})
    return records


def read_rollouts(out_dir: str | Path) -> list[dict[str, Any]]:
    """The proposals an LSP rollouts artifact holds."""
    path = Path(out_dir) / ROLLOUTS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {out_dir} is not an LSP rollouts artifact (loop: lsp writes it)")
    return [json.loads(line) for line in path.read_text().splitlines() if line]
