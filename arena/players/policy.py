"""A model's Kuhn policy: its probability of the aggressive action at each of the 12 information sets."""

from __future__ import annotations

from functools import cache

from arena.games.base import Observation
from arena.games.kuhn_theory import INFO_SETS
from arena.games.registry import make_game
from arena.players.mlx import MLXPlayer

AGGRESSIVE = ("[bet]", "[call]")
PASSIVE = ("[check]", "[fold]")


def _action(legal: tuple[str, ...], letter: str) -> str:
    wanted = AGGRESSIVE if letter == "b" else PASSIVE
    return next(action for action in legal if action in wanted)


@cache
def canonical_observations() -> dict[str, Observation]:
    """One real observation per information set, reached by playing a one-round game to it.

    Built from actual games (not hand-written strings) so the prompt and legal-action order are exactly
    what the model sees in play.
    """
    found: dict[str, Observation] = {}
    for seed in range(1000):
        for info_set in INFO_SETS:
            if info_set in found:
                continue
            game = make_game("kuhn", seed, {"rounds": 1})
            for letter in info_set[1:]:
                game.step(_action(game.observation().legal_actions, letter))
            observation = game.observation()
            if observation.info_set == info_set:
                found[info_set] = observation
        if len(found) == len(INFO_SETS):
            return {name: found[name] for name in INFO_SETS}
    raise RuntimeError(f"no deal in 1000 seeds reaches information sets {sorted(set(INFO_SETS) - set(found))}")


def model_policy(player: MLXPlayer) -> dict[str, float]:
    """P(bet or call) at each information set, from one batched scoring pass over the canonical observations."""
    observations = canonical_observations()
    probabilities = player.policy(list(observations.values()))
    policy = {}
    for (name, observation), probs in zip(observations.items(), probabilities, strict=True):
        aggressive = next(i for i, a in enumerate(observation.legal_actions) if a in AGGRESSIVE)
        policy[name] = round(float(probs[aggressive]), 9)
    return policy
