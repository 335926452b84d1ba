"""Player specs: random, first, oracle, eps-oracle:EPS, staller, spammer, mlx:PATH, openai:MODEL@URL (make_player)."""

from __future__ import annotations

from arena.errors import ArenaError
from arena.players.base import Decision, Observation, Player

SPEC_HELP = "random, first, oracle, eps-oracle:EPS (EPS in [0, 1]), staller, spammer, mlx:PATH or openai:MODEL@BASE_URL"

__all__ = ["SPEC_HELP", "Decision", "Observation", "Player", "make_player"]


def make_player(spec: str, *, mlx_config=None, frontier_config=None, check: bool = True) -> Player:
    """Build the player a spec names; an unknown spec is an ArenaError listing the valid forms.

    ``check`` probes a frontier endpoint before any game starts, so an unreachable server is one clear
    error rather than a match of errored games.
    """
    if not isinstance(spec, str) or not spec:
        raise ArenaError(f"player spec {spec!r} is empty; expected {SPEC_HELP}")
    if spec.startswith("mlx:"):
        from arena.players.mlx import MLXPlayer

        return MLXPlayer(spec[len("mlx:"):], mlx_config)
    if spec.startswith("openai:"):
        from arena.players.frontier import FrontierPlayer, parse_spec

        model, base_url = parse_spec(spec)
        player = FrontierPlayer(model, base_url, frontier_config)
        if check:
            player.check_endpoint()
        return player
    from arena.players.scripted import EPS_ORACLE, SCRIPTED, make_scripted

    if spec in SCRIPTED:
        return make_scripted(spec)
    if spec.startswith(EPS_ORACLE):
        try:
            return make_scripted(spec)
        except ValueError as error:
            raise ArenaError(str(error)) from None
    raise ArenaError(f"unknown player spec {spec!r}; expected {SPEC_HELP}")
