"""Exact Leduc Hold'em (OpenSpiel's ``leduc_poker``), vectorised over deals: rules, info states, values, NashConv."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from itertools import permutations
from pathlib import Path
from typing import Any

import numpy as np

from arena.games.policy_files import PolicyError, read_policy_file

# OpenSpiel's standard rules: cards 0..5, rank = card // 2 (J, Q, K in two suits), ante 1, raises of 2 then
# 4, at most 2 raises (the first bet counts) per round, player 0 acts first in both rounds.
CARDS: tuple[int, ...] = tuple(range(6))
RANK_NAMES: tuple[str, ...] = ("J", "Q", "K")
ANTE = 1
RAISE_SIZES: tuple[int, int] = (2, 4)
MAX_RAISES = 2
STARTING_MONEY = 100  # OpenSpiel's default stack; it only appears in the info-state strings
FOLD, CALL, RAISE = 0, 1, 2  # OpenSpiel's action ids; CALL is a check when nothing is owed
ACTION_NAMES: tuple[str, str, str] = ("fold", "call", "raise")
# The most one player can put in: the ante plus two raises in each round. A forfeit costs this much.
MAX_HAND_LOSS = ANTE + MAX_RAISES * sum(RAISE_SIZES)
# Every deal (player 0's card, player 1's card, public card), equally likely.
DEALS: tuple[tuple[int, int, int], ...] = tuple(permutations(CARDS, 3))
CHANCE = 1.0 / len(DEALS)
# The exact NashConv of the uniform random policy (OpenSpiel's exploitability.nash_conv gives 4.747222...).
UNIFORM_NASH_CONV = 4.747222222222222

History = tuple[tuple[int, ...], tuple[int, ...]]  # the action ids of round 1 and of round 2
Policy = Mapping[str, Mapping[str, float]]  # info-state string -> {action name: probability} over legal actions


def rank(card: int) -> int:
    """The rank of a card: 0 = J, 1 = Q, 2 = K (suits never matter)."""
    return card // 2


def round_legal(sequence: tuple[int, ...]) -> tuple[int, ...]:
    """Legal action ids after ``sequence`` in the current betting round: fold only when facing a raise."""
    raises = sequence.count(RAISE)
    facing = bool(sequence) and sequence[-1] == RAISE
    legal = (FOLD, CALL) if facing else (CALL,)
    return legal + ((RAISE,) if raises < MAX_RAISES else ())


def round_over(sequence: tuple[int, ...]) -> bool:
    """Whether a betting round is finished: a fold, a call of a raise, or check-check."""
    return bool(sequence) and (sequence[-1] == FOLD or (sequence[-1] == CALL and len(sequence) > 1))


def betting_round(history: History) -> int:
    """1 while the first round is open, 2 once it has been called through."""
    first = history[0]
    return 2 if round_over(first) and first[-1] != FOLD else 1


def actor(history: History) -> int:
    """Who acts next: player 0 opens each round, then the players alternate."""
    return len(history[betting_round(history) - 1]) % 2


def is_terminal(history: History) -> bool:
    """A fold in either round, or a finished second round."""
    return (bool(history[0]) and history[0][-1] == FOLD) or round_over(history[1])


def contributions(history: History) -> tuple[int, int]:
    """Chips each player has put in so far (ante included)."""
    put = [ANTE, ANTE]
    for size, sequence in zip(RAISE_SIZES, history, strict=True):
        for index, action in enumerate(sequence):
            if action == CALL:
                put[index % 2] = max(put)
            elif action == RAISE:
                put[index % 2] = max(put) + size
    return put[0], put[1]


def terminal_value(history: History, cards: tuple[int, int], public: int | None) -> float:
    """Chips won by player 0 at a terminal ``history`` (player 1 wins the negative)."""
    if not is_terminal(history):
        raise ValueError(f"{history!r} is not a terminal Leduc history; a round must end in a fold or a call")
    put = contributions(history)
    folded = next((seq for seq in history if seq and seq[-1] == FOLD), None)
    if folded is not None:
        folder = (len(folded) - 1) % 2
        return -float(put[0]) if folder == 0 else float(put[1])
    if public is None:
        raise ValueError("a Leduc showdown needs the public card")
    strength = [(rank(card) == rank(public), rank(card)) for card in cards]
    sign = 0.0 if strength[0] == strength[1] else (1.0 if strength[0] > strength[1] else -1.0)
    return sign * put[0]


def info_state_string(player: int, card: int, public: int | None, history: History) -> str:
    """OpenSpiel's ``information_state_string`` for ``player`` holding ``card`` after ``history``."""
    put = contributions(history)
    round_number = betting_round(history)
    board = f"[Public: {public}]" if round_number == 2 else ""
    return (f"[Observer: {player}][Private: {card}][Round {round_number}][Player: {player}][Pot: {sum(put)}]"
            f"[Money: {STARTING_MONEY - put[0]} {STARTING_MONEY - put[1]}]{board}"
            f"[Round1: {' '.join(map(str, history[0]))}][Round2: {' '.join(map(str, history[1]))}]")


