"""Standard Kuhn poker (ante 1, bet 1) on TextArena, with OpenSpiel-style information sets and exact values.

TextArena's ``KuhnPoker-v0`` never moves chips on ``[bet]`` or ``[call]`` (the pot stays 2, so every round
pays +-1) and takes an extra ante after the last round. ``StandardKuhnPokerEnv`` fixes both and is
registered as ``arena-KuhnPoker-v0``; everything else (text, prompts, invalid-move rule, who opens) is
TextArena's. Histories use OpenSpiel's letters: ``p`` = check or fold, ``b`` = bet or call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from itertools import product
from typing import Any, NamedTuple

import textarena as ta
from textarena.envs.KuhnPoker.env import KuhnPokerEnv
from textarena.envs.registration import ENV_REGISTRY

from arena.games.base import Game, reject_unknown_keys, require_int

ENV_ID = "arena-KuhnPoker-v0"
CARD_NAMES = "JQK"
DEALS = tuple((a, b) for a in range(3) for b in range(3) if a != b)
DECISION_HISTORIES = ("", "p", "b", "pb")
TERMINAL_HISTORIES = ("pp", "pbp", "pbb", "bp", "bb")
# The largest loss a player can suffer in one round (ante + bet): the chip price of a forfeited round.
MAX_ROUND_LOSS = 2

_MOVE_RE = re.compile(r"\[(Check|Bet|Fold|Call)\]", re.IGNORECASE)  # TextArena's own parse of a Kuhn action


class KuhnRound(NamedTuple):
    """One completed round: the cards by seat, who opened, and the p/b betting history."""

    cards: tuple[int, int]
    opener: int
    history: str


class StandardKuhnPokerEnv(KuhnPokerEnv):
    """TextArena's Kuhn poker with standard chips: ``[bet]``/``[call]`` put one chip in the pot."""

    def reset(self, num_players: int, seed: int | None = None) -> None:
        self.completed_rounds: list[KuhnRound] = []
        self.history = ""
        super().reset(num_players=num_players, seed=seed)

    def step(self, action: str) -> tuple[bool, dict]:
        # Same acceptance test as KuhnPokerEnv.step, applied first so the chip is in the pot before the
        # parent settles a call at showdown.
        match = _MOVE_RE.search(action.strip())
        move = match.group(1).lower() if match else None
        if move in self.state.game_state["current_legal_action_tree"]:
            self.history += "b" if move in ("bet", "call") else "p"
            if move in ("bet", "call"):
                self.state.game_state["pot"] += 1
                self.state.game_state["player_chips"][self.state.current_player_id] -= 1
        return super().step(action)

    def _set_round_winner(self, player_id: int, reason: str) -> None:
        game_state = self.state.game_state
        cards = (game_state["player_cards"][0], game_state["player_cards"][1])
        self.completed_rounds.append(KuhnRound(cards, game_state["starting_player"], self.history))
        self.history = ""
        super()._set_round_winner(player_id=player_id, reason=reason)

    def _init_round(self) -> None:
        game_state = self.state.game_state
        if game_state["current_round"] < self.max_rounds:
            super()._init_round()
            return
        # The parent would shuffle and take one more ante here; end the game on the chips as they stand.
        chips = game_state["player_chips"]
        if chips[0] == chips[1]:
            self.state.set_draw(reason=f"At the end of {self.max_rounds} rounds, both players had the same chips.")
        else:
            winner = 0 if chips[0] > chips[1] else 1
            self.state.set_winner(
                player_id=winner,
                reason=f"Player {winner} won by having more chips at the end of all {self.max_rounds} rounds.",
            )


if ENV_ID not in ENV_REGISTRY:
    ta.register(
        id=ENV_ID,
        entry_point=StandardKuhnPokerEnv,
        default_wrappers=[ta.wrappers.LLMObservationWrapper, ta.wrappers.ActionFormattingWrapper],
        max_rounds=1,
    )


def info_set(card: int, history: str) -> str:
    """OpenSpiel-style information set: card digit (J=0, Q=1, K=2) then this round's p/b history."""
    return f"{card}{history}"


def round_payoff(opener_card: int, responder_card: int, history: str) -> int:
    """Standard Kuhn chips won by the round's opener for a terminal history (ante 1, bet 1)."""
    if history not in TERMINAL_HISTORIES:
        raise ValueError(f"not a terminal Kuhn history: {history!r}; terminal ones are {TERMINAL_HISTORIES}")
    if history == "bp":
        return 1
    if history == "pbp":
        return -1
    stake = 2 if history.endswith("bb") else 1
    return stake if opener_card > responder_card else -stake


