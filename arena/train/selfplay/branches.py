"""Branch rollouts: every legal action's value at a learner's decision, from games replayed with it forced."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.hashing import canonical_json
from arena.play.match import Slot
from arena.play.records import read_shard

BRANCHES_FILE = "branches.jsonl"  # beside the rollouts' games.jsonl


def _branch_points(record: Mapping[str, Any]) -> list[tuple[int, str]]:
    """(turn, other action) for each decision of the record's first seat and each legal action it did not take.

    Turn ``k`` is the record's ``k``-th action (every decision plays exactly one); a decision whose action is not
    that one (a record from a player that re-prompts) has no branch.
    """
    seat, actions = record["first_seat"], record["actions"]
    points = []
    for turn, decision in enumerate(record["decisions"]):
        if decision["player"] != seat or turn >= len(actions) or actions[turn] != decision["action"]:
            continue
        points += [(turn, other) for other in decision["legal"] if other != decision["action"]]
    return points


def branch_slots(records: Sequence[Mapping[str, Any]]) -> list[Slot]:
    """The branch games of finished records: each replays the deal with one learner decision's action swapped for
    another legal one, then plays on (the same seats, the same salt)."""
    slots = []
    for record in records:
        if record["errored"]:
            continue
        for turn, other in _branch_points(record):
            prefix = (*record["actions"][:turn], other)
            slots.append(Slot(record["seed"], record["first_seat"], record["salt"], prefix))
    return slots


def branch_key(record: Mapping[str, Any], prefix: Sequence[str]) -> tuple[str, str, int, int, int, tuple[str, ...]]:
    """What identifies one branch game among a round's: its game, variant, deal, salt, seat and forced prefix."""
    return (record["game_id"], canonical_json(record["variant"]), record["seed"], record["salt"],
            record["first_seat"], tuple(prefix))


def branch_rewards(branches: Sequence[Mapping[str, Any]], invalid_penalty: float) -> dict[tuple, float]:
    """Each finished branch game's reward to its first seat (the learner), less the invalid-move penalty."""
    rewards = {}
    for record in branches:
        if not record["errored"]:
            seat = record["first_seat"]
            reward = record["rewards"][seat] - invalid_penalty * record["invalid_moves"][seat]
            rewards[branch_key(record, record["prefix"])] = reward
    return rewards


def action_values(record: Mapping[str, Any], reward: float, rewards: Mapping[tuple, float]) -> list[np.ndarray | None]:
    """Per learner decision of ``record`` (in order), a sampled value of each legal action: the game's own reward
    for the action taken, its branch's for the others; None where a branch is missing (it errored)."""
    seat, actions = record["first_seat"], record["actions"]
    out: list[np.ndarray | None] = []
    for turn, decision in enumerate(record["decisions"]):
        if decision["player"] != seat:
            continue
        values = [reward if action == decision["action"]
                  else rewards.get(branch_key(record, (*actions[:turn], action)), np.nan)
                  for action in decision["legal"]]
        out.append(None if np.isnan(values).any() else np.array(values, dtype=np.float64))
    return out


def own_reach(record: Mapping[str, Any]) -> np.ndarray:
    """Per learner decision of ``record`` (in order), the probability the learner's own earlier choices in the game
    had under the policy that sampled them (the product of their recorded probabilities; 1 at its first)."""
    seat = record["first_seat"]
    logp = [decision["logprob"] for decision in record["decisions"] if decision["player"] == seat]
    return np.exp(np.concatenate([[0.0], np.cumsum(logp[:-1])])) if logp else np.zeros(0)


# Counterfactual weights divide a visit by the learner's own reach; capped so one visit through a rare choice (a
# saturated decision's 0.0025) cannot outweigh a hundred ordinary ones.
MAX_COUNTERFACTUAL_WEIGHT = 100.0


def decision_values(games: Sequence[tuple[Mapping[str, Any], int, float]], branches: Sequence[Mapping[str, Any]],
                    invalid_penalty: float, weighting: str = "onpolicy") -> tuple[list[np.ndarray | None], np.ndarray]:
    """Per learner decision of ``games`` ((record, seat, reward) each, decisions in order): every legal action's
    sampled value, and its visit weight: 1 / the finished games of its game (a game's targets do not grow with its
    deal count), divided by the learner's own reach where ``weighting`` is ``counterfactual`` (each information set
    then weighs as the opponent's and chance's reach of it, as CFR's counterfactual values do)."""
    rewards = branch_rewards(branches, invalid_penalty)
    per_game = Counter(record["game_id"] for record, _, _ in games)
    values: list[np.ndarray | None] = []
    weights: list[np.ndarray] = []
    for record, _, reward in games:
        found = action_values(record, reward, rewards)
        values += found
        scale = np.full(len(found), 1.0)
        if weighting == "counterfactual":
            scale = np.minimum(1.0 / own_reach(record), MAX_COUNTERFACTUAL_WEIGHT)
        weights.append(scale / per_game[record["game_id"]])
    return values, np.concatenate(weights) if weights else np.zeros(0)


def read_branches(rollouts: str | Path) -> list[dict[str, Any]]:
    """The branch games of a rollouts directory (``play_round(..., branches=True)`` writes them)."""
    path = Path(rollouts) / BRANCHES_FILE
    if not path.exists():
        raise ValueError(f"train.objective: neurd needs the rollouts' branch games, and {path} is missing: "
                         "rebuild the round's rollouts with the same train section (dvc repro)")
    return read_shard(path)
