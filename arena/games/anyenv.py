"""Any two-player TextArena env by id (``textarena:ENV_ID``), played under TextArena's own rules by generation players.

TextArena has no legal-action API, so such a game lists no legal actions: only players that write free text (frontier
endpoints, thinking local players) can play it, and TextArena's invalid-move rule judges every move (re-prompted
once, then a loss). The compact view is TextArena's full observation (there is no game-specific summary).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from arena.core.errors import ArenaError
from arena.games.base import Game, Observation
from arena.games.variants import TEXTARENA_PREFIX, any_env_variant


class AnyEnvGame(Game):
    """A TextArena env by id; no variant (the env id names TextArena's own variants, e.g. ``Chess-v0-long``)."""

    validate_variant = staticmethod(any_env_variant)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _start(self, env_kwargs: dict) -> Any:
        try:
            return super()._start(env_kwargs)
        except Exception as error:  # TextArena raises many kinds: unknown id, wrong player count, missing data
            raise ArenaError(f"game {TEXTARENA_PREFIX}{self.env_id} cannot start as a two-player TextArena game "
                             f"({type(error).__name__}: {str(error)[:200]}); see docs/textarena.md for the envs "
                             "that play") from None

    def observation(self) -> Observation:
        observation = super().observation()
        return replace(observation, compact=observation.text) if observation.compact != observation.text \
            else observation

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        return ""

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        return {}
