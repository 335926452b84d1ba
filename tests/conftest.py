"""Shared pytest fixtures: isolated caches so tests never touch the user's home directory."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "arena-cache"
    monkeypatch.setenv("ARENA_CACHE_DIR", str(cache))
