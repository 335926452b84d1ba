"""CFR+ for Leduc Hold'em, and the solved Nash policy it ships in ``data/leduc_nash.json``."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from arena.core.hashing import digest_bytes
from arena.games.leduc_theory import (
    CHANCE,
    action_probabilities,
    as_array,
    exploitability,
    load_policy,
    node_values,
    policy_to_table,
    reach_probabilities,
    tree,
)

# Regenerate with `python -m arena.games.leduc_cfr` (about 13 s); the oracle only reads the file, so nothing is
# solved at import time.
NASH_PATH = Path(__file__).parent / "data" / "leduc_nash.json"
# The data file is solved well past the 1e-3 the oracle needs, so rounding to NASH_DIGITS costs nothing visible.
NASH_TARGET = 1e-5
NASH_DIGITS = 7


@dataclass(frozen=True)
class CFRResult:
    """A solve: the average policy, its exploitability, and what it took."""

    policy: np.ndarray
    exploitability: float
    iterations: int
    seconds: float


def regret_matching(regrets: np.ndarray) -> np.ndarray:
    """The current strategy: positive regrets normalised, uniform over legal actions where none is positive."""
    legal = tree().info_legal
    positive = np.maximum(regrets, 0.0) * legal
    total = positive.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def action_gains(sigma: np.ndarray, player: int, on_policy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per information state and action of ``player``, the sum over its (node, deal) pairs of Q(a) - V (the
    actor's chips), each weighted by chance and the opponent's reach (CFR's counterfactual regret) and, where
    ``on_policy``, by the actor's own reach too (the pair's probability in self-play); and each state's total weight."""
    probs = action_probabilities(sigma)
    return _gains(probs, reach_probabilities(probs), player, on_policy)


def _gains(probs: np.ndarray, reach: np.ndarray, player: int, on_policy: bool) -> tuple[np.ndarray, np.ndarray]:
    t = tree()
    values = node_values(probs) * (1.0 if player == 0 else -1.0)
    nodes = np.flatnonzero(t.actor == player)
    weight = CHANCE * reach[1 - player, nodes]  # (n, deals)
    if on_policy:
        weight = weight * reach[player, nodes]
    gain = (values[t.child[nodes]] - values[nodes][:, None, :]) * weight[:, None, :] * t.legal[nodes][:, :, None]
    rows = (t.info[nodes][:, None, :] * 3 + np.arange(3)[None, :, None]).ravel()
    size = len(t.info_states)
    return (np.bincount(rows, gain.ravel(), 3 * size).reshape(-1, 3),
            np.bincount(t.info[nodes].ravel(), weight.ravel(), size))


def _own_reach(reach: np.ndarray) -> np.ndarray:
    """Each info state's owner's reach (the same at every node and deal of the state)."""
    t = tree()
    return reach[t.info_owner, t.representative[:, 0], t.representative[:, 1]]


def _regret_update(sigma: np.ndarray, player: int) -> tuple[np.ndarray, np.ndarray]:
    """This iteration's counterfactual regrets of ``player`` and its own reach of each info state."""
    probs = action_probabilities(sigma)
    reach = reach_probabilities(probs)
    return _gains(probs, reach, player, on_policy=False)[0], _own_reach(reach)


