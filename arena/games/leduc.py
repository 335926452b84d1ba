"""Leduc Hold'em with OpenSpiel's standard rules on TextArena: OpenSpiel info-state strings and chip payoffs."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import textarena as ta
from textarena.envs.registration import ENV_REGISTRY

from arena.games.base import Game
from arena.games.leduc_theory import (
    ANTE,
    CALL,
    CARDS,
    FOLD,
    MAX_HAND_LOSS,
    RAISE,
    RAISE_SIZES,
    RANK_NAMES,
    History,
    after,
    betting_round,
    contributions,
    info_state_string,
    is_terminal,
    legal_actions,
    rank,
    terminal_value,
)
from arena.games.variants import leduc_variant

ENV_ID = "arena-LeducHoldem-v0"
SUIT_LETTERS = ("s", "h")  # card % 2; suits never matter, they only tell the two cards of a rank apart
_MOVE_RE = re.compile(r"\[(fold|check|call|raise)\]", re.IGNORECASE)
# Compact history letters (ACPC style): c = check or call, r = raise; a fold always ends the hand.
_LETTERS = {CALL: "c", RAISE: "r"}


def card_text(card: int) -> str:
    """A card in poker notation, e.g. ``Kh``."""
    return f"{RANK_NAMES[rank(card)]}{SUIT_LETTERS[card % 2]}"


def move_names(history: History) -> tuple[str, ...]:
    """The legal moves at ``history`` as words: call is ``check`` when nothing is owed."""
    sequence = history[betting_round(history) - 1]
    facing = bool(sequence) and sequence[-1] == RAISE
    words = {FOLD: "fold", CALL: "call" if facing else "check", RAISE: "raise"}
    return tuple(words[action] for action in legal_actions(history))


def history_letters(history: History) -> str:
    """``rrc/cr``: round one's moves, a slash once the second round is open, then its moves."""
    first = "".join(_LETTERS[a] for a in history[0])
    return first + ("/" + "".join(_LETTERS[a] for a in history[1]) if betting_round(history) == 2 else "")


class LeducHand(NamedTuple):
    """One finished hand: private cards by seat, the public card (None after a first-round fold), the
    seat that acted first (OpenSpiel's player 0), and the action ids of both rounds."""

    cards: tuple[int, int]
    public: int | None
    opener: int
    history: History


