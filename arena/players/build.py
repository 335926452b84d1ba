"""Build the player a spec names (scripted, local MLX model or frontier endpoint), with the configs it is given."""

from __future__ import annotations

from arena.core.errors import ArenaError
from arena.players.base import Player
from arena.players.config import FrontierConfig, MLXPlayerConfig
from arena.players.specs import EPS_ORACLE, SCRIPTED_NAMES, SPEC_HELP, parse_spec


def make_player(spec: str, *, mlx_config: MLXPlayerConfig | None = None,
                frontier_config: FrontierConfig | None = None, check: bool = True) -> Player:
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
        from arena.players.frontier import FrontierPlayer

        model, base_url = parse_spec(spec)
        player = FrontierPlayer(model, base_url, frontier_config)
        if check:
            player.check_endpoint()
        return player
    from arena.players.scripted import make_scripted

    if spec in SCRIPTED_NAMES or spec.startswith(EPS_ORACLE):
        try:
            return make_scripted(spec)
        except ValueError as error:
            raise ArenaError(str(error)) from None
    raise ArenaError(f"unknown player spec {spec!r}; expected {SPEC_HELP}")
