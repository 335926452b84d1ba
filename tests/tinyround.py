"""Test-only helpers: a tiny seeded model's snapshot 0, its pool and round 1's rollouts, where self-play tests start;
the same rounds built twice for byte-identity checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from arena.core.seeds import SeedsConfig
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig, PoolConfig, SelfPlayConfig
from arena.train.fuse import copy_snapshot
from arena.train.pool import build_pool
from arena.train.selfplay.rollouts import play_round

TINY = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 64,
        "vocab_size": 400}


def first_rollouts(root: Path, selfplay: SelfPlayConfig, branches: bool = False) -> Path:
    """``root``/base (the TINY model), snap0 (its copy), pool0 (latest: itself) and roll1 (round 1's rollouts,
    with their branch games where ``branches``); returns ``root``."""
    build_base(BaseConfig(**TINY), root / "base")
    copy_snapshot(root / "base", root / "snap0")
    build_pool(None, root / "snap0", PoolConfig(), "kuhn", root / "pool0")
    play_round(root / "snap0", root / "pool0", selfplay, SeedsConfig(), 1, root / "roll1", branches=branches)
    return root


def built_twice(tmp_path_factory, build: Callable[[Path], object]) -> list[Path]:
    """``build(Path("artifacts"))`` run twice from the same seeds, each in a directory of its own and from it as the
    working directory (relative paths, as dvc runs a stage: a record names its players' paths); both artifacts
    directories."""
    roots = [tmp_path_factory.mktemp(name) for name in ("a", "b")]
    with pytest.MonkeyPatch.context() as patch:
        for root in roots:
            patch.chdir(root)
            build(Path("artifacts"))
    return [root / "artifacts" for root in roots]