class StandardLeducHoldemEnv(ta.Env):
    """Leduc Hold'em: ``max_rounds`` hands (default 1); seat 0 opens the first hand, then the opener alternates.

    TextArena's own ``LeducHoldemEnv`` is not registered and its chips are not standard (a raise puts in only
    the raise, a call the whole bet whatever is already in, a bet plus two raises per round, five banked hands
    with the opener alternating), so this env is written on TextArena's ``Env`` and ``TwoPlayerState`` (its
    invalid-move rule: one retry, then a forfeit). Rules, payoffs and info-state strings come from
    ``arena.games.leduc_theory``; the env only deals (from ``random``, which ``Game`` isolates) and drives.
    """

    def __init__(self, max_rounds: int = 1) -> None:
        super().__init__()
        self.max_rounds = max_rounds

    def reset(self, num_players: int, seed: int | None = None) -> None:
        self.state = ta.TwoPlayerState(num_players=num_players, seed=seed)
        game_state = {"hand": 0, "opener": 1, "player_chips": {0: 0, 1: 0}, "pot": 0}
        self.state.reset(game_state=game_state, player_prompt_function=self._prompt)
        self.completed_hands: list[LeducHand] = []
        self._start_hand()

    def _prompt(self, player_id: int, game_state: Mapping[str, Any]) -> str:
        return (
            f"You are Player {player_id} in a {self.max_rounds} hand game of Leduc Hold'em.\n"
            "Game Rules:\n"
            "- The deck has 6 cards: J, Q and K in two suits (suits never matter)\n"
            f"- Each player antes {ANTE} chip and gets one private card; the opener acts first in both rounds\n"
            f"- Two betting rounds: raises are {RAISE_SIZES[0]} chips in the first and {RAISE_SIZES[1]} in the "
            "second, at most 2 raises per round\n"
            "- After the first round one public card is dealt\n"
            "- Showdown: a private card that pairs the public card wins, else the higher private card; "
            "equal ranks split the pot\n"
            "- The player with the most chips after all hands wins\n\n"
            "Action Rules:\n"
            "- '[check]': pass when nothing is owed\n"
            "- '[call]': match the opponent's raise\n"
            "- '[raise]': put in what is owed plus the raise\n"
            "- '[fold]': give up the hand and the chips already in the pot\n"
        )

    @property
    def position(self) -> dict[int, int]:
        """Seat -> position in the current hand (0 acts first, as OpenSpiel's player 0)."""
        opener = self.state.game_state["opener"]
        return {seat: (seat - opener) % 2 for seat in (0, 1)}

    def _cards_by_position(self) -> tuple[int, int]:
        cards, opener = self.state.game_state["player_cards"], self.state.game_state["opener"]
        return cards[opener], cards[1 - opener]

    def _start_hand(self) -> None:
        game_state = self.state.game_state
        game_state["hand"] += 1
        game_state["opener"] = opener = 1 - game_state["opener"]
        deck = list(CARDS)
        random.shuffle(deck)  # the game's own RNG stream: Game swaps it in around every step
        game_state["player_cards"] = {0: deck[0], 1: deck[1]}
        game_state["public_card"] = None
        self._undealt = deck[2:]
        self.history: History = ((), ())
        self._sync_pot()
        self.state.manually_set_current_player_id(opener)
        for seat in (0, 1):
            who = "You act" if seat == opener else "Your opponent acts"
            self.state.add_observation(
                to_id=seat, observation_type=ta.ObservationType.GAME_MESSAGE,
                message=f"### Starting hand {game_state['hand']} of {self.max_rounds}. Your private card: "
                        f"'{card_text(game_state['player_cards'][seat])}'. {who} first this hand.",
            )  # fmt: skip
        self._announce(opener)

    def _sync_pot(self) -> None:
        put = contributions(self.history)
        opener = self.state.game_state["opener"]
        self.state.game_state["contributions"] = {opener: put[0], 1 - opener: put[1]}
        self.state.game_state["pot"] = sum(put)

    def _announce(self, seat: int) -> None:
        moves = ", ".join(f"'[{move}]'" for move in move_names(self.history))
        self.state.add_observation(to_id=seat, message=f"Your available actions are: {moves}",
                                   observation_type=ta.ObservationType.GAME_BOARD)

    def step(self, action: str) -> tuple[bool, dict]:
        seat = self.state.current_player_id
        self.state.add_observation(from_id=seat, message=action, observation_type=ta.ObservationType.PLAYER_ACTION)
        match = _MOVE_RE.search(action.strip())
        move = match.group(1).lower() if match else None
        words = move_names(self.history)
        if move not in words:
            legal = ", ".join(f"[{word}]" for word in words)
            self.state.set_invalid_move(reason=f"Action must be one of {legal}.")
            return self.state.step()
        self.history = after(self.history, legal_actions(self.history)[words.index(move)])
        self._sync_pot()
        self.state.add_observation(message=f"Player {seat} {move}s; the pot is {self.state.game_state['pot']} "
                                           "chips.", observation_type=ta.ObservationType.GAME_ACTION_DESCRIPTION)
        if is_terminal(self.history):
            self._settle()
            return self.state.step(rotate_player=False)
        if betting_round(self.history) == 2 and not self.history[1]:
            self._deal_public()
            return self.state.step(rotate_player=False)
        self._announce(1 - seat)
        return self.state.step(rotate_player=True)

    def _deal_public(self) -> None:
        game_state = self.state.game_state
        game_state["public_card"] = public = random.choice(self._undealt)
        self.state.add_observation(message=f"The first round is over. Public card: '{card_text(public)}'.",
                                   observation_type=ta.ObservationType.GAME_MESSAGE)
        self.state.manually_set_current_player_id(game_state["opener"])
        self._announce(game_state["opener"])

    def _settle(self) -> None:
        game_state = self.state.game_state
        opener, public = game_state["opener"], game_state["public_card"]
        value = terminal_value(self.history, self._cards_by_position(), public)
        chips = game_state["player_chips"]
        chips[opener] += value
        chips[1 - opener] -= value
        cards = game_state["player_cards"]
        self.completed_hands.append(LeducHand((cards[0], cards[1]), public, opener, self.history))
        shown = "" if public is None else (f" Cards: Player 0 '{card_text(cards[0])}', Player 1 "
                                           f"'{card_text(cards[1])}', public '{card_text(public)}'.")
        self.state.add_observation(
            message=f"Hand {game_state['hand']} is over.{shown} Chips: Player 0 {chips[0]:+g}, Player 1 "
                    f"{chips[1]:+g}.", observation_type=ta.ObservationType.GAME_MESSAGE,
        )  # fmt: skip
        if game_state["hand"] < self.max_rounds:
            self._start_hand()
        elif chips[0] == chips[1]:
            self.state.set_draw(reason=f"After {self.max_rounds} hands both players have the same chips.")
        else:
            winner = 0 if chips[0] > chips[1] else 1
            self.state.set_winner(winner, reason=f"Player {winner} has more chips after {self.max_rounds} hands.")