@dataclass(frozen=True)
class Tree:
    """The betting tree (36 decision and 49 terminal histories) as arrays over the 120 deals.

    Nodes are the decision histories (by depth), then the terminal ones, then one empty slot. A policy is
    a (936, 3) array: a row per OpenSpiel information state, a column per action (fold, call, raise).

    ``child[h, a]`` is the node after action ``a`` at decision node ``h`` (the empty slot when illegal);
    ``info[h, d]`` the info-state row the actor sees at ``h`` in deal ``d``; ``payoff[t, d]`` player 0's
    chips at terminal ``t``; ``levels`` the decision nodes of each depth, root first.
    """

    histories: tuple[History, ...]
    actor: np.ndarray
    child: np.ndarray
    legal: np.ndarray
    info: np.ndarray
    payoff: np.ndarray
    levels: tuple[np.ndarray, ...]
    info_states: tuple[str, ...]
    info_legal: np.ndarray
    info_owner: np.ndarray
    representative: np.ndarray  # one (node, deal) per info state: the owner's reach is the same at all of them


def legal_actions(history: History) -> tuple[int, ...]:
    """Legal action ids at a decision ``history`` (those of its open round)."""
    return round_legal(history[betting_round(history) - 1])


def after(history: History, action: int) -> History:
    """The history once the actor plays ``action`` (it joins the open round's sequence)."""
    if betting_round(history) == 1:
        return (history[0] + (action,), history[1])
    return (history[0], history[1] + (action,))


def _histories() -> list[History]:
    found, frontier = [], [((), ())]
    while frontier:  # breadth first, so each depth's nodes are contiguous
        found += frontier
        frontier = [after(h, a) for h in frontier if not is_terminal(h) for a in legal_actions(h)]
    return found


@cache
def tree() -> Tree:
    """The Leduc game tree and its information states (built once, in about a tenth of a second)."""
    every = _histories()
    decisions = [h for h in every if not is_terminal(h)]
    terminals = [h for h in every if is_terminal(h)]
    histories = tuple(decisions + terminals)
    index = {h: i for i, h in enumerate(histories)}
    empty = len(histories)
    child = np.full((len(decisions), 3), empty, dtype=np.int64)
    for h, history in enumerate(decisions):
        for a in legal_actions(history):
            child[h, a] = index[after(history, a)]
    legal = child != empty
    actors = np.array([actor(h) for h in decisions], dtype=np.int64)
    keys: dict[str, int] = {}
    info = np.zeros((len(decisions), len(DEALS)), dtype=np.int64)
    representative = []
    for h, history in enumerate(decisions):
        second = betting_round(history) == 2
        for d, deal in enumerate(DEALS):
            key = info_state_string(int(actors[h]), deal[actors[h]], deal[2] if second else None, history)
            if key not in keys:
                keys[key] = len(keys)
                representative.append((h, d))
            info[h, d] = keys[key]
    payoff = np.array([[terminal_value(t, deal[:2], deal[2]) for deal in DEALS] for t in terminals])
    depth = np.array([len(h[0]) + len(h[1]) for h in decisions])
    rep = np.array(representative, dtype=np.int64)
    return Tree(
        histories=histories, actor=actors, child=child, legal=legal, info=info, payoff=payoff,
        levels=tuple(np.flatnonzero(depth == k) for k in range(int(depth.max()) + 1)),
        info_states=tuple(keys), info_legal=legal[rep[:, 0]], info_owner=actors[rep[:, 0]], representative=rep,
    )  # fmt: skip


def info_states() -> tuple[str, ...]:
    """OpenSpiel's 936 information-state strings, in arena's row order."""
    return tree().info_states


@cache
def info_index() -> dict[str, int]:
    """Info-state string -> row of a policy array."""
    return {key: row for row, key in enumerate(info_states())}


def legal_action_names(key: str) -> tuple[str, ...]:
    """The names of the actions legal at an info state (OpenSpiel's order: fold, call, raise)."""
    row = info_index().get(key)
    if row is None:
        raise PolicyError(f"{key!r} is not a Leduc information state (expected an OpenSpiel info-state string)")
    return tuple(name for name, ok in zip(ACTION_NAMES, tree().info_legal[row], strict=True) if ok)


