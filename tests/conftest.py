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


# A stand-in small enough for fast tests: qwen3, the Qwen3-style thinking template, a small padded vocabulary.
STANDIN_SMALL = {"source": "standin", "hidden_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
                 "intermediate_size": 128, "vocab_size": 1024, "max_position_embeddings": 2048}


@pytest.fixture(scope="session")
def standin_dir(tmp_path_factory) -> Path:
    """A small float stand-in model (source: standin), built once."""
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    out = tmp_path_factory.mktemp("models") / "standin"
    build_base(BaseConfig(**STANDIN_SMALL), out)
    return out


@pytest.fixture(scope="session")
def standin_q4_dir(tmp_path_factory) -> Path:
    """The same small stand-in quantised to 4 bits (mlx-lm's converter), built once."""
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    out = tmp_path_factory.mktemp("models") / "standin-q4"
    build_base(BaseConfig(**STANDIN_SMALL, quant="q4"), out)
    return out
