"""What every DVC stage script shares: OpenBLAS loaded first, fully validated params.yaml, user errors as one line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas
from arena.core.config import load_params
from arena.core.errors import ArenaError
from arena.pipeline.lockguard import keep_good_lock
from arena.pipeline.params import validate_all


def checked_params(path: str | Path) -> dict[str, Any]:
    """params.yaml, with every section and the seed plan across them validated before any work starts."""
    params = load_params(path)
    validate_all(params)
    return params


def run(main: Callable[[], None]) -> None:
    """Run a stage's ``main`` after loading OpenBLAS (before anything imports mlx: stage scripts import their
    logic inside ``main``); a user error (bad params, missing model) prints ``error: ...`` and exits 2. Under DVC,
    the whole dvc.lock its parent just wrote is first copied aside (``lockguard``: a killed repro can cut it short)."""
    keep_good_lock()
    try:
        ensure_fast_blas(strict=True)  # a stage builds with the pinned OpenBLAS or not at all
        main()
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
