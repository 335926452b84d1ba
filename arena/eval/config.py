"""Configs of the evaluation stages: the conditions every score is measured under (``eval:``), per-round
evaluation (``roundeval:``) and the round robins' players (``baseline:``, ``tournament:``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import trueskill

from arena.core.config import ConfigError, require
from arena.core.hashing import digest_config
from arena.core.seeds import as_seed_range
from arena.games.variants import game_label
from arena.players.config import OMIT, sampling_config, think_field
from arena.players.specs import SCRIPTED_NAMES


@dataclass(frozen=True)
class GameEntry:
    """One game of the evaluation: a game id and its variant overrides."""

    game_id: str
    variant: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return game_label(self.game_id, self.variant)


def _game_entry(entry: Any, key: str) -> GameEntry:
    if isinstance(entry, str) and entry:
        return GameEntry(entry, {})
    if (
        isinstance(entry, Mapping)
        and isinstance(entry.get("id"), str)
        and entry["id"]
        and not set(entry) - {"id", "variant"}
    ):
        variant = entry.get("variant") or {}
        if isinstance(variant, Mapping):
            return GameEntry(entry["id"], dict(variant))
    raise ConfigError(f"{key} = {entry!r} is invalid: a game id, or {{id: <game id>, variant: {{<overrides>}}}}")


_RATING_KEYS = ("mu", "sigma", "beta", "tau", "draw_probability")


@dataclass(frozen=True)
class EvalConfig:
    """The conditions scores are measured under: games, held-out seeds, TrueSkill parameters.

    The players are deliberately not part of it: they are the subjects, recorded in each card, so
    cards from tournaments with different player sets but the same conditions share one hash and
    can be combined into one leaderboard. TrueSkill defaults are the package's (mu 25, sigma 25/3,
    beta 25/6, tau 25/300, draw probability 0.10).
    """

    games: tuple[GameEntry, ...]
    seeds: range
    mu: float = trueskill.MU
    sigma: float = trueskill.SIGMA
    beta: float = trueskill.BETA
    tau: float = trueskill.TAU
    draw_probability: float = trueskill.DRAW_PROBABILITY

    def __post_init__(self) -> None:
        if not self.games:
            raise ConfigError("eval.games is empty: list at least one game, e.g. [{id: kuhn, variant: {}}]")
        labels = [game.label for game in self.games]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ConfigError(f"eval.games lists {duplicates} twice; list each (game, variant) once")
        as_seed_range(self.seeds, "eval.seeds")
        for name in _RATING_KEYS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"eval.trueskill.{name} = {value!r} must be a finite number")
        for name, ok, allowed in (
            ("sigma", self.sigma > 0, "> 0"),
            ("beta", self.beta > 0, "> 0"),
            ("tau", self.tau >= 0, ">= 0"),
            ("draw_probability", 0 < self.draw_probability < 1, "strictly between 0 and 1 (these games can draw)"),
        ):
            if not ok:
                raise ConfigError(f"eval.trueskill.{name} = {getattr(self, name)!r} is invalid: must be {allowed}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], section: str = "eval") -> EvalConfig:
        """Parse ``{games: [id | {id, variant}], seeds: {start, stop} | [start, stop], trueskill?: {...}}``.

        ``section`` only names keys in error messages (``eval.games[1].variant``).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{section} must be a mapping with games, seeds and optional trueskill, got {data!r}")
        unknown = sorted(set(data) - {"games", "seeds", "trueskill"})
        if unknown:
            raise ConfigError(f"unknown keys in {section}: {', '.join(f'{section}.{key}' for key in unknown)}; "
                              "allowed: games, seeds, trueskill")
        for key in ("games", "seeds"):
            if key not in data:
                raise ConfigError(f"missing required key {section}.{key}")
        if isinstance(data["games"], (str, Mapping)) or not isinstance(data["games"], Sequence):
            raise ConfigError(f"{section}.games = {data['games']!r} must be a list of games")
        games = tuple(_game_entry(entry, f"{section}.games[{index}]") for index, entry in enumerate(data["games"]))
        rating = data.get("trueskill") or {}
        if not isinstance(rating, Mapping) or set(rating) - set(_RATING_KEYS):
            raise ConfigError(
                f"{section}.trueskill = {rating!r} is invalid: a mapping with keys from {', '.join(_RATING_KEYS)}"
            )
        return cls(games, as_seed_range(data["seeds"], f"{section}.seeds"), **rating)

    def to_dict(self) -> dict[str, Any]:
        """The canonical form that is hashed and stored in every card (``from_dict`` reads it back)."""
        return {
            "games": [{"id": game.game_id, "variant": dict(game.variant)} for game in self.games],
            "seeds": {"start": self.seeds.start, "stop": self.seeds.stop},
            "trueskill": {name: float(getattr(self, name)) for name in _RATING_KEYS},
        }

    def digest(self) -> str:
        """``arena.core.hashing.digest_config`` of the canonical form."""
        return digest_config(self.to_dict())

    def trueskill_env(self) -> trueskill.TrueSkill:
        """A private TrueSkill environment (never the module-global one)."""
        return trueskill.TrueSkill(
            mu=self.mu, sigma=self.sigma, beta=self.beta, tau=self.tau, draw_probability=self.draw_probability
        )


@dataclass(frozen=True)
class RoundEvalConfig:
    """params.yaml ``roundeval:`` section."""

    opponents: tuple[str, ...] = ("random", "oracle")
    games: int = 400
    view: str = "compact"
    temperature: float = 1.0
    enable_thinking: bool = False
    max_batch_tokens: int = 65536  # tokens a scoring pass may hold (player.max_batch_tokens)
    think: Mapping[str, Any] = think_field()  # the local player's reasoning (players.config.ThinkConfig; {}: none)
    store_tokens: int = field(default=0, metadata=OMIT)  # the cross-turn store's tokens (player.store_tokens)
    store_dtype: str = field(default="pass", metadata=OMIT)  # and its dtype (player.store_dtype)

    def __post_init__(self) -> None:
        for spec in self.opponents:
            require(spec in SCRIPTED_NAMES, "roundeval.opponents", spec,
                    "fixed external baselines must be scripted: " + ", ".join(SCRIPTED_NAMES))
        require(self.games >= 2, "roundeval.games", self.games, "must be >= 2")
        sampling_config(self)


@dataclass(frozen=True)
class TournamentConfig:
    """params.yaml ``baseline:`` / ``tournament:`` sections: who plays, and how model players sample."""

    players: tuple[str, ...] = ("mlx:artifacts/models/base", "random", "first", "oracle")
    frontier: tuple[str, ...] = ()
    view: str = "compact"
    temperature: float = 1.0
    enable_thinking: bool = False
    max_batch_tokens: int = 65536  # tokens a scoring pass may hold (player.max_batch_tokens)
    think: Mapping[str, Any] = think_field()  # the local player's reasoning (players.config.ThinkConfig; {}: none)
    store_tokens: int = field(default=0, metadata=OMIT)  # the cross-turn store's tokens (player.store_tokens)
    store_dtype: str = field(default="pass", metadata=OMIT)  # and its dtype (player.store_dtype)

    def __post_init__(self) -> None:
        for spec in self.frontier:
            require(spec.startswith("openai:"), "frontier", spec, "each entry must be openai:MODEL@BASE_URL")
        sampling_config(self)

    @property
    def all_players(self) -> tuple[str, ...]:
        return self.players + self.frontier
