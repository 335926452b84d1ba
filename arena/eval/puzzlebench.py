"""An LSP round's evaluation: held-out solver accuracy on the puzzle benchmark with Wilson intervals, the
challenger's difficulty (the solver's success on its own proposals) and what it proposes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.artifacts import atomic_write_json
from arena.core.seeds import SeedsConfig, check_seed_ranges
from arena.games import puzzles as grammar
from arena.play.stats import wilson_interval
from arena.players.config import sampling_config
from arena.players.mlx import MLXPlayer
from arena.train.config import LspConfig
from arena.train.lsp.audit import audit_challenger
from arena.train.lsp.rollouts import SOLVER, draw, read_rollouts

# The benchmark's one sampled answer per puzzle uses its own stream of the puzzle's seed (never a training seed).
BENCH_STREAM = 2


@cache
def benchmark(kinds: tuple[str, ...], start: int, stop: int) -> tuple[grammar.Puzzle, ...]:
    """The held-out puzzles: one per seed, uniform over the grammar among puzzles with a right answer."""
    return tuple(grammar.uniform_puzzle(kinds, seed)[1] for seed in range(start, stop))


def _rate(successes: int, n: int) -> dict[str, Any]:
    rate, low, high = wilson_interval(successes, n)
    return {"accuracy": round(rate, 6), "low": round(low, 6), "high": round(high, 6), "n": n}


def solver_accuracy(player: MLXPlayer, puzzles: Sequence[grammar.Puzzle], seeds: range) -> dict[str, Any]:
    """Per kind and overall: one sampled answer per puzzle (its count with a Wilson interval), the argmax
    answer's accuracy, and the exact expected accuracy (the policy's mass on right answers)."""
    policies = player.policy([grammar.solver_observation(p) for p in puzzles])
    rows: dict[str, list[tuple[int, int, float]]] = {}
    for seed, puzzle, probs in zip(seeds, puzzles, policies, strict=True):
        legal, right = grammar.answers(puzzle), grammar.right_answers(puzzle)
        sampled = legal[draw(probs, np.random.default_rng([seed, SOLVER, BENCH_STREAM]))] in right
        greedy = legal[int(np.argmax(probs))] in right
        mass = float(sum(p for a, p in zip(legal, probs, strict=True) if a in right))
        for key in ("all", puzzle.kind):
            rows.setdefault(key, []).append((int(sampled), int(greedy), mass))
    out = {}
    for key, values in rows.items():
        n = len(values)
        out[key] = {**_rate(sum(v[0] for v in values), n),
                    "greedy": _rate(sum(v[1] for v in values), n)["accuracy"],
                    "expected": round(float(np.mean([v[2] for v in values])), 6)}
    return out


def feature_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """How often each value of each puzzle feature was proposed (kind, status, piles, marks, ...)."""
    counts: dict[str, Counter] = {}
    for record in records:
        for key, value in record["features"].items():
            if key != "right_fraction":
                counts.setdefault(key, Counter())[str(value)] += 1
    return {key: dict(sorted(c.items())) for key, c in sorted(counts.items())}


def challenger_stats(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The challenger's round: its difficulty (the solver's success on its own solvable proposals), how many
    proposals were valid and had their quality, its reward, and the distribution of its proposals' features."""
    ok = [r for r in records if r["status"] == grammar.OK]
    return {
        "proposals": len(records),
        "valid_fraction": round(len(ok) / len(records), 6),
        "quality_fraction": round(sum(r["quality"] for r in records) / len(records), 6),
        "solver_success": round(float(np.mean([r["value"] for r in ok])), 6) if ok else None,
        "right_fraction": round(float(np.mean([r["features"]["right_fraction"] for r in ok])), 6) if ok else None,
        "mean_reward": round(float(np.mean([r["challenger_reward"] for r in records])), 6),
        "features": feature_counts(records),
    }


def evaluate_lsp_round(snapshot: str | Path, round_number: int, config: LspConfig, seeds: SeedsConfig,
                       rollouts: str | Path | None, out_file: str | Path) -> dict[str, Any]:
    """eval@rN of loop: lsp: the snapshot's held-out solver accuracy, the round's challenger, the reward audit."""
    held_out = config.benchmark
    check_seed_ranges(held_out, seeds.reserved())
    player = MLXPlayer(snapshot, sampling_config(config))
    result: dict[str, Any] = {"round": round_number, "snapshot": player.spec, "model_hash": player.pin()["model_hash"],
                              "loop": "lsp", "challenger": config.challenger, "quality": config.quality}
    result["benchmark"] = solver_accuracy(player, benchmark(config.puzzles, held_out.start, held_out.stop), held_out)
    if rollouts is not None:
        result["proposals"] = challenger_stats(read_rollouts(rollouts))
    checks = audit_challenger(config.puzzles, config.answers_per_proposal, config.quality, config.quality_weight)
    result["challenger_audit"] = [{"check": c.name, "measured": c.measured, "requirement": c.requirement,
                                   "passed": c.passed} for c in checks]
    atomic_write_json(out_file, result)
    return result
