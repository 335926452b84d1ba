"""train@rN of an LSP round: both roles' decisions with their advantages, through the GRPO update (grpo.step)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.hashing import digest_path
from arena.games import puzzles as grammar
from arena.games.base import Observation
from arena.players.config import sampling_config
from arena.players.mlx import MLXPlayer
from arena.train.config import LspConfig, TrainConfig
from arena.train.lora import check_trainable
from arena.train.lsp.rollouts import read_rollouts
from arena.train.selfplay.step import Decisions, optimise


def lsp_decisions(records: Sequence[Mapping[str, Any]], config: LspConfig) -> Decisions:
    """The solver's answers (advantage: reward minus its puzzle's mean) and, with a model challenger, each
    choice of each proposal (advantage: ``alpha_ch`` times its proposal's challenger advantage).

    ``zero_group`` marks decisions with no signal (a puzzle whose answers all scored alike; a challenger
    advantage of exactly 0), which ``train.drop_zero_groups`` leaves out.
    """
    observations: list[Observation] = []
    chosen, logp_old, advantages, zero, rewards = [], [], [], [], []
    for record in records:
        puzzle = grammar.Puzzle.from_json(record["puzzle"])
        for answer in record["answers"]:
            observation = grammar.solver_observation(puzzle)
            observations.append(observation)
            chosen.append(observation.legal_actions.index(answer["answer"]))
            logp_old.append(answer["logprob"])
            advantages.append(answer["advantage"])
            zero.append(answer["zero_group"])
            rewards.append(answer["reward"])
        if config.challenger != "model":
            continue
        advantage = config.alpha_ch * record["challenger_advantage"]
        for step in record["challenger"]:
            observation = grammar.challenger_observation(grammar.Step(step["prompt"], tuple(step["options"])))
            observations.append(observation)
            chosen.append(step["options"].index(step["choice"]))
            logp_old.append(step["logprob"])
            advantages.append(advantage)
            zero.append(advantage == 0.0)
            rewards.append(record["challenger_reward"])
    return Decisions(observations, np.array(chosen, dtype=np.int64), np.array(logp_old, dtype=np.float64),
                     np.array(advantages, dtype=np.float64), np.array(zero, dtype=bool),
                     np.array(rewards, dtype=np.float64))


def train_lsp_round(snapshot: str | Path, reference: str | Path, rollouts: str | Path, round_number: int,
                    lsp: LspConfig, config: TrainConfig, out_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """train@rN: ``train.steps`` GRPO steps over the round's solver and challenger decisions; weights and a log."""
    import mlx.core as mx

    mx.random.seed(config.seed + round_number)
    player_config = sampling_config(lsp)
    check_trainable(snapshot, config)
    policy = MLXPlayer(snapshot, player_config)
    ref = MLXPlayer(reference, player_config)
    data = lsp_decisions(read_rollouts(rollouts), lsp)
    # A puzzle's answer has no branch games to value its other choices: LSP's two roles train with GRPO's loss.
    config = replace(config, objective="grpo")
    return optimise(policy, ref, data, snapshot, config, lsp.temperature, round_number, out_dir, {
        "snapshot": digest_path(snapshot), "reference": digest_path(reference), "rollouts": digest_path(rollouts),
    }, progress)
