"""The `rollouts` stage: one shard of games between configured players, written atomically with its meta.json."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.artifacts import atomic_dir
from arena.config import as_dict, require
from arena.games import get_spec
from arena.hashing import digest_path
from arena.match import duplicate_schedule, play_match
from arena.pins import write_meta
from arena.players import make_player
from arena.players.mlx import MLXPlayerConfig
from arena.rollouts import SHARD_FILE, write_shard
from arena.seeds import SeedsConfig


@dataclass(frozen=True)
class RolloutsConfig:
    """params.yaml ``rollouts:`` section."""

    game: str = "kuhn"
    variant: Mapping[str, Any] = field(default_factory=dict)
    players: tuple[str, ...] = ("mlx:artifacts/models/base", "random")
    shards: tuple[int, ...] = (0, 1)
    games_per_shard: int = 256
    view: str = "compact"
    temperature: float = 1.0

    def __post_init__(self) -> None:
        get_spec(self.game)
        require(len(self.players) == 2, "rollouts.players", list(self.players), "must list exactly two player specs")
        require(self.games_per_shard >= 1, "rollouts.games_per_shard", self.games_per_shard, "must be >= 1")
        require(len(set(self.shards)) == len(self.shards) and all(s >= 0 for s in self.shards),
                "rollouts.shards", list(self.shards), "must be distinct non-negative shard numbers")
        MLXPlayerConfig(view=self.view, temperature=self.temperature)


def _model_inputs(specs: tuple[str, ...]) -> dict[str, str]:
    return {spec: digest_path(spec[4:]) for spec in specs if spec.startswith("mlx:")}


def build_shard(config: RolloutsConfig, seeds: SeedsConfig, shard: int, out_dir: str | Path,
                progress: bool = True) -> int:
    """Play shard ``shard``'s games (its own block of training seeds) and write ``out_dir``."""
    require(shard in config.shards, "--shard", shard, f"must be one of rollouts.shards = {list(config.shards)}")
    deals = (config.games_per_shard + 1) // 2
    block = seeds.train_block(shard * deals, deals, "rollouts.games_per_shard")
    mlx_config = MLXPlayerConfig(view=config.view, temperature=config.temperature)
    players = tuple(make_player(spec, mlx_config=mlx_config) for spec in config.players)
    records = play_match(config.game, players, duplicate_schedule(block, config.games_per_shard),
                         variant=config.variant, progress=progress)
    with atomic_dir(out_dir) as tmp:
        count = write_shard(tmp / SHARD_FILE, records)
        write_meta(tmp, inputs=_model_inputs(config.players),
                   config={**as_dict(config), "shard": shard, "seeds": [block.start, block.stop]})
    return count
