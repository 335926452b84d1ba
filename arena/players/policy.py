"""Exact policies of players at every information state: Kuhn (P(aggressive action) at 12 info sets, and the
scripted players' own tables) and Leduc (a distribution over legal actions at OpenSpiel's 936 info states)."""

from __future__ import annotations

from functools import cache

import numpy as np

from arena.games import leduc_theory
from arena.games.base import Observation
from arena.games.kuhn_theory import INFO_SETS, nash_policy, uniform_policy
from arena.games.registry import make_game
from arena.players.chained import exact_policy_probs
from arena.players.mlx import MLXPlayer
from arena.players.specs import EPS_ORACLE, parse_epsilon

AGGRESSIVE = ("[bet]", "[call]")
PASSIVE = ("[check]", "[fold]")
# Games whose exact policy a model can be scored on (``arena policy --game``).
EXACT_GAMES = ("kuhn", "leduc")
# A Leduc action string -> OpenSpiel's action name (a check is OpenSpiel's call with nothing owed).
LEDUC_NAMES = {"[fold]": "fold", "[check]": "call", "[call]": "call", "[raise]": "raise"}


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


def _leduc_seeds() -> dict[tuple[int, int, int | None], int]:
    """A seed per (position, private card, public card or None): enough to reach every info state.

    Two checks reveal a deal's public card; the public card is drawn from the game's own stream, so a seed
    deals the same cards whatever is played.
    """
    seeds: dict[tuple[int, int, int | None], int] = {}
    for seed in range(5000):
        game = make_game("leduc", seed)
        first = game.observation().state["card"]
        game.step("[check]")
        second = game.observation().state["card"]
        game.step("[check]")
        public = game.observation().state["public"]
        for position, card in ((0, first), (1, second)):
            seeds.setdefault((position, card, public), seed)
            seeds.setdefault((position, card, None), seed)
        if len(seeds) == 2 * 6 * 6:  # per position: 6 cards x (5 public cards or none)
            return seeds
    raise RuntimeError(f"5000 Leduc seeds reach only {len(seeds)} of 72 (position, card, public) deals")


def _leduc_move(legal: tuple[str, ...], action: int) -> str:
    return next(a for a in legal if leduc_theory.ACTION_NAMES[action] == LEDUC_NAMES[a])


@cache
def leduc_canonical_observations() -> dict[str, Observation]:
    """One real observation per Leduc info state (all 936, in ``leduc_theory.info_states()`` order).

    Each is reached by playing a one-hand game, dealt as the info state needs, along its betting history, so
    the prompt and the legal-action order are exactly what the model sees in play.
    """
    tree, seeds, found = leduc_theory.tree(), _leduc_seeds(), {}
    for key, (node, deal) in zip(tree.info_states, tree.representative, strict=True):
        history, cards = tree.histories[node], leduc_theory.DEALS[deal]
        position = int(tree.actor[node])
        public = cards[2] if leduc_theory.betting_round(history) == 2 else None
        game = make_game("leduc", seeds[position, cards[position], public])
        for action in history[0] + history[1]:
            game.step(_leduc_move(game.observation().legal_actions, action))
        observation = game.observation()
        if observation.info_set != key:
            raise RuntimeError(f"replaying {history} reached {observation.info_set!r}, not {key!r}")
        found[key] = observation
    return found


def leduc_model_policy(player: MLXPlayer) -> dict[str, dict[str, float]]:
    """{OpenSpiel info state: {fold/call/raise: probability}}, from one batched scoring pass over all 936."""
    observations = leduc_canonical_observations()
    probabilities = exact_policy_probs(player, list(observations.values()))
    # Renormalised in float64: exps of float32 log-probabilities can sum to 1 - 1e-6 (SmolLM2's compact view), past
    # leduc_theory's tolerance.
    return {
        key: {LEDUC_NAMES[a]: round(float(p), 9)
              for a, p in zip(observation.legal_actions, np.asarray(probs, np.float64) / np.sum(probs), strict=True)}
        for (key, observation), probs in zip(observations.items(), probabilities, strict=True)
    }


def exact_policy(player: MLXPlayer, game: str) -> dict:
    """A model's exact policy table for ``game`` (one of ``EXACT_GAMES``)."""
    if game == "kuhn":
        return model_policy(player)
    if game == "leduc":
        return leduc_model_policy(player)
    raise ValueError(f"no exact policy export for game {game!r}; games with exact theory: {list(EXACT_GAMES)}")
