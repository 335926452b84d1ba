"""Build the player a spec names (scripted, local MLX model or frontier endpoint), with the configs params give it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.core.config import load_section
from arena.core.errors import ArenaError
from arena.players.base import Player
from arena.players.config import FrontierConfig, MLXPlayerConfig, Sampling, sampling_config
from arena.players.specs import EPS_ORACLE, SCRIPTED_NAMES, SPEC_HELP, parse_spec


@dataclass(frozen=True)
class PlayerConfigs:
    """Every config a spec's player may need: how MLX models sample, how frontier endpoints are called."""

    mlx: MLXPlayerConfig = field(default_factory=MLXPlayerConfig)
    frontier: FrontierConfig = field(default_factory=FrontierConfig)

    def make(self, spec: str, *, check: bool = True) -> Player:
        """``make_player(spec)`` with these configs."""
        return make_player(spec, mlx_config=self.mlx, frontier_config=self.frontier, check=check)


def section_mlx_config(section: Sampling) -> MLXPlayerConfig:
    """The MLX player config a loaded params section gives: its ``view``, ``temperature`` and ``enable_thinking``."""
    return sampling_config(section)


def load_frontier_config(params: Mapping[str, Any]) -> FrontierConfig:
    """The parsed params' ``frontier:`` section as a FrontierConfig; its defaults when the section is absent."""
    return load_section(FrontierConfig, "frontier", params)


def player_configs(params: Mapping[str, Any], section: Sampling) -> PlayerConfigs:
    """The configs for the players ``section`` lists: its sampling, and the params' ``frontier:`` settings.

    Every place that builds players from specs listed in params.yaml takes its configs from here, so a
    ``frontier:`` section applies wherever a frontier player plays.
    """
    return PlayerConfigs(section_mlx_config(section), load_frontier_config(params))


def make_player(spec: str, *, mlx_config: MLXPlayerConfig | None = None,
                frontier_config: FrontierConfig | None = None, check: bool = True) -> Player:
    """Build the player a spec names; an unknown spec is an ArenaError listing the valid forms.

    ``check`` probes a frontier endpoint before any game starts, so an unreachable server is one clear
    error rather than a match of errored games; a player that may make no call (``max_calls: 0``, a replay
    from recorded replies) is not checked, so it plays with no server running.
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
        if check and player.config.max_calls > 0:
            player.check_endpoint()
        return player
    from arena.players.scripted import make_scripted

    if spec in SCRIPTED_NAMES or spec.startswith(EPS_ORACLE):
        try:
            return make_scripted(spec)
        except ValueError as error:
            raise ArenaError(str(error)) from None
    raise ArenaError(f"unknown player spec {spec!r}; expected {SPEC_HELP}")
