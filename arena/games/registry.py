"""The game registry: ids, their TextArena envs and variants; making, replaying and inspecting games."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.core.errors import ArenaError
from arena.games import kuhn, leduc, liarsdice, negotiation, nim, tictactoe, ultimatum
from arena.games.anyenv import AnyEnvGame
from arena.games.base import Game, GameResult
from arena.games.spiral_negotiation import ENV_ID as SPIRAL_NEGOTIATION_ENV_ID
from arena.games.variants import ARENA_ALIASES, TEXTARENA_PREFIX, check_game_id, is_any_env, resolve_env_id


@dataclass(frozen=True)
class GameSpec:
    """A game id, the TextArena env that backs it, its default variant, and the class that plays it."""

    game_id: str
    env_id: str
    game_class: type[Game]
    description: str
    overrides: Mapping[str, Any] = field(default_factory=dict)  # ``ta.make`` overrides beyond the variant's

    @property
    def default_variant(self) -> dict[str, Any]:
        """The variant used when none is given."""
        return self.game_class.validate_variant({})

    def validate_variant(self, variant: Mapping[str, Any] | None) -> dict[str, Any]:
        """The complete variant (defaults filled in); a ValueError names an unknown key or a bad value."""
        return self.game_class.validate_variant({} if variant is None else variant)

    def env_kwargs(self, variant: Mapping[str, Any] | None) -> dict[str, Any]:
        """``ta.make`` overrides for a variant."""
        return {**self.game_class.env_kwargs(self.validate_variant(variant)), **self.overrides}


GAMES: dict[str, GameSpec] = {
    "kuhn": GameSpec("kuhn", kuhn.ENV_ID, kuhn.KuhnGame, "standard Kuhn poker (ante 1, bet 1); variant: rounds"),
    "tictactoe": GameSpec(
        "tictactoe", tictactoe.ENV_ID, tictactoe.TicTacToeGame, "TicTacToe; variant: opening (random moves first)"
    ),
    "liarsdice": GameSpec(
        "liarsdice", liarsdice.ENV_ID, liarsdice.LiarsDiceGame, "two-player Liar's Dice; variant: dice"
    ),
    "nim": GameSpec(
        "nim", nim.ENV_ID, nim.NimGame, "Nim, last object wins; variant: piles, opening (random moves first)"
    ),
    "leduc": GameSpec(
        "leduc", leduc.ENV_ID, leduc.LeducGame, "Leduc Hold'em, OpenSpiel's standard rules; variant: rounds"
    ),
    "negotiation": GameSpec(
        "negotiation", negotiation.ENV_ID, negotiation.NegotiationGame,
        "TextArena's SimpleNegotiation (private values, offers, accept/deny); variant: turns, units",
    ),
    "ultimatum": GameSpec(
        "ultimatum", ultimatum.ENV_ID, ultimatum.UltimatumGame,
        "TextArena's IteratedUltimatumGame (offers of a pool, accept/reject); variant: pool, rounds, alternate",
    ),
}


# Other versions' ids that an arena game plays (variants.ARENA_ALIASES): the spec's game_id is the arena game's, so
# the game, its observations and its transcript are that game's with the alias's forced variant keys.
ALIAS_SPECS: dict[str, GameSpec] = {
    "SimpleNegotiation-v1": GameSpec(
        "negotiation", SPIRAL_NEGOTIATION_ENV_ID, negotiation.SpiralNegotiationGame,
        "SPIRAL's SimpleNegotiation-v1 (Wood and Gold, fixed opposite values): negotiation with spiral: true",
    ),
}


def get_spec(game_id: str) -> GameSpec:
    """The registered spec for ``game_id`` (``textarena:ENV_ID``: that env, for players that write their move; an
    ARENA_ALIASES id: that arena game); a ValueError lists the known ids otherwise."""
    if is_any_env(game_id) and game_id[len(TEXTARENA_PREFIX):] in ARENA_ALIASES:
        return ALIAS_SPECS[game_id[len(TEXTARENA_PREFIX):]]
    if is_any_env(game_id):
        env_id, overrides = resolve_env_id(game_id[len(TEXTARENA_PREFIX):])
        return GameSpec(game_id, env_id, AnyEnvGame,
                        f"TextArena's {env_id} under its own rules (frontier and thinking players)", overrides)
    if isinstance(game_id, str) and game_id in GAMES:
        return GAMES[game_id]
    check_game_id(game_id)  # the one-line error: the known ids, and a hint for a bare TextArena id
    raise ArenaError(f"game {game_id!r} is validated but not registered: add it to arena.games.registry.GAMES")


def make_game(game_id: str, seed: int, variant: Mapping[str, Any] | None = None) -> Game:
    """A fresh game (its own env and RNG stream) for ``game_id`` with ``seed`` and a validated variant."""
    spec = get_spec(game_id)
    full = spec.validate_variant(variant)
    env_kwargs = {**spec.game_class.env_kwargs(full), **spec.overrides}
    return spec.game_class(spec.game_id, spec.env_id, seed, full, env_kwargs)


def replay(game_id: str, variant: Mapping[str, Any] | None, seed: int, actions: Sequence[str]) -> GameResult:
    """Play ``actions`` from the start and return the result; they must end the game exactly."""
    game = make_game(game_id, seed, variant)
    for index, action in enumerate(actions):
        if game.done:
            raise ValueError(
                f"{game_id} seed {seed}: the game ended after {index} of {len(actions)} actions; "
                f"drop the extra actions {list(actions[index:])!r}"
            )
        game.step(action)
    if not game.done:
        raise ValueError(f"{game_id} seed {seed}: {len(actions)} actions leave the game unfinished")
    return game.result()


def legal_actions(game: Game) -> tuple[str, ...]:
    """The exact action strings the current player may submit (derived from the env's game state)."""
    return game.observation().legal_actions
