"""Configs of the play stages: base-model rollout shards (``shards:``) and the reward audit (``probe:``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.core.config import require
from arena.games.variants import GAME_IDS, check_game_id
from arena.players.config import OMIT, sampling_config, think_field


@dataclass(frozen=True)
class ShardsConfig:
    """params.yaml ``shards:`` section: base-model rollout shards against a scripted opponent."""

    game: str = "kuhn"
    variant: Mapping[str, Any] = field(default_factory=dict)
    players: tuple[str, ...] = ("mlx:artifacts/models/base", "random")
    shards: tuple[int, ...] = (0, 1)
    games_per_shard: int = 256
    view: str = "compact"
    temperature: float = 1.0
    enable_thinking: bool = False
    max_batch_tokens: int = 65536  # tokens a scoring pass may hold (player.max_batch_tokens)
    think: Mapping[str, Any] = think_field()  # the local player's reasoning (players.config.ThinkConfig; {}: none)
    store_tokens: int = field(default=0, metadata=OMIT)  # the cross-turn store's tokens (player.store_tokens)
    store_dtype: str = field(default="pass", metadata=OMIT)  # and its dtype (player.store_dtype)

    def __post_init__(self) -> None:
        check_game_id(self.game)
        require(len(self.players) == 2, "shards.players", list(self.players), "must list exactly two player specs")
        require(self.games_per_shard >= 1, "shards.games_per_shard", self.games_per_shard, "must be >= 1")
        require(len(set(self.shards)) == len(self.shards) and all(s >= 0 for s in self.shards),
                "shards.shards", list(self.shards), "must be distinct non-negative shard numbers")
        sampling_config(self)


@dataclass(frozen=True)
class ProbeConfig:
    """params.yaml ``probe:`` section."""

    games: tuple[str, ...] = ("kuhn", "tictactoe", "liarsdice", "nim")
    games_per_check: int = 400
    # Kuhn is judged in chips, whose per-round spread (~1.3) is far larger than the oracle's edge over
    # random (+1/9), so separating them at 95% takes thousands of games (they are cheap: ~1,800/s).
    kuhn_games_per_check: int = 4000
    seed: int = 5_000_000

    def __post_init__(self) -> None:
        for game in self.games:
            require(game in GAME_IDS, "probe.games", game, "expected one of " + ", ".join(GAME_IDS))
        require(self.games_per_check >= 20, "probe.games_per_check", self.games_per_check, "must be >= 20")
        require(self.kuhn_games_per_check >= 20, "probe.kuhn_games_per_check", self.kuhn_games_per_check,
                "must be >= 20")

    def games_for(self, game: str) -> int:
        return self.kuhn_games_per_check if game == "kuhn" else self.games_per_check

    def seed_range(self) -> range:
        """Every deal seed the audit plays: ``(games + 1) // 2`` deals from ``seed`` for its largest game."""
        most = max((self.games_for(game) for game in self.games), default=0)
        return range(self.seed, self.seed + (most + 1) // 2)
