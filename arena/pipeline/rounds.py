"""The round stages: round 0 (the base model as snapshot 0) and round N (rollouts, train, fuse, pool, evaluate).

A round is one DVC stage (so a no-op ``dvc repro`` stays cheap as rounds grow) whose five outputs are each
their own content-addressed artifact directory with a ``meta.json``; the steps run in order, each reading
the artifacts the previous steps wrote. A finished round writes its few headline numbers (``dvc metrics show``'s
file) and says them in one stderr line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.config import load_section
from arena.core.errors import ArenaError
from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.puzzlebench import evaluate_lsp_round
from arena.eval.roundeval import evaluate_round, round_games
from arena.play.records import read_shard
from arena.players.config import sampling_config
from arena.report.summary import round_headline, round_line
from arena.train.config import (
    CurriculumConfig,
    LspConfig,
    PoolConfig,
    RestConfig,
    SelfPlayConfig,
    TrainConfig,
    check_loop,
)
from arena.train.fuse import copy_snapshot, fuse_round
from arena.train.lsp.rollouts import lsp_rollouts
from arena.train.lsp.train import train_lsp_round
from arena.train.memory import PASS_TOKENS, memory_note
from arena.train.pool import build_pool
from arena.train.rest.sample import sample_round
from arena.train.rest.sft import empty_win_set, round_metrics, train_rest_round
from arena.train.selfplay.launch import launch_for, launch_train_round
from arena.train.selfplay.rollouts import play_round
from arena.train.selfplay.step import train_round
from arena.train.selfplay.thinkround import train_thinking_round
from arena.train.thinking import reasoning_stats


@dataclass(frozen=True)
class RoundPaths:
    """Where round ``n`` reads and writes, under ``artifacts`` (the layout dvc.yaml names)."""

    root: Path
    n: int
    prev: int

    def _at(self, kind: str, n: int, suffix: str = "") -> Path:
        return self.root / kind / f"r{n}{suffix}"

    @property
    def base(self) -> Path:
        return self.root / "models" / "base"

    def snapshot(self, n: int) -> Path:
        return self._at("snapshots", n)

    def pool(self, n: int) -> Path:
        return self._at("pools", n)

    def rollouts(self, n: int) -> Path:
        return self._at("rollouts", n)

    def trained(self, n: int) -> Path:
        return self._at("adapters", n)

    def evaluation(self, n: int) -> Path:
        return self._at("evals", n, ".json")

    def headline(self, n: int) -> Path:
        """The round's few numbers ``dvc metrics show`` prints (``arena.report.summary.round_headline``)."""
        return self._at("metrics", n, ".json")


def _evaluate(paths: RoundPaths, n: int, params: Mapping[str, Any], extra: Mapping[str, Any]) -> None:
    if check_loop(params) == "lsp":
        # LSP's round is judged on the held-out puzzles and its own proposals, not on games.
        evaluate_lsp_round(paths.snapshot(n), n, load_section(LspConfig, "lsp", params),
                           load_section(SeedsConfig, "seeds", params), paths.rollouts(n) if n else None,
                           paths.evaluation(n))
        return
    reserved = load_section(SeedsConfig, "seeds", params).reserved()
    eval_config = EvalConfig.from_dict(params.get("eval"), "eval")
    selfplay = load_section(SelfPlayConfig, "selfplay", params)
    # GRPO trains on the whole mix; ReST samples selfplay.game alone.
    trained = selfplay.games if check_loop(params) == "selfplay" else selfplay.games[:1]
    games = round_games(eval_config.games, trained)
    evaluate_round(paths.snapshot(n), paths.pool(n), n, load_section(RoundEvalConfig, "roundeval", params),
                   eval_config, reserved, paths.evaluation(n), extra=extra, games=games)


def _said(paths: RoundPaths, n: int, started: float) -> None:
    """The round's headline metrics file, and the stage log's one line for it: its exact measures, its chips
    against the oracle, its time."""
    result = json.loads(paths.evaluation(n).read_text(encoding="utf-8"))
    atomic_write_json(paths.headline(n), round_headline(result))
    print(round_line(result, time.monotonic() - started), file=sys.stderr)


def round_zero(paths: RoundPaths, params: Mapping[str, Any]) -> None:
    """round0: snapshot 0 is the base model; its pool, an empty ReST win set, and its evaluation."""
    started = time.monotonic()
    selfplay = load_section(SelfPlayConfig, "selfplay", params)
    copy_snapshot(paths.base, paths.snapshot(0))
    build_pool(None, paths.snapshot(0), load_section(PoolConfig, "pool", params), selfplay.game, paths.pool(0),
               sampling_config(selfplay))
    empty_win_set(paths.trained(0))
    _evaluate(paths, 0, params, {})
    _said(paths, 0, started)


