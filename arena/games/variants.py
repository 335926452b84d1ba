"""Game ids and their variants, validated without loading any game: what params checks need, and nothing more."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arena.core.errors import ArenaError


def reject_unknown_keys(game_id: str, variant: Mapping[str, Any], allowed: Mapping[str, Any]) -> None:
    """Raise an ArenaError naming any variant key the game does not have."""
    if not isinstance(variant, Mapping):
        raise TypeError(f"{game_id} variant must be a mapping, got {type(variant).__name__}: {variant!r}")
    unknown = sorted(set(variant) - set(allowed))
    if unknown:
        raise ArenaError(f"unknown {game_id} variant key(s) {unknown}; allowed keys: {sorted(allowed)}")


def require_int(game_id: str, key: str, value: Any, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, or an ArenaError naming the key and value."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ArenaError(f"{game_id} variant {key!r} must be an int >= {minimum}, got {value!r}")
    return value


# The match runner stops (and errors) a game still running after this many actions: every variant must end within it.
MAX_ACTIONS = 400


def _liarsdice_most(dice: int) -> int:
    """Liar's Dice's longest game: 2 * dice - 1 rounds, N dice in play allowing N + 5 rising bids and a call."""
    return sum(n + 6 for n in range(2, 2 * dice + 1))


def max_actions(game_id: str, variant: Mapping[str, Any]) -> int:
    """The most actions a game of this (complete) variant can take when every move is legal."""
    if game_id == "kuhn":
        return 3 * variant["rounds"]  # check, bet, call
    if game_id == "leduc":
        return 8 * variant["rounds"]  # two betting rounds of check, raise, raise, call
    if game_id == "liarsdice":
        return _liarsdice_most(variant["dice"])
    if game_id == "nim":
        return sum(variant["piles"])  # each move takes at least one object
    if game_id == "ultimatum":
        return 2 * variant["rounds"]  # an offer and an answer a round
    return 9


def require_within_cap(game_id: str, key: str, variant: Mapping[str, Any], bound: str) -> None:
    """An ArenaError, in one line, when a game of ``variant`` could outlast the match runner's action cap."""
    most = max_actions(game_id, variant)
    if most > MAX_ACTIONS:
        value = variant[key] if not isinstance(variant[key], list) or len(variant[key]) <= 8 else \
            f"{len(variant[key])} piles"
        raise ArenaError(f"{game_id} variant {key!r} = {value!r} lets a game run to {most} actions, past the match "
                         f"runner's {MAX_ACTIONS}-action cap (a game stopped there is errored); use {bound}")


# The verifiable puzzle kinds (arena.games.puzzles), listed here so params checks need not load the solvers.
PUZZLE_KINDS = ("nim", "tictactoe")

KUHN_DEFAULTS: Mapping[str, Any] = {"rounds": 1}
LEDUC_DEFAULTS: Mapping[str, Any] = {"rounds": 1}
LIARSDICE_DEFAULTS: Mapping[str, Any] = {"dice": 3}
NIM_DEFAULTS: Mapping[str, Any] = {"piles": [3, 4, 5], "opening": 0}
TICTACTOE_DEFAULTS: Mapping[str, Any] = {"opening": 0}
NEGOTIATION_DEFAULTS: Mapping[str, Any] = {"turns": 10, "units": 3}
# The most of one resource an offer's side may name: 5 keeps the listed offers at 5 x 4 x 5 x 5 = 500.
NEGOTIATION_MAX_UNITS = 5
# TextArena's IteratedUltimatumGame-v0: a $50 pool, 10 turns (5 rounds), the same proposer every round.
ULTIMATUM_DEFAULTS: Mapping[str, Any] = {"pool": 50, "rounds": 5, "alternate": False}
ULTIMATUM_MAX_POOL = 100
# A game that ends in the opening teaches nothing; 8 moves leave the player one cell, so 8 is the most there is.
TICTACTOE_MAX_OPENING = 8
# Variant keys that change only where training games start, never the rules (see evaluation_variant).
START_KEYS: Mapping[str, tuple[str, ...]] = {"tictactoe": ("opening",), "nim": ("opening",)}


def kuhn_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """Kuhn: ``rounds`` (hands per game, default 1)."""
    reject_unknown_keys("kuhn", variant, KUHN_DEFAULTS)
    full = {**KUHN_DEFAULTS, **variant}
    checked = {"rounds": require_int("kuhn", "rounds", full["rounds"], 1)}
    require_within_cap("kuhn", "rounds", checked, f"rounds <= {MAX_ACTIONS // 3}")
    return checked


