"""Scripted players: uniform random, first legal, exact oracles per game (also diluted), degenerate policies.

Every sampling choice draws from a ``random.Random`` seeded by the player's name and the observation's
``sample_key`` alone, so a decision never depends on what else is batched or on the global ``random``.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arena.core.hashing import digest_bytes, digest_config
from arena.games.base import Observation
from arena.games.kuhn_theory import nash_policy
from arena.games.leduc_cfr import nash_digest, nash_table
from arena.games.nim_theory import nim_move
from arena.games.tictactoe_theory import ttt_best_move, ttt_value, ttt_winner
from arena.players import splitters, traders
from arena.players.base import Decision, Player
from arena.players.specs import EPS_ORACLE, EPS_ORACLE_FORM, parse_epsilon

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def sample_rng(name: str, sample_key: int) -> random.Random:
    """A private RNG for one decision: a function of the player name and the sample key only."""
    return random.Random(f"{name}:{sample_key}")


class ScriptedPlayer(Player):
    """Base for scripted policies; ``pin()`` digests the class source plus its listed helpers."""

    spec = ""
    helpers: tuple[Callable[..., Any], ...] = ()

    def config(self) -> dict[str, Any]:
        """Settings that change this policy's choices (hashed into ``config_hash``)."""
        return {}

    def pin(self) -> dict[str, Any]:
        sources = [inspect.getsource(obj) for obj in (sample_rng, ScriptedPlayer, type(self), *self.helpers)]
        return {
            "kind": "scripted",
            "name": self.spec,
            "code_hash": digest_bytes("\n".join(sources).encode("utf-8")),
            "config_hash": digest_config(self.config()),
        }


class RandomPlayer(ScriptedPlayer):
    """Uniform over the legal actions."""

    spec = "random"

    def act(self, observation: Observation) -> Decision:
        legal = observation.legal_actions
        return Decision(action=legal[sample_rng(self.spec, observation.sample_key).randrange(len(legal))])


class FirstPlayer(ScriptedPlayer):
    """Always the first legal action (Kuhn: check or fold; TicTacToe: lowest free cell)."""

    spec = "first"

    def act(self, observation: Observation) -> Decision:
        return Decision(action=observation.legal_actions[0])


class StallerPlayer(ScriptedPlayer):
    """Always the same invalid move (no game in the registry accepts ``[pass]``): must lose every game."""

    spec = "staller"

    def act(self, observation: Observation) -> Decision:
        return Decision(action="[pass]")


class SpammerPlayer(ScriptedPlayer):
    """Random lowercase words from the sample key.

    Always two or more words of letters only: TextArena's parsers need digits (TicTacToe, Nim, bids), a
    bracketed keyword alone (``[call]``, ``[bet]``), or a single bare keyword that the action wrapper
    brackets; none of these can occur, so every spam is an invalid move.
    """

    spec = "spammer"

    def act(self, observation: Observation) -> Decision:
        rng = sample_rng(self.spec, observation.sample_key)
        words = ["".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 8))) for _ in range(rng.randint(2, 6))]
        return Decision(action=" ".join(words))


def kuhn_action(legal: Sequence[str], bet: bool) -> str:
    """The legal Kuhn action for a p/b choice: ``b`` is bet or call, ``p`` is check or fold."""
    wanted = ("[bet]", "[call]") if bet else ("[check]", "[fold]")
    return next(action for action in legal if action in wanted)


def leduc_action(legal: Sequence[str], distribution: Mapping[str, float], u: float) -> str:
    """The legal Leduc action drawn by ``u`` in [0, 1) from {fold, call, raise: probability}; call is check or call."""
    words = {"fold": ("[fold]",), "call": ("[check]", "[call]"), "raise": ("[raise]",)}
    cumulative, choice = 0.0, None
    for name, probability in distribution.items():
        choice = name
        cumulative += probability
        if u < cumulative:
            break
    return next(action for action in legal if action in words[choice])


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    if k <= 0:
        return 1.0
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def liarsdice_bid_truth(dice: Sequence[int], opponent_dice: int, quantity: int, face: int) -> float:
    """P(at least ``quantity`` dice show ``face``) given own dice, opponent's dice uniform (no wild ones)."""
    return binomial_tail(opponent_dice, quantity - list(dice).count(face), 1 / 6)