def _rollouts(paths: RoundPaths, params: Mapping[str, Any], loop: str) -> None:
    selfplay = load_section(SelfPlayConfig, "selfplay", params)
    seeds = load_section(SeedsConfig, "seeds", params)
    if loop == "lsp":
        lsp_rollouts(paths.snapshot(paths.prev), load_section(LspConfig, "lsp", params), seeds, paths.n,
                     paths.rollouts(paths.n))
    elif loop == "rest":
        sample_round(paths.snapshot(paths.prev), selfplay.game, load_section(RestConfig, "rest", params),
                     load_section(CurriculumConfig, "curriculum", params), seeds, paths.n, paths.rollouts(paths.n))
    else:  # branch games give sampled NeuRD action values; full-width ones come from the game tree
        train = load_section(TrainConfig, "train", params)
        play_round(paths.snapshot(paths.prev), paths.pool(paths.prev), selfplay, seeds, paths.n,
                   paths.rollouts(paths.n), branches=train.objective == "neurd" and train.neurd_values == "sampled")


def _train(paths: RoundPaths, params: Mapping[str, Any], loop: str) -> None:
    n, prev = paths.n, paths.prev
    config = load_section(TrainConfig, "train", params)
    launch = launch_for(loop, config.objective if loop == "selfplay" else "grpo")
    if loop == "rest":
        train_rest_round(paths.snapshot(prev), paths.base, paths.rollouts(n), paths.trained(prev), n,
                         load_section(RestConfig, "rest", params), paths.trained(n))
        return
    reference = paths.base if config.reference == "base" else paths.snapshot(prev)
    if loop == "lsp":
        train_lsp_round(paths.snapshot(prev), reference, paths.rollouts(n), n, load_section(LspConfig, "lsp", params),
                        config, paths.trained(n))
        return
    selfplay = load_section(SelfPlayConfig, "selfplay", params)
    if selfplay.think:  # whole replies: reasoning tokens and the move (validated: objective grpo)
        if launch is not None:
            raise ArenaError("selfplay.think trains in one process, not data-parallel: unset ARENA_TRAIN_LAUNCH")
        train_thinking_round(paths.snapshot(prev), reference, paths.rollouts(n), n, selfplay, config,
                             paths.trained(n), previous=paths.trained(prev))
        return
    if launch is not None:
        launch_train_round(launch, paths.snapshot(prev), reference, paths.rollouts(n), n, params, paths.trained(n),
                           paths.pool(prev))
        return
    train_round(paths.snapshot(prev), reference, paths.rollouts(n), n, selfplay, config, paths.trained(n),
                pool_file=paths.pool(prev), seeds=load_section(SeedsConfig, "seeds", params))


def _memory(paths: RoundPaths, params: Mapping[str, Any], loop: str) -> None:
    """The stage log's memory estimate for the snapshot this round trains (arena.train.memory)."""
    config = load_section(RestConfig, "rest", params) if loop == "rest" else load_section(TrainConfig, "train", params)
    tokens = getattr(config, "max_batch_tokens", PASS_TOKENS)
    lora = loop == "rest" or config.method == "lora"
    note = memory_note(paths.snapshot(paths.prev), tokens, config.lora_layers if lora else 0, config.lora_rank)
    print(f"round {paths.n}: {note}", file=sys.stderr)


def _thinks(params: Mapping[str, Any], loop: str) -> bool:
    """Whether the round's rollouts were played by a thinking learner (``selfplay.think`` or ``rest.think``)."""
    if loop == "selfplay":
        return bool(load_section(SelfPlayConfig, "selfplay", params).think)
    return loop == "rest" and bool(load_section(RestConfig, "rest", params).think)


def round_n(paths: RoundPaths, params: Mapping[str, Any]) -> None:
    """round@rN: rollouts from snapshot ``prev``, training, the fused snapshot N, its pool, its evaluation."""
    started = time.monotonic()
    loop = check_loop(params)
    n, prev = paths.n, paths.prev
    _memory(paths, params, loop)
    _rollouts(paths, params, loop)
    _train(paths, params, loop)
    fuse_round(paths.snapshot(prev), paths.trained(n), paths.snapshot(n))
    selfplay = load_section(SelfPlayConfig, "selfplay", params)
    build_pool(paths.pool(prev), paths.snapshot(n), load_section(PoolConfig, "pool", params), selfplay.game,
               paths.pool(n), sampling_config(selfplay))
    extra = round_metrics(paths.rollouts(n), paths.trained(n)) if loop != "lsp" else {}
    if _thinks(params, loop):  # the rollouts' reasoning (only then: other rounds keep their bytes)
        extra["rollout_reasoning"] = reasoning_stats(read_shard(paths.rollouts(n)))
    _evaluate(paths, n, params, extra)
    _said(paths, n, started)
