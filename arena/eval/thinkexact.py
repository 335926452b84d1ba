"""A thinking player's exact Kuhn measures, estimated: its policy is an expectation over sampled reasoning.

At an information set the thinking player's probability of the aggressive action is E_r[pi(bet | I, r)] over its
reasoning r. We draw ``samples`` reasonings per information set (each from its own key), average the post-reasoning
move probabilities (an unbiased estimate of each information set's marginal policy; averaging probabilities, not
sampled moves, removes the move's own sampling noise), and take the exact exploitability of that averaged policy.
Exploitability is convex in the policy, so the plug-in estimate is biased upwards by sampling noise; the interval is a
percentile bootstrap over the samples of each information set, resampled independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from arena.core.hashing import digest_config
from arena.games.kuhn_theory import exploitability
from arena.players.mlx import MLXPlayer
from arena.players.policy import AGGRESSIVE, canonical_observations

# Reasonings drawn per information set where a round's evaluation estimates a thinking player's Kuhn exploitability.
THINKING_SAMPLES = 16


def kuhn_thinking_samples(player: MLXPlayer, samples: int, seed: int = 0) -> dict[str, list[float]]:
    """Per Kuhn information set, P(bet or call) after each of ``samples`` sampled reasonings (one batch)."""
    observations = canonical_observations()
    batch = [replace(o, sample_key=int(digest_config({"thinkexact": [seed, name, k]})[:16], 16))
             for name, o in observations.items() for k in range(samples)]
    logps = player.think(batch)[1]
    out: dict[str, list[float]] = {name: [] for name in observations}
    for observation, logp in zip(batch, logps, strict=True):
        aggressive = next(i for i, a in enumerate(observation.legal_actions) if a in AGGRESSIVE)
        out[observation.info_set].append(float(np.exp(logp[aggressive])))
    return out


def exploitability_interval(samples: dict[str, list[float]], boot: int = 2000, seed: int = 0,
                            level: float = 0.95) -> dict[str, Any]:
    """The averaged policy's exploitability and a percentile-bootstrap interval over the per-set samples."""
    rng = np.random.default_rng(seed)
    point = exploitability({name: float(np.mean(v)) for name, v in samples.items()})
    draws = []
    for _ in range(boot):
        policy = {name: float(np.mean(rng.choice(v, size=len(v)))) for name, v in samples.items()}
        draws.append(exploitability(policy))
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return {"exploitability": point, "interval": [float(low), float(high)], "level": level,
            "samples_per_info_set": min(len(v) for v in samples.values()), "bootstrap": boot,
            "policy": {name: round(float(np.mean(v)), 6) for name, v in samples.items()},
            "spread": {name: round(float(np.std(v)), 6) for name, v in samples.items()}}


# ----------------------------------------------------------------------------------------------- Nim


def _nim_move(action: str) -> tuple[int, int]:
    """(pile, quantity) of a Nim action ('[2 3]')."""
    pile, quantity = action[1:-1].split()
    return int(pile), int(quantity)


def nim_thinking_samples(player: MLXPlayer, configurations: Sequence[tuple[int, ...]], samples: int,
                         seed: int = 0) -> dict[tuple[int, ...], list[float]]:
    """Per Nim configuration (the first move of a game from it), the mass the thinking player puts on winning moves
    after each of ``samples`` sampled reasonings (one batch, every row from its own key)."""
    from arena.games.nim_theory import winning_moves
    from arena.games.registry import make_game

    observations = [make_game("nim", 0, {"piles": list(piles)}).observation() for piles in configurations]
    batch = [replace(o, sample_key=int(digest_config({"thinkexact-nim": [seed, list(piles), k]})[:16], 16))
             for piles, o in zip(configurations, observations, strict=True) for k in range(samples)]
    logps = player.think(batch)[1]
    out: dict[tuple[int, ...], list[float]] = {tuple(piles): [] for piles in configurations}
    for index, (observation, logp) in enumerate(zip(batch, logps, strict=True)):
        piles = tuple(configurations[index // samples])
        winning = set(winning_moves(piles))
        out[piles].append(float(sum(np.exp(lp) for action, lp in zip(observation.legal_actions, logp, strict=True)
                                    if _nim_move(action) in winning)))
    return out


def winning_mass_interval(samples: Mapping[tuple[int, ...], Sequence[float]], boot: int = 2000, seed: int = 0,
                          level: float = 0.95) -> dict[str, Any]:
    """The thinking policy's winning-move mass over the configurations (the mean over configurations of each one's
    mean over reasonings: unbiased, the mass is linear in the policy) and a percentile-bootstrap interval,
    each configuration's samples resampled independently."""
    rng = np.random.default_rng(seed)
    rows = [np.asarray(v, dtype=np.float64) for v in samples.values()]
    point = float(np.mean([r.mean() for r in rows]))
    draws = [float(np.mean([rng.choice(r, size=len(r)).mean() for r in rows])) for _ in range(boot)]
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return {"winning_move_mass": point, "interval": [float(low), float(high)], "level": level,
            "configurations": len(rows), "samples_per_configuration": min(len(r) for r in rows), "bootstrap": boot,
            "within_configuration_sd": float(np.mean([r.std() for r in rows]))}
