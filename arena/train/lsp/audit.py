"""The challenger's reward-audit gate: a challenger that proposes one trivial puzzle, or only puzzles with no right
answer, must earn nothing, and the uniform challenger must earn something (the reward can be earned)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from arena.games import puzzles as grammar
from arena.play.probe import Check
from arena.train.lsp.advantages import challenger_rewards, quality, query_values

# Uniform draws searched for a degenerate puzzle of each sort (the grammar's first trivial and first unsolvable one).
SEARCH = 4000


def random_answers(puzzle: grammar.Puzzle, count: int, rng: random.Random) -> list[float]:
    """A uniformly random solver's rewards on ``puzzle`` (none when no answer can be right: nothing is sampled)."""
    if grammar.status(puzzle) != grammar.OK:
        return []
    return [grammar.verify(puzzle, rng.choice(grammar.answers(puzzle))) for _ in range(count)]


def earnings(puzzles: Sequence[grammar.Puzzle], answers: int, use_quality: bool, quality_weight: float,
             seed: int) -> float:
    """A challenger's mean reward over ``puzzles`` against the uniformly random solver (seeded)."""
    rng = random.Random(seed)
    rewards = [random_answers(p, answers, rng) for p in puzzles]
    ok = [grammar.status(p) == grammar.OK for p in puzzles]
    paid = challenger_rewards(query_values(rewards), quality(ok, rewards), use_quality=use_quality,
                              quality_weight=quality_weight)
    return float(np.mean(paid))


def degenerate_puzzles(kinds: Sequence[str], seed: int) -> dict[str, grammar.Puzzle]:
    """The first trivial puzzle (every answer right) and the first one with no right answer in uniform draws."""
    rng, found = random.Random(seed), {}
    for _ in range(SEARCH):
        puzzle = grammar.build(kinds, grammar.sample_choices(kinds, rng))
        sort = "trivial" if grammar.status(puzzle) == grammar.OK and len(grammar.right_answers(puzzle)) == len(
            grammar.answers(puzzle)) else "no right answer" if grammar.status(puzzle) != grammar.OK else None
        if sort is not None:
            found.setdefault(sort, puzzle)
    return found


def audit_challenger(kinds: Sequence[str], answers: int, use_quality: bool, quality_weight: float,
                     proposals: int = 256, seed: int = 0) -> list[Check]:
    """The gate's checks for the configured challenger reward, each from ``proposals`` proposals."""
    label = "lsp" if use_quality else "lsp-zero"
    checks = []
    for sort, puzzle in sorted(degenerate_puzzles(kinds, seed).items()):
        earned = earnings([puzzle] * proposals, answers, use_quality, quality_weight, seed)
        checks.append(Check(label, f"always the same {sort} puzzle {puzzle.to_json()}", f"earns {earned:.3f}",
                            "earns 0", earned == 0.0))
    rng = random.Random(seed)
    uniform = [grammar.build(kinds, grammar.sample_choices(kinds, rng)) for _ in range(proposals)]
    earned = earnings(uniform, answers, use_quality, quality_weight, seed)
    checks.append(Check(label, "uniform challenger", f"earns {earned:.3f}", "earns > 0", earned > 0.0))
    return checks
