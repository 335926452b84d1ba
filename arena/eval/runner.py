"""Tournaments over real players: load each spec once, play pairs with the match runner, write score cards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.errors import ArenaError
from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.errors import PlayerLoadError
from arena.eval.scorecards import write_scorecards
from arena.eval.tournament import run_tournament
from arena.play.match import Slot, play_match
from arena.players.base import Player
from arena.players.build import PlayerConfigs, player_configs


class PlayerCache:
    """Builds each player once per tournament, with ``configs``; a spec that cannot be built is a PlayerLoadError."""

    def __init__(self, configs: PlayerConfigs) -> None:
        self.configs = configs
        self._players: dict[str, Player] = {}

    def get(self, spec: str) -> Player:
        if spec not in self._players:
            try:
                self._players[spec] = self.configs.make(spec)
            except ArenaError as error:
                raise PlayerLoadError(spec, str(error)) from error
        return self._players[spec]

    def play(self, game_id: str, variant: Mapping[str, Any], spec_a: str, spec_b: str,
             seeds: Sequence[int]) -> list[dict[str, Any]]:
        """One record per seed, ``spec_a`` in seat ``k % 2`` of game k (the tournament's contract)."""
        players = (self.get(spec_a), self.get(spec_b))
        schedule = [Slot(seed, k % 2) for k, seed in enumerate(seeds)]
        return play_match(game_id, players, schedule, variant=variant)


def run_stage(eval_config: EvalConfig, config: TournamentConfig, reserved_seeds: Sequence[range],
              out_dir: str | Path, configs: PlayerConfigs | None = None) -> dict[str, str]:
    """Play the round robin and write its score cards (and the excluded players) to ``out_dir``.

    ``configs`` are the players' configs (``player_configs(params, config)``); without them, those of a
    params file with no ``frontier:`` section.
    """
    cache = PlayerCache(configs or player_configs({}, config))
    result = run_tournament(eval_config, config.all_players, cache.play, reserved_seeds=reserved_seeds)
    write_scorecards(out_dir, result.cards, excluded=result.excluded)
    return result.excluded
