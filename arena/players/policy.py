"""Exact Kuhn policies of players: a model's P(aggressive action) at each of the 12 information sets, and the
scripted players' own tables."""

from __future__ import annotations

from functools import cache

from arena.games.base import Observation
from arena.games.kuhn_theory import INFO_SETS, nash_policy, uniform_policy
from arena.games.registry import make_game
from arena.players.mlx import MLXPlayer
from arena.players.specs import EPS_ORACLE, parse_epsilon

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


def scripted_kuhn_policy(spec: str) -> dict[str, float] | None:
    """The exact P(bet or call) table a scripted player plays, or None for one that never moves legally.

    ``random`` is uniform over the two legal actions, ``first`` always takes the first (check or fold),
    ``oracle`` is the Nash policy with alpha 0, and ``eps-oracle:EPS`` mixes uniform and Nash per decision.
    """
    if spec == "random":
        return uniform_policy()
    if spec == "first":
        return {name: float(obs.legal_actions[0] in AGGRESSIVE) for name, obs in canonical_observations().items()}
    if spec == "oracle":
        return nash_policy(0.0)
    if spec.startswith(EPS_ORACLE):
        epsilon, nash = parse_epsilon(spec), nash_policy(0.0)
        return {name: epsilon * 0.5 + (1.0 - epsilon) * nash[name] for name in INFO_SETS}
    return None