def uniform_array() -> np.ndarray:
    """Every legal action equally likely, as a (936, 3) array."""
    legal = tree().info_legal.astype(np.float64)
    return legal / legal.sum(axis=1, keepdims=True)


def policy_to_table(policy: np.ndarray, digits: int | None = None) -> dict[str, dict[str, float]]:
    """A (936, 3) array as {info state: {legal action name: probability}}, optionally rounded."""
    array = as_array(policy)
    table = {}
    for row, key in enumerate(info_states()):
        names = legal_action_names(key)
        values = [float(array[row, ACTION_NAMES.index(name)]) for name in names]
        table[key] = {n: (round(v, digits) if digits is not None else v) for n, v in zip(names, values, strict=True)}
    return table


def uniform_policy() -> dict[str, dict[str, float]]:
    """The uniform random policy as a table."""
    return policy_to_table(uniform_array())


def validate_policy(raw: Any, *, source: str = "policy", tolerance: float = 1e-6) -> np.ndarray:
    """Check ``raw`` maps exactly the 936 info states to distributions over their legal actions; the array."""
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{source}: expected a JSON object mapping OpenSpiel info-state strings to "
                          f"{{action: probability}}, got {type(raw).__name__}")
    missing = [key for key in info_states() if key not in raw]
    extra = sorted(str(key) for key in set(raw) - set(info_index()))
    if missing or extra:
        parts = ([f"{len(missing)} missing info states (e.g. {missing[0]!r})"] if missing else []) + (
            [f"{len(extra)} unknown keys (e.g. {extra[0]!r})"] if extra else [])
        raise PolicyError(f"{source}: {' and '.join(parts)}; a Leduc policy needs exactly OpenSpiel's 936 "
                          "leduc_poker info-state strings as keys (see `arena policy MODEL --game leduc --json`)")
    array = np.zeros((len(info_states()), 3))
    for row, key in enumerate(info_states()):
        array[row] = _distribution(raw[key], key, source, tolerance)
    return array


def _distribution(entry: Any, key: str, source: str, tolerance: float) -> np.ndarray:
    names = legal_action_names(key)
    if not isinstance(entry, Mapping) or set(entry) != set(names):
        got = sorted(entry) if isinstance(entry, Mapping) else type(entry).__name__
        raise PolicyError(f"{source}: at {key!r} expected probabilities for exactly the legal actions "
                          f"{list(names)}, got {got}")
    out = np.zeros(3)
    for name in names:
        value = entry[name]
        # bool is an int subclass: reject it explicitly so `true` is not silently read as 1.0.
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise PolicyError(f"{source}: P({name}) at {key!r} is {value!r}; it must be a number >= 0")
        out[ACTION_NAMES.index(name)] = float(value)
    if abs(out.sum() - 1.0) > tolerance:
        raise PolicyError(f"{source}: the probabilities at {key!r} sum to {out.sum()!r}, not 1; normalise them")
    return out / out.sum()


def as_array(policy: Policy | np.ndarray) -> np.ndarray:
    """A policy table or array as a validated (936, 3) float64 array (rows sum to 1 over legal actions)."""
    if not isinstance(policy, np.ndarray):
        return validate_policy(policy)
    legal = tree().info_legal
    if policy.shape != legal.shape:
        raise PolicyError(f"a Leduc policy array must have shape {legal.shape}, got {policy.shape}")
    if (not np.all(np.isfinite(policy)) or np.any(policy < 0) or np.any(policy[~legal] != 0)
            or not np.allclose(policy.sum(axis=1), 1.0, atol=1e-6)):
        raise PolicyError("a Leduc policy array needs finite rows >= 0 that sum to 1, and 0 on illegal actions")
    return policy.astype(np.float64)


def load_policy(path: str | Path) -> np.ndarray:
    """Read and validate a Leduc policy JSON file ({info state: {action: probability}})."""
    return validate_policy(read_policy_file(path), source=str(path))


def action_probabilities(first: np.ndarray, second: np.ndarray | None = None) -> np.ndarray:
    """P[h, a, d]: the actor's probability of ``a`` at node ``h`` in deal ``d`` (player 0 plays ``first``)."""
    t = tree()
    second = first if second is None else second
    probs = np.where(t.actor[:, None, None] == 0, first[t.info], second[t.info])  # (nodes, deals, actions)
    return probs.transpose(0, 2, 1)