def leduc_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """Leduc Hold'em: ``rounds`` (hands per game, default 1)."""
    reject_unknown_keys("leduc", variant, LEDUC_DEFAULTS)
    full = {**LEDUC_DEFAULTS, **variant}
    checked = {"rounds": require_int("leduc", "rounds", full["rounds"], 1)}
    require_within_cap("leduc", "rounds", checked, f"rounds <= {MAX_ACTIONS // 8}")
    return checked


def tictactoe_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """TicTacToe: ``opening`` (default 0), a training start distribution: each game first plays a number of
    uniformly random moves, uniform in 0..opening, none ending the game, drawn from its seed (exploring starts). The
    canonical form omits 0, so the standard game keeps its one identity (and its hashes)."""
    reject_unknown_keys("tictactoe", variant, TICTACTOE_DEFAULTS)
    opening = variant.get("opening", 0)
    if isinstance(opening, bool) or not isinstance(opening, int) or not 0 <= opening <= TICTACTOE_MAX_OPENING:
        raise ArenaError(f"tictactoe variant 'opening' (random moves before play) must be an int in "
                         f"[0, {TICTACTOE_MAX_OPENING}], got {opening!r}")
    return {"opening": opening} if opening else {}


def evaluation_variant(game_id: str, variant: Mapping[str, Any]) -> dict[str, Any]:
    """``variant`` without the keys that only move where training games start: evaluations play the game itself."""
    return {key: value for key, value in variant.items() if key not in START_KEYS.get(game_id, ())}


def liarsdice_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """Liar's Dice: ``dice`` per player at the start (default 3)."""
    reject_unknown_keys("liarsdice", variant, LIARSDICE_DEFAULTS)
    full = {**LIARSDICE_DEFAULTS, **variant}
    checked = {"dice": require_int("liarsdice", "dice", full["dice"], 1)}
    most = max(d for d in range(1, MAX_ACTIONS) if _liarsdice_most(d) <= MAX_ACTIONS)
    require_within_cap("liarsdice", "dice", checked, f"dice <= {most}")
    return checked


def nim_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """Nim: ``piles``, a non-empty list of pile sizes, each >= 1 (TextArena's default [3, 4, 5]); ``opening``
    (default 0), TicTacToe's training start distribution: up to that many random moves first, none taking the last
    object, so at most one object fewer than the piles hold. The canonical form omits 0."""
    reject_unknown_keys("nim", variant, NIM_DEFAULTS)
    piles = variant.get("piles", NIM_DEFAULTS["piles"])
    if isinstance(piles, (str, bytes)) or not isinstance(piles, Sequence) or len(piles) == 0:
        raise ArenaError(f"nim variant 'piles' must be a non-empty list of ints >= 1, got {piles!r}")
    piles = [require_int("nim", "piles", size, 1) for size in piles]
    require_within_cap("nim", "piles", {"piles": piles}, f"piles holding {MAX_ACTIONS} objects or fewer in all")
    opening, most = variant.get("opening", 0), sum(piles) - 1
    if isinstance(opening, bool) or not isinstance(opening, int) or not 0 <= opening <= most:
        raise ArenaError(f"nim variant 'opening' (random moves before play) must be an int in [0, {most}] for piles "
                         f"{piles} (an opening never takes the last object), got {opening!r}")
    return {"piles": piles, **({"opening": opening} if opening else {})}


def negotiation_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """SimpleNegotiation: ``turns`` (TextArena's ``max_turns``, default 10: the game plays turns + 1 moves),
    ``units`` (the most of one resource an offer's side names in the listed legal offers, 1..5, default 3) and
    ``spiral`` (default false: true plays SPIRAL's SimpleNegotiation-v1, Wood and Gold at fixed opposite values, where
    the game plays ``turns`` moves; arena.games.spiral_negotiation). The canonical form omits ``spiral: false``, so the
    standard game keeps its one identity (and its hashes)."""
    reject_unknown_keys("negotiation", variant, {**NEGOTIATION_DEFAULTS, "spiral": False})
    full = {**NEGOTIATION_DEFAULTS, **variant}
    units = full["units"]
    if isinstance(units, bool) or not isinstance(units, int) or not 1 <= units <= NEGOTIATION_MAX_UNITS:
        raise ArenaError(f"negotiation variant 'units' (most of one resource per offer side) must be an int in "
                         f"[1, {NEGOTIATION_MAX_UNITS}], got {units!r}")
    spiral = full.get("spiral", False)
    if not isinstance(spiral, bool):
        raise ArenaError(f"negotiation variant 'spiral' (SPIRAL's SimpleNegotiation-v1 rules) must be true or false, "
                         f"got {spiral!r}")
    checked = {"turns": require_int("negotiation", "turns", full["turns"], 1), "units": units}
    return {**checked, "spiral": True} if spiral else checked


