"""Full-width NeuRD targets (``train.neurd_values: exact``): every information state's exact expected target.

Why (studies/results/neurd_fit.md): sampled targets exist only at the prompts an iteration's games visited, and the fit
moves every other state through shared weights. For a game with exact theory the expected target is computable at
every information state from the policy itself: self-play action values from the game tree (no games sampled), each
state weighted by chance and the opponent's reach (and the actor's own, for ``onpolicy``). Halved, these are the
sampled targets' expectation: a sampled visit weighs 1 / the iteration's games, and each deal is played from both
seats, so each seat's states carry half the weight (studies/leduc_neurd.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from arena.games import kuhn_theory, leduc_theory, nim_theory, tictactoe_theory
from arena.games.base import Observation
from arena.games.leduc_cfr import action_gains as leduc_gains
from arena.games.registry import make_game
from arena.games.variants import NIM_DEFAULTS
from arena.players.board_policy import cell_of, ttt_observations
from arena.players.policy import (
    AGGRESSIVE,
    LEDUC_NAMES,
    canonical_observations,
    leduc_canonical_observations,
)
from arena.train.config import FULL_WIDTH_GAMES, TrainConfig
from arena.train.selfplay.targets import neurd_target


@dataclass(frozen=True)
class InfoStates:
    """A game's information states as the model sees them: one real observation each, in the theory's row order,
    and each observation's legal actions as columns of the theory's action table."""

    observations: tuple[Observation, ...]
    columns: tuple[tuple[int, ...], ...]
    width: int


def _kuhn_states() -> InfoStates:
    """Kuhn's 12 canonical states; the columns are kuhn_theory.ACTIONS: pass (check or fold), bet (bet or call)."""
    observations = tuple(canonical_observations().values())
    return InfoStates(observations, tuple(tuple(int(a in AGGRESSIVE) for a in o.legal_actions) for o in observations),
                      len(kuhn_theory.ACTIONS))


def _leduc_states() -> InfoStates:
    """Leduc's 936 canonical states; the columns are leduc_theory.ACTION_NAMES."""
    observations = tuple(leduc_canonical_observations().values())
    return InfoStates(observations, tuple(tuple(leduc_theory.ACTION_NAMES.index(LEDUC_NAMES[a])
                                                for a in o.legal_actions) for o in observations),
                      len(leduc_theory.ACTION_NAMES))


def _tictactoe_states() -> InfoStates:
    """Every reachable TicTacToe position, in tictactoe_theory.positions() order; the columns are cells."""
    observations = tuple(ttt_observations().values())
    return InfoStates(observations, tuple(tuple(cell_of(a) for a in o.legal_actions) for o in observations), 9)


# Full-width Nim trains the positions a game from TextArena's default piles reaches (the exact evaluation's "seen").
NIM_START = tuple(NIM_DEFAULTS["piles"])


def _nim_observation(piles: nim_theory.Piles) -> Observation:
    """The prompt at ``piles`` in a game from ``NIM_START``: each smaller pile emptied to its size by one move."""
    game = make_game("nim", 0)
    for pile, (size, start) in enumerate(zip(piles, NIM_START, strict=True)):
        if size < start:
            game.step(f"[{pile} {start - size}]")
    return game.observation()


def _nim_states() -> InfoStates:
    """Every position a game from ``NIM_START`` reaches (nim_theory.positions order); the columns are moves."""
    observations = tuple(_nim_observation(piles) for piles in nim_theory.positions(NIM_START))
    columns = tuple(tuple(nim_theory.column(NIM_START, *map(int, a[1:-1].split())) for a in o.legal_actions)
                    for o in observations)
    return InfoStates(observations, columns, sum(NIM_START))


def _leduc_gains(table: np.ndarray, on_policy: bool) -> tuple[np.ndarray, np.ndarray]:
    """Leduc's gains and weights, both players' states summed (each state belongs to one player)."""
    both = [leduc_gains(table, player, on_policy) for player in (0, 1)]
    return both[0][0] + both[1][0], both[0][1] + both[1][1]


@dataclass(frozen=True)
class ExactGame:
    """What full-width targets need of a game with exact theory: its information states, its self-play gains
    (``action_gains``) and its exploitability, both of a [states, actions] policy table."""

    states: Callable[[], InfoStates]
    gains: Callable[[np.ndarray, bool], tuple[np.ndarray, np.ndarray]]
    exploitability: Callable[[np.ndarray], float]


EXACT_GAMES = {
    "kuhn": ExactGame(_kuhn_states,
                      lambda table, on_policy: kuhn_theory.action_gains(
                          kuhn_theory.policy_from_array(table[:, 1]), on_policy),
                      lambda table: kuhn_theory.exploitability(kuhn_theory.policy_from_array(table[:, 1]))),
    "leduc": ExactGame(_leduc_states, _leduc_gains, leduc_theory.exploitability),
    "tictactoe": ExactGame(_tictactoe_states, tictactoe_theory.action_gains, tictactoe_theory.exploitability),
    "nim": ExactGame(_nim_states, lambda table, on_policy: nim_theory.action_gains(table, NIM_START, on_policy),
                     lambda table: nim_theory.exploitability(table, NIM_START)),
}


def _exact_game(game: str) -> ExactGame:
    """``game``'s record, or an error naming the games that have one."""
    if game not in EXACT_GAMES:
        raise ValueError(f"train.neurd_values: exact needs a game with exact theory ({', '.join(FULL_WIDTH_GAMES)}), "
                         f"got {game!r}; use train.neurd_values: sampled for it")
    return EXACT_GAMES[game]


@cache
def info_states(game: str) -> InfoStates:
    """``game``'s information states (one of ``FULL_WIDTH_GAMES``)."""
    return _exact_game(game).states()


def as_table(game: str, logp: Sequence[np.ndarray]) -> np.ndarray:
    """The [states, actions] policy table of per-state log-policies (zero at illegal actions)."""
    states = info_states(game)
    table = np.zeros((len(states.columns), states.width))
    for row, (values, cols) in enumerate(zip(logp, states.columns, strict=True)):
        table[row, list(cols)] = np.exp(values)
    return table


def action_gains(game: str, table: np.ndarray, on_policy: bool) -> tuple[np.ndarray, np.ndarray]:
    """Self-play of ``table``: per state and action, the weighted sum of Q(a) - V over the state's deals (both
    seats' states), and each state's total weight."""
    return _exact_game(game).gains(table, on_policy)


def exploitability(game: str, table: np.ndarray) -> float:
    """The exact exploitability (NashConv / 2) of the policy ``table``."""
    return _exact_game(game).exploitability(table)


def full_width_targets(game: str, current: Sequence[np.ndarray], magnet: Sequence[np.ndarray], rate: float,
                       config: TrainConfig) -> list[tuple[np.ndarray, bool]]:
    """Every information state's NeuRD target (and whether the logit threshold cut it), from the exact action
    values of the policy ``current`` (per state, its log-policy over the legal actions); the magnet is ``magnet``."""
    gains, totals = action_gains(game, as_table(game, current), config.neurd_weighting == "onpolicy")
    return [neurd_target(old, rho, gains[row, list(cols)] / 2, totals[row] / 2, rate, config.beta,
                         config.neurd_clip)
            for row, (old, rho, cols) in enumerate(zip(current, magnet, info_states(game).columns, strict=True))]
