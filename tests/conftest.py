"""Shared pytest fixtures: isolated caches, and one tiny embedded base model built per test session."""

from pathlib import Path

import pytest

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before any test imports mlx


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "arena-cache"
    monkeypatch.setenv("ARENA_CACHE_DIR", str(cache))


@pytest.fixture(scope="session")
def base_model_dir(tmp_path_factory) -> Path:
    """The embedded default base model (same bytes as the `base` stage builds), built once."""
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    out = tmp_path_factory.mktemp("models") / "base"
    build_base(BaseConfig(), out)
    return out