def average_policy(policies: Sequence[np.ndarray], weights: Sequence[float] | None = None) -> np.ndarray:
    """The behavioural policy that plays as picking ``policies[k]`` for a whole hand with probability ``weights[k]``
    (uniform if None): each info state's rows averaged with weight x the owner's own reach under that policy.

    This is CFR's average strategy; it is what "the average of a run's snapshots" means for exploitability.
    An info state that no policy reaches takes the plain weighted average (its play can never matter).
    """
    if not policies:
        raise ValueError("average_policy needs at least one policy")
    weights = np.full(len(policies), 1.0 / len(policies)) if weights is None else np.asarray(weights, float)
    if (weights.shape != (len(policies),) or not np.all(np.isfinite(weights)) or np.any(weights < 0)
            or not weights.sum() > 0):
        raise ValueError(f"average_policy needs one finite weight >= 0 per policy, not all 0; got {weights.tolist()} "
                         f"for {len(policies)} policies")
    sigmas = np.stack([as_array(policy) for policy in policies])
    reach = np.stack([_own_reach(reach_probabilities(action_probabilities(sigma))) for sigma in sigmas])
    mass = weights[:, None] * reach  # (policies, info states)
    plain = np.einsum("k,kia->ia", weights, sigmas) / weights.sum()
    total = mass.sum(axis=0)[:, None]
    reached = np.einsum("ki,kia->ia", mass, sigmas) / np.where(total > 0, total, 1.0)
    return np.where(total > 0, reached, plain)


def cfr_plus(target: float = 1e-3, max_iterations: int = 20_000, check_every: int = 10) -> CFRResult:
    """Run CFR+ until the average policy's exploitability is at most ``target`` (checked every few iterations).

    CFR+ (Tammelin 2014): regret matching on regrets floored at 0, players updated in turn (player 1 sees
    player 0's new strategy), and the average strategy weighted by iteration number and own reach.
    """
    if not target > 0 or max_iterations < 1 or check_every < 1:
        raise ValueError(f"cfr_plus: need target > 0, max_iterations >= 1, check_every >= 1; got "
                         f"{target!r}, {max_iterations!r}, {check_every!r}")
    t = tree()
    start = time.perf_counter()
    regrets = np.zeros((len(t.info_states), 3))
    totals = np.zeros_like(regrets)
    owner = t.info_owner
    average, gap = regret_matching(totals), float("inf")
    for iteration in range(1, max_iterations + 1):
        for player in (0, 1):
            sigma = regret_matching(regrets)
            increment, own_reach = _regret_update(sigma, player)
            mine = owner == player
            regrets[mine] = np.maximum(regrets[mine] + increment[mine], 0.0)
            totals[mine] += iteration * own_reach[mine, None] * sigma[mine]
        if iteration % check_every == 0 or iteration == max_iterations:
            average = regret_matching(totals)
            gap = exploitability(average)
            if gap <= target:
                break
    return CFRResult(average, gap, iteration, time.perf_counter() - start)


def rounded(policy: np.ndarray, digits: int = NASH_DIGITS) -> dict[str, dict[str, float]]:
    """The policy table with probabilities rounded to ``digits`` (the last legal action takes the remainder)."""
    table = policy_to_table(policy, digits)
    for entry in table.values():
        last = list(entry)[-1]
        entry[last] = round(1.0 - sum(value for name, value in entry.items() if name != last), digits)
    return table


def write_nash(path: str | Path = NASH_PATH, target: float = NASH_TARGET) -> CFRResult:
    """Solve with CFR+ to ``target`` and write the rounded average policy as JSON (one info state a line)."""
    result = cfr_plus(target=target)
    table = rounded(result.policy)
    lines = [f"{json.dumps(key)}: {json.dumps(entry, separators=(',', ':'))}" for key, entry in table.items()]
    Path(path).write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    return result


@cache
def nash_digest() -> str:
    """The blake3 digest of the shipped Nash policy file (the oracle's pin names it)."""
    return digest_bytes(NASH_PATH.read_bytes())


@cache
def nash_array() -> np.ndarray:
    """The shipped Nash policy as a (936, 3) array (read once)."""
    return load_policy(NASH_PATH)


@cache
def nash_table() -> dict[str, dict[str, float]]:
    """The shipped Nash policy as {info state: {action name: probability}} (read once)."""
    return policy_to_table(nash_array())


if __name__ == "__main__":
    solved = write_nash()
    print(f"wrote {NASH_PATH}: CFR+ {solved.iterations} iterations, {solved.seconds:.2f} s, "
          f"exploitability {solved.exploitability:.2e} (rounded: {exploitability(load_policy(NASH_PATH)):.2e})")