# Games whose listed legal actions are a grammar of choices (a move is a path of short choices: accept, deny or
# offer, then each count and resource; ultimatum's accept, reject or an offer's digits): a local model scores each
# token against the tokens the legal actions continue with at that point only (arena.players.batching.ScoringBatch),
# so a long offer is not outscored by a short [Deny] merely for its length. Other games' actions are scored as whole
# strings (their bytes unchanged).
CHOICE_SCORED = frozenset({"negotiation", "ultimatum"})


def scored_by_choice(game_id: str) -> bool:
    """Whether a local model scores ``game_id``'s legal actions choice by choice (see CHOICE_SCORED)."""
    return game_id in CHOICE_SCORED


def ultimatum_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """The iterated ultimatum game: ``pool`` (dollars split each round, 1..100, default 50), ``rounds`` (default 5)
    and ``alternate`` (the responder proposes next round; default false: player 0 proposes every round)."""
    reject_unknown_keys("ultimatum", variant, ULTIMATUM_DEFAULTS)
    full = {**ULTIMATUM_DEFAULTS, **variant}
    pool = require_int("ultimatum", "pool", full["pool"], 1)
    if pool > ULTIMATUM_MAX_POOL:
        raise ArenaError(f"ultimatum variant 'pool' lists {pool + 1} offers, more than a model should score at each "
                         f"decision: use a pool of at most {ULTIMATUM_MAX_POOL}")
    if not isinstance(full["alternate"], bool):
        raise ArenaError(f"ultimatum variant 'alternate' must be true or false, got {full['alternate']!r}")
    checked = {"pool": pool, "rounds": require_int("ultimatum", "rounds", full["rounds"], 1),
               "alternate": full["alternate"]}
    require_within_cap("ultimatum", "rounds", checked, f"rounds <= {MAX_ACTIONS // 2}")
    return checked


# ``textarena:ENV_ID`` names any two-player TextArena env, played by generation players only (arena.games.anyenv):
# frontier players and thinking local players.
TEXTARENA_PREFIX = "textarena:"
_ENV_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./-]*$")


def any_env_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
    """A ``textarena:ENV_ID`` game takes no variant keys: the env id names TextArena's own variants."""
    reject_unknown_keys("textarena", variant, {})
    return {}


VARIANTS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "kuhn": kuhn_variant, "tictactoe": tictactoe_variant, "liarsdice": liarsdice_variant, "nim": nim_variant,
    "leduc": leduc_variant, "negotiation": negotiation_variant, "ultimatum": ultimatum_variant,
}
GAME_IDS: tuple[str, ...] = tuple(VARIANTS)


def is_any_env(game_id: Any) -> bool:
    """Whether ``game_id`` is a well-formed ``textarena:ENV_ID``."""
    return (isinstance(game_id, str) and game_id.startswith(TEXTARENA_PREFIX)
            and _ENV_ID_RE.match(game_id[len(TEXTARENA_PREFIX):]) is not None)


# TextArena ids of other versions -> (the installed 0.7.4 id that plays them, ``ta.make`` overrides, what differs),
# or (None, {}, why none does): docs/textarena.md's version table, from TextArena 0.6.4's registry (its wheel) and
# SPIRAL's own envs (spiral-rl/spiral spiral/envs/, registered on top of 0.6.4), read against 0.7.4's.
_SPIRAL = "SPIRAL's own env (spiral/envs, on TextArena 0.6.4)"
TEXTARENA_ALIASES: dict[str, tuple[str | None, dict[str, Any], str]] = {
    "KuhnPoker-v1": ("KuhnPoker-v0-short", {}, f"{_SPIRAL}: 5 rounds, ante 1, bets move no chips, the same moves "
                     "and round payoffs as 0.7.4's; SPIRAL's game winner is the last round's winner, 0.7.4's the "
                     "player with more chips"),
    "SimpleNegotiation-v1": ("arena-SimpleNegotiation-v1", {}, f"{_SPIRAL} is another game than 0.7.4's "
                             "SimpleNegotiation-v0: 2 resources (Wood, Gold), both players start with 10 of each at "
                             "fixed opposite values (5/15, 15/5), 10 moves. arena ports it "
                             "(arena.games.spiral_negotiation) and plays it as negotiation with spiral: true, legal "
                             "actions listed (ARENA_ALIASES)"),
    "LiarsDice-v1": (None, {}, f"{_SPIRAL}, not checked against 0.7.4's rules; nearest: textarena:LiarsDice-v0"),
    "PigDice-v1": (None, {}, f"{_SPIRAL} (target 50, 50 turns), not checked against 0.7.4's rules; nearest: "
                   "textarena:PigDice-v0-50"),
    "TruthAndDeception-v1": (None, {}, f"{_SPIRAL} (6 turns) counts its turns differently from 0.7.4's; nearest: "
                             "textarena:TruthAndDeception-v0"),
    "KuhnPoker-v0-blind": ("KuhnPoker-v0", {"max_rounds": 10}, "0.6.4's id (10 rounds), gone in 0.7.4"),
    "KuhnPoker-v0-extended": ("KuhnPoker-v0", {"max_rounds": 30}, "0.6.4's id (30 rounds), gone in 0.7.4"),
    "KuhnPoker-v0-highstakes": (None, {}, "0.6.4's id (ante 5): 0.7.4's KuhnPoker has no ante setting"),
    "Nim-v0-small": ("Nim-v0", {"piles": [1, 2, 3]}, "0.6.4's id (piles 1, 2, 3), gone in 0.7.4"),
    "SimpleTak-v0-extra-large": ("SimpleTak-v0", {"board_size": 8}, "0.6.4's id (8x8), gone in 0.7.4"),
    "Surround-v0-huge": ("Surround-v0-large", {}, "0.6.4's id: 15x15, 250 turns, 0.7.4's Surround-v0-large"),
    "RandomizedTicTacToe-v0": (None, {}, "0.6.4's env, removed from 0.7.4"),
    "BlindAuction-v0": (None, {}, "0.6.4's env, removed from 0.7.4 (0.7.4's SimpleBlindAuction is another env)"),
    "Negotiation-v0": (None, {}, "0.6.4's multi-player Negotiation env, removed from 0.7.4"),
}