def node_values(probs: np.ndarray) -> np.ndarray:
    """Player 0's expected chips at every node and deal (terminals, then the empty slot, are 0-padded)."""
    t = tree()
    values = np.zeros((len(t.histories) + 1, len(DEALS)))
    values[len(t.actor) : len(t.histories)] = t.payoff
    for level in reversed(t.levels):
        values[level] = (probs[level] * values[t.child[level]]).sum(axis=1)
    return values


def reach_probabilities(probs: np.ndarray) -> np.ndarray:
    """reach[p, n, d]: the product of player p's action probabilities on the way to node n in deal d."""
    t = tree()
    reach = np.ones((2, len(t.histories) + 1, len(DEALS)))
    for level in t.levels:
        children, movers = t.child[level], t.actor[level]
        base = reach[:, level]  # (2, n, deals)
        reach[:, children] = base[:, :, None, :]
        # Illegal actions all point at the empty slot: it collects junk that nothing reads.
        reach[movers[:, None], children] = base[movers, np.arange(len(level))][:, None, :] * probs[level]
    return reach


def expected_value(first: Policy | np.ndarray, second: Policy | np.ndarray) -> float:
    """Exact expected chips per hand for player 0 playing ``first`` against player 1 playing ``second``."""
    return float(node_values(action_probabilities(as_array(first), as_array(second)))[0].mean())


def chips_per_hand(policy: Policy | np.ndarray, opponent: Policy | np.ndarray) -> float:
    """Exact chips per hand of ``policy`` against ``opponent`` when each opens half the hands."""
    return (expected_value(policy, opponent) - expected_value(opponent, policy)) / 2.0


def best_response(policy: Policy | np.ndarray, player: int) -> tuple[float, np.ndarray]:
    """A pure best response for ``player`` to ``policy`` in the other seat: its value and its action per info state.

    Bottom-up over depths: an info state's action values sum over its nodes and deals weighted by chance
    and the opponent's reach, with the responder's deeper choices already fixed. Ties go to the lowest
    action id. The returned actions are -1 at info states the responder does not own.
    """
    if player not in (0, 1):
        raise ValueError(f"player must be 0 or 1, got {player!r}")
    t, sigma = tree(), as_array(policy)
    probs = action_probabilities(sigma)
    opponent_reach = reach_probabilities(probs)[1 - player]
    values = np.zeros((len(t.histories) + 1, len(DEALS)))
    values[len(t.actor) : len(t.histories)] = t.payoff if player == 0 else -t.payoff
    choice = np.full(len(t.info_states), -1, dtype=np.int64)
    for level in reversed(t.levels):
        mine, theirs = level[t.actor[level] == player], level[t.actor[level] != player]
        values[theirs] = (probs[theirs] * values[t.child[theirs]]).sum(axis=1)
        if len(mine) == 0:
            continue
        action_values = values[t.child[mine]] * opponent_reach[mine][:, None, :]  # (n, 3, deals)
        rows = t.info[mine]
        totals = np.stack([np.bincount(rows.ravel(), action_values[:, a].ravel(), len(t.info_states))
                           for a in range(3)], axis=1)
        totals[~t.info_legal] = -np.inf
        owned = np.unique(rows)
        choice[owned] = np.argmax(totals[owned], axis=1)
        values[mine] = np.take_along_axis(values[t.child[mine]], choice[rows][:, None, :], axis=1)[:, 0]
    return float(values[0].mean()), choice


def nash_conv(policy: Policy | np.ndarray) -> float:
    """Sum over both players of the best-response gain over the policy's own value (OpenSpiel's NashConv)."""
    sigma = as_array(policy)
    value = expected_value(sigma, sigma)
    return (best_response(sigma, 0)[0] - value) + (best_response(sigma, 1)[0] + value)


def exploitability(policy: Policy | np.ndarray) -> float:
    """NashConv / 2: the mean best-response gain over the two seats (0 exactly at a Nash equilibrium)."""
    return nash_conv(policy) / 2.0


def exploitability_report(policy: Policy | np.ndarray) -> dict[str, Any]:
    """What ``arena exploitability --game leduc`` prints: exploitability, NashConv, best-response values."""
    sigma = as_array(policy)
    value = expected_value(sigma, sigma)
    br_first, br_second = best_response(sigma, 0)[0], best_response(sigma, 1)[0]
    conv = (br_first - value) + (br_second + value)
    return {
        "exploitability": conv / 2.0,
        "nash_conv": conv,
        "best_response_value": {"player0": br_first, "player1": br_second},
        "self_play_value_first_player": value,
        "info_states": len(info_states()),
    }
