"""Exact analysis of standard Kuhn poker: policy tables, expected values, best responses, exploitability."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import permutations
from pathlib import Path
from typing import Any

import numpy as np

from arena.games.policy_files import PolicyError, read_policy_file

# Standard Kuhn poker: three cards, ante 1 each, one bet of 1. Cards are ranks J=0 < Q=1 < K=2.
CARDS: tuple[int, ...] = (0, 1, 2)
CARD_NAMES: tuple[str, ...] = ("J", "Q", "K")
ANTE = 1
BET = 1
# Action letters follow OpenSpiel: p = pass (check, or fold facing a bet), b = bet (or call facing a bet).
PASS, BET_ACTION = "p", "b"
ACTIONS: tuple[str, str] = (PASS, BET_ACTION)
# The decision histories, in the order the info sets are listed; the acting player is len(history) % 2.
HISTORIES: tuple[str, ...] = ("", "p", "b", "pb")
TERMINALS: tuple[str, ...] = ("pp", "pbp", "pbb", "bp", "bb")
# The 12 info sets in OpenSpiel's naming: own card, then the betting history.
INFO_SETS: tuple[str, ...] = tuple(f"{card}{history}" for card in CARDS for history in HISTORIES)
INFO_SET_INDEX: dict[str, int] = {name: index for index, name in enumerate(INFO_SETS)}
# The six equally likely deals (first mover's card, second mover's card).
DEALS: tuple[tuple[int, int], ...] = tuple(permutations(CARDS, 2))
NASH_FIRST_PLAYER_VALUE = -1.0 / 18.0

Policy = Mapping[str, float]


def player_of(info_set: str) -> int:
    """Who acts at ``info_set``: 0 for the round's first mover (history "" or "pb"), 1 for the second."""
    _check_info_set(info_set)
    return len(info_set[1:]) % 2


def info_set_name(card: int, history: str) -> str:
    """The OpenSpiel-style name of the info set where a player holding ``card`` acts after ``history``."""
    name = f"{card}{history}"
    _check_info_set(name)
    return name


def player_info_sets(player: int) -> tuple[str, ...]:
    """The six info sets at which ``player`` (0 = first mover, 1 = second mover) acts."""
    if player not in (0, 1):
        raise ValueError(f"player must be 0 (first mover) or 1 (second mover), got {player!r}")
    return tuple(name for name in INFO_SETS if len(name[1:]) % 2 == player)


def _check_info_set(name: str) -> None:
    if name not in INFO_SET_INDEX:
        raise PolicyError(f"unknown Kuhn info set {name!r}; expected one of {', '.join(INFO_SETS)}")


# ---------------------------------------------------------------------------------------------
# Policies: validation, loading, conversion
# ---------------------------------------------------------------------------------------------


def validate_policy(raw: Any, *, source: str = "policy") -> dict[str, float]:
    """Check ``raw`` maps exactly the 12 info sets to probabilities of ``b`` in [0, 1]; return a clean copy."""
    if not isinstance(raw, Mapping):
        raise PolicyError(
            f"{source}: expected a JSON object mapping info sets to P(b), got {type(raw).__name__}; "
            f'write e.g. {{"0": 0.0, "0p": 0.33, ...}} with keys {", ".join(INFO_SETS)}'
        )
    keys = set(raw)
    missing = [name for name in INFO_SETS if name not in keys]
    extra = sorted(str(key) for key in keys - set(INFO_SETS))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing info sets {missing}")
        if extra:
            parts.append(f"unknown keys {extra}")
        raise PolicyError(
            f"{source}: {' and '.join(parts)}; a Kuhn policy needs exactly the keys {', '.join(INFO_SETS)} "
            "(card J=0, Q=1, K=2, then the history of p=pass/fold and b=bet/call)"
        )
    clean: dict[str, float] = {}
    for name in INFO_SETS:
        value = raw[name]
        # bool is an int subclass: reject it explicitly so `true` is not silently read as 1.0.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PolicyError(f"{source}: P(b) at {name!r} must be a number in [0, 1], got {value!r}")
        probability = float(value)
        if not math.isfinite(probability) or not 0.0 <= probability <= 1.0:
            raise PolicyError(f"{source}: P(b) at {name!r} is {value!r}; probabilities must lie in [0, 1]")
        clean[name] = probability
    return clean