def liarsdice_choice(state: Mapping[str, Any], legal: Sequence[str]) -> str:
    """Call when the standing bid is less likely true than false and than the best raise; else the raise
    most likely true (ties: lowest quantity, then the face held most, then the higher face)."""
    dice, player_bid = state["dice"], state["bid"]
    opponent_dice = sum(state["dice_counts"]) - len(dice)
    held = {face: dice.count(face) for face in range(1, 7)}
    best_action, best_key = None, None
    for action in legal:
        if action == "[Call]":
            continue
        quantity, face = (int(x) for x in action[len("[Bid: ") : -1].split(", "))
        truth = liarsdice_bid_truth(dice, opponent_dice, quantity, face)
        key = (truth, -quantity, held[face], face)
        if best_key is None or key > best_key:
            best_action, best_key = action, key
    if "[Call]" in legal:
        standing_false = 1 - liarsdice_bid_truth(dice, opponent_dice, *player_bid)
        if best_key is None or (standing_false > 0.5 and standing_false >= best_key[0]):
            return "[Call]"
    return best_action


class OraclePlayer(ScriptedPlayer):
    """An exact (or, for Liar's Dice, sound) policy per game.

    Kuhn: ``arena.games.kuhn_theory.nash_policy(kuhn_alpha)`` (alpha in [0, 1/3], default 0), sampled from the
    sample key. Leduc: the CFR+ average policy shipped in ``arena/games/data/leduc_nash.json`` (exploitability
    about 1e-5), sampled from the sample key at the observation's OpenSpiel info state.
    TicTacToe: memoised minimax (never loses). Nim: nim-sum (wins every won position). Liar's Dice: the
    binomial heuristic of ``liarsdice_choice``. Negotiation (no exact theory): the greedy trader's move.
    Ultimatum: a minimax move (``splitters.minimax_split``: never loses).
    """

    spec = "oracle"
    helpers = (
        nash_policy, kuhn_action, nash_table, leduc_action, ttt_winner, ttt_value, ttt_best_move, nim_move,
        binomial_tail, liarsdice_bid_truth, liarsdice_choice, traders.greedy_move, traders.best_offer,
        traders.incoming_gain, traders._gains, splitters.minimax_split,
    )  # fmt: skip

    def __init__(self, kuhn_alpha: float = 0.0) -> None:
        self.kuhn_policy = nash_policy(kuhn_alpha)  # validates alpha, naming the allowed range
        self.kuhn_alpha = float(kuhn_alpha)

    def config(self) -> dict[str, Any]:
        # The Leduc table is data, not code: its digest stands in the config so the pin changes with it.
        return {"kuhn_alpha": self.kuhn_alpha, "leduc_nash": nash_digest()}

    def act(self, observation: Observation) -> Decision:
        state, legal = observation.state, observation.legal_actions
        if observation.game_id == "kuhn":
            p_bet = self.kuhn_policy[observation.info_set]
            bet = sample_rng(self.spec, observation.sample_key).random() < p_bet
            return Decision(action=kuhn_action(legal, bet))
        if observation.game_id == "leduc":
            u = sample_rng(self.spec, observation.sample_key).random()
            return Decision(action=leduc_action(legal, nash_table()[observation.info_set], u))
        if observation.game_id == "tictactoe":
            return Decision(action=f"[{ttt_best_move(state['board'], state['mark'])}]")
        if observation.game_id == "nim":
            pile, quantity = nim_move(state["piles"])
            return Decision(action=f"[{pile} {quantity}]")
        if observation.game_id == "liarsdice":
            return Decision(action=liarsdice_choice(state, legal))
        if observation.game_id == "negotiation":
            return Decision(action=traders.greedy_move(state, legal))
        if observation.game_id == "ultimatum":
            return Decision(action=splitters.minimax_split(state))
        raise ValueError(f"the oracle has no policy for game {observation.game_id!r}")


class EpsOraclePlayer(ScriptedPlayer):
    """The oracle, diluted: with probability ``epsilon`` a uniformly random legal move, else the oracle's move.

    A ladder of epsilons is a ladder of opponent strengths (1 = ``random``'s policy, 0 = ``oracle``'s) for
    curricula. The coin and the random move come from this player's own stream (named by its spec); the
    oracle's own mixed choices (Kuhn) come from the oracle's stream, so the two are independent.
    """

    helpers = (parse_epsilon, OraclePlayer, *OraclePlayer.helpers)

    def __init__(self, epsilon: float, spec: str | None = None) -> None:
        # The spec is kept as written (records and summaries look players up by it); the sampling stream is
        # named by the value, so "eps-oracle:1" and "eps-oracle:1.0" play identically.
        self.spec = spec or f"{EPS_ORACLE}{epsilon!r}"
        self.epsilon = parse_epsilon(self.spec)
        if self.epsilon != epsilon:
            raise ValueError(f"player spec {self.spec!r} does not match epsilon {epsilon!r}")
        self.stream = f"{EPS_ORACLE}{self.epsilon!r}"
        self.oracle = OraclePlayer()

    def config(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "leduc_nash": nash_digest()}

    def act(self, observation: Observation) -> Decision:
        rng = sample_rng(self.stream, observation.sample_key)
        if rng.random() < self.epsilon:
            legal = observation.legal_actions
            return Decision(action=legal[rng.randrange(len(legal))])
        return self.oracle.act(observation)


