"""What every DVC stage script shares: fully validated params.yaml, and user errors as one line with exit 2."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.core.config import load_params
from arena.core.errors import ArenaError


def checked_params(path: str | Path) -> dict[str, Any]:
    """params.yaml, with every section and the seed plan across them validated before any work starts."""
    from arena.pipeline.params import validate_all

    params = load_params(path)
    validate_all(params)
    return params


def run(main: Callable[[], None]) -> None:
    """Run a stage's ``main``; a user error (bad params, missing model) prints ``error: ...`` and exits 2."""
    try:
        main()
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
