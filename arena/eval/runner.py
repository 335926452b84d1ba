"""Tournaments over real players: every pairing played at once (in this process or on Ray), then scored."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.errors import PlayerLoadError
from arena.eval.scorecards import write_scorecards
from arena.eval.tournament import pairings, run_tournament
from arena.play.distributed import LoadFailure, Match, Seat, play_all
from arena.play.match import Slot
from arena.players.build import PlayerConfigs, player_configs


def _key(game_id: str, variant: Mapping[str, Any], spec_a: str, spec_b: str, seeds: Sequence[int]) -> str:
    return json.dumps([game_id, variant, spec_a, spec_b, list(seeds)], sort_keys=True)


class PlayedPairings:
    """Every pairing of a round robin, played as one batch of matches (each spec built once per worker).

    The first ``play`` call (after ``run_tournament`` has checked the players and seeds) plays them all;
    each call then hands back a pairing's records, or its player's PlayerLoadError. A pairing the round
    robin skips (a player already excluded) was played for nothing but changes no card.
    """

    def __init__(self, eval_config: EvalConfig, players: Sequence[str], configs: PlayerConfigs) -> None:
        self.eval_config, self.players, self.configs = eval_config, list(players), configs
        self._results: dict[str, list[dict[str, Any]] | LoadFailure] | None = None

    def _play_all(self) -> dict[str, list[dict[str, Any]] | LoadFailure]:
        seeds = list(self.eval_config.seeds)
        schedule = tuple(Slot(seed, k % 2) for k, seed in enumerate(seeds))
        jobs = pairings(self.eval_config, self.players)
        matches = [Match(game.game_id, (Seat(a, self.configs), Seat(b, self.configs)), schedule, dict(game.variant))
                   for a, b, game in jobs]
        return {_key(game.game_id, dict(game.variant), a, b, seeds): result
                for (a, b, game), result in zip(jobs, play_all(matches, label="tournament"), strict=True)}

    def play(self, game_id: str, variant: Mapping[str, Any], spec_a: str, spec_b: str,
             seeds: Sequence[int]) -> list[dict[str, Any]]:
        """One record per seed, ``spec_a`` in seat ``k % 2`` of game k (the tournament's contract)."""
        if self._results is None:
            self._results = self._play_all()
        result = self._results[_key(game_id, variant, spec_a, spec_b, seeds)]
        if isinstance(result, LoadFailure):
            raise PlayerLoadError(result.spec, result.reason)
        return result


def run_stage(eval_config: EvalConfig, config: TournamentConfig, reserved_seeds: Sequence[range],
              out_dir: str | Path, configs: PlayerConfigs | None = None) -> dict[str, str]:
    """Play the round robin and write its score cards (and the excluded players) to ``out_dir``.

    ``configs`` are the players' configs (``player_configs(params, config)``); without them, those of a
    params file with no ``frontier:`` section.
    """
    players = config.all_players
    played = PlayedPairings(eval_config, players, configs or player_configs({}, config))
    result = run_tournament(eval_config, players, played.play, reserved_seeds=reserved_seeds)
    write_scorecards(out_dir, result.cards, excluded=result.excluded)
    return result.excluded


def run_stage_serving(eval_config: EvalConfig, config: TournamentConfig, reserved_seeds: Sequence[range],
                      out_dir: str | Path, configs: PlayerConfigs, serve: str | Path, port: int) -> dict[str, str]:
    """``run_stage`` with the local model ``serve`` behind mlx_lm.server on ``port`` for its length: the endpoint its
    frontier specs name (``openai:SERVE@http://127.0.0.1:PORT/v1``). A replay that may make no call
    (``frontier.max_calls: 0``: every reply recorded in ``frontier.replies``) starts no server."""
    if configs.frontier.max_calls == 0:
        return run_stage(eval_config, config, reserved_seeds, out_dir, configs)
    from arena.players.localserver import served

    # The server's log is a by-product, not a result: kept in logs/ (git-ignored), never beside the cards.
    log = Path("logs") / f"{Path(out_dir).name}.server.log"
    log.parent.mkdir(exist_ok=True)
    with served(serve, port, log):
        return run_stage(eval_config, config, reserved_seeds, out_dir, configs)