class TraderPlayer(ScriptedPlayer):
    """A negotiation policy of ``arena.players.traders``; ``greedy``, ``fair`` and ``never`` also play ultimatum
    (``arena.players.splitters``). Other games have no offers."""

    helpers = (traders.incoming_gain, traders.proposer_base_gain, traders._gains, traders.best_offer)
    move: Callable[[Mapping[str, Any], Sequence[str]], str]
    # The move where the state names its own resources and base values (negotiation with spiral: true); None: move.
    stated: Callable[[Mapping[str, Any], Sequence[str]], str] | None = None
    split: Callable[[Mapping[str, Any]], str] | None = None

    def act(self, observation: Observation) -> Decision:
        if observation.game_id == "ultimatum" and type(self).split is not None:
            return Decision(action=type(self).split(observation.state))
        if observation.game_id != "negotiation":
            raise ValueError(f"scripted player {self.spec!r} plays only negotiation"
                             f"{' and ultimatum' if type(self).split else ''}, not {observation.game_id!r}")
        move = type(self).stated if "base" in observation.state and type(self).stated else type(self).move
        return Decision(action=move(observation.state, observation.legal_actions))


class GreedyTrader(TraderPlayer):
    """Accepts any offer that raises its own value; proposes the largest own gain the opponent would take."""

    spec = "greedy"
    move = staticmethod(traders.greedy_move)
    stated = staticmethod(traders.stated_greedy_move)
    split = staticmethod(splitters.greedy_split)
    helpers = (*TraderPlayer.helpers, traders.greedy_move, splitters.greedy_split, traders.stated_greedy_move,
               traders.stated_best_offer)


class FairTrader(TraderPlayer):
    """Accepts offers that give it at least the proposer's gain; proposes the most even mutual gain."""

    spec = "fair"
    move = staticmethod(traders.fair_move)
    stated = staticmethod(traders.stated_fair_move)
    split = staticmethod(splitters.fair_split)
    helpers = (*TraderPlayer.helpers, traders.fair_move, splitters.fair_split, traders.stated_fair_move,
               traders.stated_best_offer)


class NeverTrader(TraderPlayer):
    """Always ``[Deny]``: never offers, never accepts."""

    spec = "never"
    move = staticmethod(lambda state, legal: "[Deny]")
    split = staticmethod(splitters.never_split)
    helpers = (*TraderPlayer.helpers, splitters.never_split)


class ResponderTrader(TraderPlayer):
    """Accepts exactly the offers that raise its own value; never proposes (the measure of value left)."""

    spec = "responder"
    move = staticmethod(traders.responder_move)
    helpers = (*TraderPlayer.helpers, traders.responder_move)


class AcceptAllTrader(TraderPlayer):
    """Accepts every offer it can pay for, else passes (degenerate: the reward audit's)."""

    spec = "accept-all"
    move = staticmethod(traders.accept_all_move)
    helpers = (*TraderPlayer.helpers, traders.accept_all_move)


class OfferSpammer(TraderPlayer):
    """A uniformly random listed offer every move, never accepting (degenerate: the reward audit's)."""

    spec = "offer-spam"
    helpers = (sample_rng, traders.offer_spam_move)

    def act(self, observation: Observation) -> Decision:
        if observation.game_id != "negotiation":
            raise ValueError(f"scripted player {self.spec!r} plays only negotiation, not {observation.game_id!r}")
        rng = sample_rng(self.spec, observation.sample_key)
        return Decision(action=traders.offer_spam_move(observation.legal_actions, rng))


TRADERS = (GreedyTrader, FairTrader, NeverTrader, ResponderTrader, AcceptAllTrader, OfferSpammer)
SCRIPTED: dict[str, type[ScriptedPlayer]] = {
    cls.spec: cls for cls in (RandomPlayer, FirstPlayer, OraclePlayer, StallerPlayer, SpammerPlayer, *TRADERS)
}


def make_scripted(name: str) -> ScriptedPlayer:
    """A scripted player by name (or ``eps-oracle:EPS``); a ValueError lists the known names otherwise."""
    if name.startswith(EPS_ORACLE):
        return EpsOraclePlayer(parse_epsilon(name), name)
    try:
        return SCRIPTED[name]()
    except KeyError:
        raise ValueError(f"unknown scripted player {name!r}; known: {sorted(SCRIPTED)} "
                         f"or {EPS_ORACLE_FORM}") from None