if ENV_ID not in ENV_REGISTRY:
    ta.register(
        id=ENV_ID,
        entry_point=StandardLeducHoldemEnv,
        default_wrappers=[ta.wrappers.LLMObservationWrapper, ta.wrappers.ActionFormattingWrapper],
        max_rounds=1,
    )


def seat_payoffs(hand: LeducHand) -> tuple[float, float]:
    """Chips won per seat (player 0, player 1) in a finished hand."""
    by_position = (hand.cards[hand.opener], hand.cards[1 - hand.opener])
    value = terminal_value(hand.history, by_position, hand.public)
    return (value, -value) if hand.opener == 0 else (-value, value)


class LeducGame(Game):
    """Leduc Hold'em; variant ``rounds`` (hands per game, default 1: one game is one hand).

    Forfeit (a second invalid move in a row): finished hands keep their chips and the offender pays the
    maximum hand loss, 13 chips, for the current hand and for every hand left unplayed. No legal line of
    play loses more than 13 chips in a hand, so forfeiting never pays better than playing on.
    """

    validate_variant = staticmethod(leduc_variant)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {"max_rounds": variant["rounds"]}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(f"[{move}]" for move in move_names(self._env.history))

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        card = RANK_NAMES[rank(game_state["player_cards"][player])]
        public = game_state["public_card"]
        board = "" if public is None else f"board: {RANK_NAMES[rank(public)]}\n"
        return f"card: {card}\n{board}history: {history_letters(self._env.history)}\n"

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        history = self._env.history
        return {
            "card": game_state["player_cards"][player],
            "public": game_state["public_card"],
            "history": [list(history[0]), list(history[1])],
            "position": self._env.position[player],
            "hand": game_state["hand"],
            "rounds": self.variant["rounds"],
        }

    def _info_set(self, game_state: Mapping[str, Any], player: int) -> str:
        return info_state_string(self._env.position[player], game_state["player_cards"][player],
                                 game_state["public_card"], self._env.history)

    @property
    def completed_hands(self) -> list[LeducHand]:
        """The hands played to the end so far."""
        return list(self._env.completed_hands)

    def _rewards(
        self, ta_rewards: dict[int, float], forfeit_by: int | None
    ) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
        per_hand = [seat_payoffs(hand) for hand in self._env.completed_hands]
        if forfeit_by is not None:
            lost = (-float(MAX_HAND_LOSS), float(MAX_HAND_LOSS))
            forfeited = lost if forfeit_by == 0 else (lost[1], lost[0])
            per_hand += [forfeited] * (self.variant["rounds"] - len(per_hand))
        return (sum(r[0] for r in per_hand), sum(r[1] for r in per_hand)), tuple(per_hand)