def load_policy(path: str | Path) -> dict[str, float]:
    """Read and validate a policy JSON file (an object: info set -> probability of ``b``)."""
    return validate_policy(read_policy_file(path), source=str(path))


def policy_to_array(policy: Policy) -> np.ndarray:
    """P(b) per info set as a float64 vector in ``INFO_SETS`` order."""
    return np.array([policy[name] for name in INFO_SETS], dtype=np.float64)


def policy_from_array(probabilities: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Inverse of ``policy_to_array`` (validated)."""
    values = np.asarray(probabilities, dtype=np.float64)
    if values.shape != (len(INFO_SETS),):
        raise PolicyError(f"expected {len(INFO_SETS)} probabilities in INFO_SETS order, got shape {values.shape}")
    return validate_policy({name: float(value) for name, value in zip(INFO_SETS, values, strict=True)})


def uniform_policy() -> dict[str, float]:
    """Every action with probability 1/2."""
    return {name: 0.5 for name in INFO_SETS}


def nash_policy(alpha: float) -> dict[str, float]:
    """The standard one-parameter family of Nash equilibria (Kuhn 1950), ``alpha`` in [0, 1/3].

    First mover: bet J with alpha, check Q, bet K with 3*alpha; facing a bet after checking, fold J,
    call Q with alpha + 1/3, call K. Second mover: after a check bet J with 1/3 (bluff), check Q,
    bet K; facing a bet fold J, call Q with 1/3, call K.
    """
    if not isinstance(alpha, int | float) or not 0.0 <= alpha <= 1.0 / 3.0:
        raise ValueError(f"nash_policy: alpha must lie in [0, 1/3], got {alpha!r}")
    alpha = float(alpha)
    return {
        "0": alpha, "0p": 1.0 / 3.0, "0b": 0.0, "0pb": 0.0,
        "1": 0.0, "1p": 0.0, "1b": 1.0 / 3.0, "1pb": alpha + 1.0 / 3.0,
        "2": 3.0 * alpha, "2p": 1.0, "2b": 1.0, "2pb": 1.0,
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Game tree
# ---------------------------------------------------------------------------------------------


def terminal_value(history: str, deal: tuple[int, int]) -> float:
    """Chips won by the first mover at a terminal ``history`` (the second mover wins the negative)."""
    if history not in TERMINALS:
        raise ValueError(f"{history!r} is not a terminal Kuhn history; terminals are {', '.join(TERMINALS)}")
    showdown_sign = 1.0 if deal[0] > deal[1] else -1.0
    if history == "pp":
        return showdown_sign * ANTE
    if history == "bp":
        return float(ANTE)
    if history == "pbp":
        return -float(ANTE)
    return showdown_sign * (ANTE + BET)  # "bb" or "pbb": a called bet goes to showdown


def _action_probability(policy: Policy, card: int, history: str, action: str) -> float:
    bet = policy[f"{card}{history}"]
    return bet if action == BET_ACTION else 1.0 - bet


def _value(history: str, deal: tuple[int, int], seats: tuple[Policy, Policy]) -> float:
    """First mover's expected chips from ``history`` on, each seat playing its own policy."""
    if history in TERMINALS:
        return terminal_value(history, deal)
    actor = len(history) % 2
    return sum(
        _action_probability(seats[actor], deal[actor], history, action) * _value(history + action, deal, seats)
        for action in ACTIONS
    )


def expected_value(first: Policy, second: Policy) -> float:
    """Exact expected chips per round for the first mover when ``first`` opens against ``second``."""
    return sum(_value("", deal, (first, second)) for deal in DEALS) / len(DEALS)


def chips_per_hand(policy: Policy, opponent: Policy) -> float:
    """Exact expected chips per hand of ``policy`` against ``opponent`` when each opens half the hands.

    That is how duplicate play deals: every deal is played from both seats, and the opener alternates.
    """
    return (expected_value(policy, opponent) - expected_value(opponent, policy)) / 2.0


def self_play_value(policy: Policy) -> float:
    """The policy's expected chips as first mover against itself (the second mover gets the negative)."""
    return expected_value(policy, policy)


def _opponent_reach(policy: Policy, player: int, history: str, deal: tuple[int, int]) -> float:
    """Probability that the opponent of ``player``, playing ``policy``, takes its actions along ``history``."""
    reach = 1.0
    for depth, action in enumerate(history):
        if depth % 2 != player:
            reach *= _action_probability(policy, deal[depth % 2], history[:depth], action)
    return reach


def counterfactual_values(seats: tuple[Policy, Policy], info_set: str) -> tuple[float, dict[str, float]]:
    """At ``info_set``, the seats playing ``seats`` (first mover's, second mover's): the probability that chance and
    the opponent reach it (summed over the deals it holds), and each action's chips to the actor, weighted by that
    reach (counterfactual values, unnormalised: divide by the reach for the values given the info set is reached).
    The actor's own reach is common to every deal of the info set, so it is left out."""
    _check_info_set(info_set)
    card, history, player = int(info_set[0]), info_set[1:], player_of(info_set)
    sign = 1.0 if player == 0 else -1.0
    deals = [deal for deal in DEALS if deal[player] == card]
    opponent = seats[1 - player]
    values = {action: sum(_opponent_reach(opponent, player, history, deal) * sign
                          * _value(history + action, deal, seats) for deal in deals)
              for action in ACTIONS}
    return sum(_opponent_reach(opponent, player, history, deal) for deal in deals), values


def action_gains(policy: Policy, on_policy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Self-play of ``policy``: per info set (``INFO_SETS`` order) and action (``ACTIONS``: pass, bet), the sum over
    its deals of the actor's Q(a) - V, each weighted by chance and the opponent's reach and, where ``on_policy``,
    by the actor's own reach too; and each info set's total weight. Leduc's ``leduc_cfr.action_gains``, for Kuhn."""
    gains, totals = np.zeros((len(INFO_SETS), len(ACTIONS))), np.zeros(len(INFO_SETS))
    for row, name in enumerate(INFO_SETS):
        reach, values = counterfactual_values((policy, policy), name)
        weight = (own_reach(policy, name) if on_policy else 1.0) / len(DEALS)  # a deal's chance is 1 / 6
        bet = policy[name]
        value = (1.0 - bet) * values[PASS] + bet * values[BET_ACTION]
        gains[row] = [weight * (values[action] - value) for action in ACTIONS]
        totals[row] = weight * reach
    return gains, totals


def best_response(opponent: Policy, player: int) -> tuple[float, dict[str, float]]:
    """A pure best response for ``player`` against ``opponent`` in the other seat, and its value.

    Counterfactual values (``counterfactual_values``) are computed bottom-up, so the responder's own reach, common
    to every state in an info set, does not change the argmax. Deeper info sets are
    decided first, so the responder's later choices are already fixed when earlier ones are scored.
    Ties go to ``p``, which makes the result deterministic. The value is the responder's expected
    chips per round.
    """
    if player not in (0, 1):
        raise ValueError(f"player must be 0 (first mover) or 1 (second mover), got {player!r}")
    responder: dict[str, float] = {}
    # Unused entries of the responder's table are placeholders: only its own info sets are ever read.
    seats_for = {0: lambda table: (table, opponent), 1: lambda table: (opponent, table)}[player]
    sign = 1.0 if player == 0 else -1.0
    for name in sorted(player_info_sets(player), key=lambda info: -len(info)):
        _, action_values = counterfactual_values(seats_for({**opponent, **responder}), name)
        responder[name] = 1.0 if action_values[BET_ACTION] > action_values[PASS] else 0.0
    full = {**opponent, **responder}
    value = sign * expected_value(*seats_for(full))
    return value, {name: responder[name] for name in player_info_sets(player)}


def best_response_value(opponent: Policy, player: int) -> float:
    """Expected chips per round of a best response for ``player`` against ``opponent``."""
    return best_response(opponent, player)[0]


def nash_conv(policy: Policy) -> float:
    """Sum over both seats of the best-response gain over the policy's own value (OpenSpiel's NashConv)."""
    policy = validate_policy(policy)
    value_first = self_play_value(policy)
    gain_first = best_response_value(policy, 0) - value_first
    gain_second = best_response_value(policy, 1) - (-value_first)
    return gain_first + gain_second


def exploitability(policy: Policy) -> float:
    """NashConv / 2: the mean best-response gain over the two seats (0 exactly at a Nash equilibrium)."""
    return nash_conv(policy) / 2.0


def exploitability_report(policy: Policy) -> dict[str, Any]:
    """Everything ``arena exploitability`` prints: exploitability, NashConv, best-response values and policies."""
    policy = validate_policy(policy)
    value_first = self_play_value(policy)
    br_first, response_first = best_response(policy, 0)
    br_second, response_second = best_response(policy, 1)
    conv = (br_first - value_first) + (br_second + value_first)
    return {
        "exploitability": conv / 2.0,
        "nash_conv": conv,
        "best_response_value": {"player0": br_first, "player1": br_second},
        "best_response_policy": {"player0": response_first, "player1": response_second},
        "self_play_value_first_player": value_first,
        "nash_value_first_player": NASH_FIRST_PLAYER_VALUE,
    }


# ---------------------------------------------------------------------------------------------
# Averaging behaviour strategies
# ---------------------------------------------------------------------------------------------


def own_reach(policy: Policy, info_set: str) -> float:
    """Probability that the owner of ``info_set`` plays into it (its own actions only; chance excluded)."""
    _check_info_set(info_set)
    card, history = int(info_set[0]), info_set[1:]
    owner = len(history) % 2
    reach = 1.0
    for depth, action in enumerate(history):
        if depth % 2 == owner:
            reach *= _action_probability(policy, card, history[:depth], action)
    return reach


def average_policy(policies: Sequence[Policy], weights: Sequence[float] | None = None) -> dict[str, float]:
    """The behaviour policy equivalent to playing snapshot k with probability proportional to ``weights[k]``.

    Averaging behaviour strategies info set by info set is wrong when the snapshots reach an info set
    with different probabilities: each snapshot's action probability must be weighted by its own reach
    of that info set (Kuhn's theorem; this is the average strategy of fictitious play and CFR). An
    info set no snapshot reaches keeps the plain weighted mean (any value is equivalent there).
    """
    if len(policies) == 0:
        raise ValueError("average_policy needs at least one policy")
    if weights is None:
        weights = [1.0] * len(policies)
    if len(weights) != len(policies):
        raise ValueError(f"average_policy: {len(policies)} policies but {len(weights)} weights; pass one per policy")
    weight_array = np.asarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(weight_array)) or np.any(weight_array < 0) or weight_array.sum() <= 0:
        raise ValueError(f"average_policy: weights must be finite, >= 0 and not all zero, got {list(weights)}")
    clean = [validate_policy(policy, source=f"policy[{index}]") for index, policy in enumerate(policies)]
    average: dict[str, float] = {}
    for name in INFO_SETS:
        reach = np.array([own_reach(policy, name) for policy in clean]) * weight_array
        bets = np.array([policy[name] for policy in clean])
        total = reach.sum()
        if total > 0:
            average[name] = float(np.clip((reach * bets).sum() / total, 0.0, 1.0))
        else:
            average[name] = float(np.clip((weight_array * bets).sum() / weight_array.sum(), 0.0, 1.0))
    return average
