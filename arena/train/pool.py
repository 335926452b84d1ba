"""The opponent pool: frozen snapshots (by pin) plus fixed scripted opponents, and how opponents are drawn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.artifacts import atomic_dir, dump_json
from arena.core.config import as_dict
from arena.core.errors import ArenaError
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.players.config import MLXPlayerConfig
from arena.train.config import PoolConfig

POOL_FILE = "pool.json"


def _member(snapshot: str | Path, game: str, player_config: MLXPlayerConfig | None) -> dict[str, Any]:
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(snapshot, player_config)
    member: dict[str, Any] = {"spec": player.spec, "pin": player.pin()}
    # A thinking member's policy is an expectation over its reasoning, which one scoring pass cannot give: not
    # measured here (the round's evaluation estimates the snapshot's, arena.eval.thinkexact).
    if game == "kuhn" and (player_config is None or player_config.think is None):
        from arena.players.policy import model_policy

        member["kuhn_policy"] = model_policy(player)
    return member


def build_pool(previous: str | Path | None, snapshot: str | Path, config: PoolConfig, game: str,
               out_dir: str | Path, player_config: MLXPlayerConfig | None = None) -> dict[str, Any]:
    """pool@r: the previous pool's snapshots plus ``snapshot``, written as ``pool.json`` with its meta.

    ``player_config``: how the run prompts its models (the selfplay section's view, temperature and thinking
    switch); a Kuhn member's exact policy is measured through it, as the snapshot plays.
    """
    members = load_pool(previous)["members"] if previous else []
    members = [*members, _member(snapshot, game, player_config)]
    pool = {"members": members, "scripted": list(config.scripted), "config": as_dict(config), "game": game}
    with atomic_dir(out_dir) as tmp:
        (tmp / POOL_FILE).write_text(dump_json(pool))
        inputs = {"snapshot": digest_path(snapshot)}
        if previous:
            inputs["previous_pool"] = digest_path(previous)
        write_meta(tmp, inputs=inputs, config=as_dict(config))
    return pool


def load_pool(path: str | Path) -> dict[str, Any]:
    """Read a pool directory or pool.json."""
    path = Path(path)
    if path.is_dir():
        path = path / POOL_FILE
    if not path.exists():
        raise ArenaError(f"opponent pool not found: {path} (run the pool stages first: `dvc repro`)")
    return json.loads(path.read_text())


def sample_opponents(pool: dict[str, Any], count: int, seed: int | list[int]) -> list[str]:
    """One opponent spec per deal, drawn by the pool's sampling rule with its own RNG."""
    config = PoolConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in pool["config"].items()})
    members = [m["spec"] for m in pool["members"]]
    if config.window:
        members = members[-config.window:]
    if config.sampling == "latest":
        return [members[-1]] * count
    if config.sampling == "lagged":
        return [members[max(0, len(members) - 1 - config.lag)]] * count
    choices = members + list(config.scripted)
    rng = np.random.default_rng(seed)
    return [choices[i] for i in rng.integers(0, len(choices), size=count)]


def pool_average_policy(pool: dict[str, Any]) -> dict[str, float] | None:
    """The reach-weighted average Kuhn policy of the pool's snapshots (None for other games)."""
    from arena.games.kuhn_theory import average_policy

    policies = [m["kuhn_policy"] for m in pool["members"] if "kuhn_policy" in m]
    return average_policy(policies) if policies else None
