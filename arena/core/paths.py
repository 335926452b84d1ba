"""Where arena keeps its per-user caches (hash cache, OpenBLAS copy, frontier responses)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$ARENA_CACHE_DIR``, else ``$XDG_CACHE_HOME/arena``, else ``~/.cache/arena``."""
    explicit = os.environ.get("ARENA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arena"
