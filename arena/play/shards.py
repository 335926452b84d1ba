"""The `rollouts` stage: one shard of games between configured players, written atomically with its meta.json."""

from __future__ import annotations

from pathlib import Path

from arena.core.artifacts import atomic_dir
from arena.core.config import as_dict, require
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig, shard_seeds
from arena.play.config import ShardsConfig
from arena.play.distributed import Match, Seat, play_matches
from arena.play.match import duplicate_schedule
from arena.play.records import SHARD_FILE, write_shard
from arena.players.build import PlayerConfigs, player_configs


def _model_inputs(specs: tuple[str, ...]) -> dict[str, str]:
    return {spec: digest_path(spec[4:]) for spec in specs if spec.startswith("mlx:")}


def build_shard(config: ShardsConfig, seeds: SeedsConfig, shard: int, out_dir: str | Path,
                configs: PlayerConfigs | None = None) -> int:
    """Play shard ``shard``'s games (its own block of training seeds) and write ``out_dir``.

    ``configs`` are the players' configs (``player_configs(params, config)``); without them, those of a
    params file with no ``frontier:`` section. The games run where ``arena.play.distributed`` places them;
    the shard is the same bytes wherever that is.
    """
    require(shard in config.shards, "--shard", shard, f"must be one of shards.shards = {list(config.shards)}")
    block = shard_seeds(seeds, shard, config.games_per_shard)
    configs = configs or player_configs({}, config)
    seats = (Seat(config.players[0], configs), Seat(config.players[1], configs))
    schedule = tuple(duplicate_schedule(block, config.games_per_shard))
    records, = play_matches([Match(config.game, seats, schedule, config.variant)])
    with atomic_dir(out_dir) as tmp:
        count = write_shard(tmp / SHARD_FILE, records)
        write_meta(tmp, inputs=_model_inputs(config.players),
                   config={**as_dict(config), "shard": shard, "seeds": [block.start, block.stop]})
    return count
