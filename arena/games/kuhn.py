"""Standard Kuhn poker (ante 1, bet 1) on TextArena, with OpenSpiel-style information sets and chip payoffs.

TextArena's ``KuhnPoker-v0`` never moves chips on ``[bet]`` or ``[call]`` (the pot stays 2, so every round
pays +-1) and takes an extra ante after the last round. ``StandardKuhnPokerEnv`` fixes both and is
registered as ``arena-KuhnPoker-v0``; everything else (text, prompts, invalid-move rule, who opens) is
TextArena's. Histories use OpenSpiel's letters: ``p`` = check or fold, ``b`` = bet or call. The rules
(payoffs, info-set names) and all exact analysis live in ``arena.games.kuhn_theory``; this module only drives the env.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import textarena as ta
from textarena.envs.KuhnPoker.env import KuhnPokerEnv
from textarena.envs.registration import ENV_REGISTRY

from arena.games.base import Game
from arena.games.kuhn_theory import ANTE, BET, CARD_NAMES, info_set_name, terminal_value
from arena.games.variants import kuhn_variant

ENV_ID = "arena-KuhnPoker-v0"
# The largest loss a player can suffer in one round (ante + bet): the chip price of a forfeited round.
MAX_ROUND_LOSS = ANTE + BET

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


def seat_payoffs(kuhn_round: KuhnRound) -> tuple[float, float]:
    """Chips won per seat (player 0, player 1) in a completed round."""
    opener = kuhn_round.opener
    value = terminal_value(kuhn_round.history, (kuhn_round.cards[opener], kuhn_round.cards[1 - opener]))
    return (value, -value) if opener == 0 else (-value, value)


class KuhnGame(Game):
    """Standard Kuhn poker; variant ``rounds`` (default 1: one game is one hand). Round 1 is opened by player 1.

    Forfeit (a second invalid move in a row): completed rounds keep their chips and the offender pays the
    maximum round loss, 2 chips, for the current round and for every round left unplayed. No legal line
    of play can lose more than 2 chips in a round, so forfeiting never pays better than playing on.
    """

    validate_variant = staticmethod(kuhn_variant)

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
        return info_set_name(self._card(game_state, player), self._env.history)

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