def _deal_value(opener_card: int, responder_card: int, opener_policy: Mapping, responder_policy: Mapping) -> Any:
    """The opener's expected chips for one deal, summing every terminal history weighted by its reach."""
    total: Any = 0
    for history in TERMINAL_HISTORIES:
        reach: Any = 1
        for depth, letter in enumerate(history):
            acting_opener = depth % 2 == 0
            card = opener_card if acting_opener else responder_card
            p_bet = (opener_policy if acting_opener else responder_policy)[info_set(card, history[:depth])]
            reach *= p_bet if letter == "b" else 1 - p_bet
        total += reach * round_payoff(opener_card, responder_card, history)
    return total


def exact_round_value(opener_policy: Mapping[str, Any], responder_policy: Mapping[str, Any]) -> Any:
    """The opener's exact expected chips per round, enumerating all deals and histories.

    A policy maps an information set (``info_set(card, history)``) to the probability of ``b``. Pass
    Fractions to get an exact Fraction back.
    """
    deal_weight = Fraction(1, len(DEALS))
    return sum(deal_weight * _deal_value(a, b, opener_policy, responder_policy) for a, b in DEALS)


def best_response_value(policy: Mapping[str, Any], *, as_opener: bool) -> Any:
    """What a best response in one role earns per round against ``policy`` playing the other role.

    Each card's information sets are independent and a role has two decisions per card (opener: "" and
    "pb"; responder: "p" and "b"), so enumerating the four pure choices per card is an exact best response.
    """
    own_histories = ("", "pb") if as_opener else ("p", "b")
    deal_weight = Fraction(1, len(DEALS))
    total: Any = 0
    for card in range(3):
        best = None
        for choice in product((0, 1), repeat=2):
            pure = {info_set(card, history): bet for history, bet in zip(own_histories, choice, strict=True)}
            value = 0
            for other in range(3):
                if other == card:
                    continue
                if as_opener:
                    value += deal_weight * _deal_value(card, other, pure, policy)
                else:
                    value -= deal_weight * _deal_value(other, card, policy, pure)
            best = value if best is None else max(best, value)
        total += best
    return total


def exploitability(policy: Mapping[str, Any]) -> Any:
    """NashConv / 2 of a policy used in both roles: 0 exactly for a Nash policy, 11/24 for uniform random."""
    return (best_response_value(policy, as_opener=True) + best_response_value(policy, as_opener=False)) / 2


def seat_payoffs(kuhn_round: KuhnRound) -> tuple[float, float]:
    """Chips won per seat (player 0, player 1) in a completed round."""
    opener = kuhn_round.opener
    value = float(round_payoff(kuhn_round.cards[opener], kuhn_round.cards[1 - opener], kuhn_round.history))
    return (value, -value) if opener == 0 else (-value, value)


class KuhnGame(Game):
    """Standard Kuhn poker; variant ``rounds`` (default 1: one game is one hand). Round 1 is opened by player 1.

    Forfeit (a second invalid move in a row): completed rounds keep their chips and the offender pays the
    maximum round loss, 2 chips, for the current round and for every round left unplayed. No legal line
    of play can lose more than 2 chips in a round, so forfeiting never pays better than playing on.
    """

    DEFAULTS: Mapping[str, Any] = {"rounds": 1}

    @staticmethod
    def validate_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
        reject_unknown_keys("kuhn", variant, KuhnGame.DEFAULTS)
        full = {**KuhnGame.DEFAULTS, **variant}
        return {"rounds": require_int("kuhn", "rounds", full["rounds"], 1)}

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {"max_rounds": variant["rounds"]}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(f"[{move}]" for move in game_state["current_legal_action_tree"])

    def _card(self, game_state: Mapping[str, Any], player: int) -> int:
        return game_state["player_cards"][player]

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        return f"card: {CARD_NAMES[self._card(game_state, player)]}\nhistory: {self._env.history}\n"

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        return {
            "card": self._card(game_state, player),
            "history": self._env.history,
            "round": game_state["current_round"],
            "rounds": self.variant["rounds"],
        }

    def _info_set(self, game_state: Mapping[str, Any], player: int) -> str:
        return info_set(self._card(game_state, player), self._env.history)

    @property
    def completed_rounds(self) -> list[KuhnRound]:
        """The rounds played to the end so far."""
        return list(self._env.completed_rounds)

    def _rewards(
        self, ta_rewards: dict[int, float], forfeit_by: int | None
    ) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
        per_round = [seat_payoffs(r) for r in self._env.completed_rounds]
        if forfeit_by is not None:
            forfeited = (-MAX_ROUND_LOSS, MAX_ROUND_LOSS) if forfeit_by == 0 else (MAX_ROUND_LOSS, -MAX_ROUND_LOSS)
            per_round += [(float(forfeited[0]), float(forfeited[1]))] * (self.variant["rounds"] - len(per_round))
        rewards = (sum(r[0] for r in per_round), sum(r[1] for r in per_round))
        return rewards, tuple(per_round)