# Other versions' ids that an arena game plays with its legal actions listed: id -> (arena game, variant keys it
# forces). ``textarena:ID`` then plays exactly that game (the same moves, rewards and transcript digest).
ARENA_ALIASES: dict[str, tuple[str, dict[str, Any]]] = {"SimpleNegotiation-v1": ("negotiation", {"spiral": True})}


def lists_no_actions(game_id: str) -> bool:
    """Whether ``game_id`` lists no legal actions: a ``textarena:ENV_ID`` game that no arena game plays."""
    return is_any_env(game_id) and game_id[len(TEXTARENA_PREFIX):] not in ARENA_ALIASES


def resolve_env_id(env_id: str) -> tuple[str, dict[str, Any]]:
    """The installed TextArena id and ``ta.make`` overrides that play ``env_id`` (itself, unless it is another
    version's id in TEXTARENA_ALIASES); an ArenaError for another version's id that no installed env plays."""
    target, overrides, why = TEXTARENA_ALIASES.get(env_id, (env_id, {}, ""))
    if target is None:
        raise ArenaError(f"game {TEXTARENA_PREFIX}{env_id} is not played by TextArena 0.7.4: {why} "
                         "(docs/textarena.md, other versions' ids)")
    return target, dict(overrides)


def check_game_id(game_id: Any) -> str:
    """``game_id`` if arena has that game (or it is ``textarena:ENV_ID``); an ArenaError listing the known ids
    otherwise."""
    if is_any_env(game_id):
        resolve_env_id(game_id[len(TEXTARENA_PREFIX):])
        return game_id
    if not isinstance(game_id, str) or game_id not in VARIANTS:
        hint = (f" ({game_id!r} looks like a TextArena id: write {TEXTARENA_PREFIX}{game_id})"
                if isinstance(game_id, str) and re.search(r"-v\d", game_id) else "")
        raise ArenaError(f"unknown game id {game_id!r}; known games: {sorted(VARIANTS)}, or {TEXTARENA_PREFIX}ENV_ID "
                         f"for any two-player TextArena env (frontier and thinking players){hint}")
    return game_id


def validate_variant(game_id: str, variant: Mapping[str, Any] | None) -> dict[str, Any]:
    """The complete variant of ``game_id`` (defaults filled in); an ArenaError names a bad key or value."""
    if is_any_env(game_id):
        alias = ARENA_ALIASES.get(game_id[len(TEXTARENA_PREFIX):])
        if alias is not None:
            return VARIANTS[alias[0]]({**({} if variant is None else variant), **alias[1]})
        return any_env_variant({} if variant is None else variant)
    return VARIANTS[check_game_id(game_id)]({} if variant is None else variant)


def game_label(game_id: str, variant: Mapping[str, Any]) -> str:
    """``kuhn`` for the default variant, ``kuhn[rounds=5]`` otherwise: unique per (game, variant)."""
    if not variant:
        return game_id
    inner = ",".join(f"{key}={json.dumps(variant[key], sort_keys=True)}" for key in sorted(variant))
    return f"{game_id}[{inner}]"
