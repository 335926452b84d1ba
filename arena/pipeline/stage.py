"""What every DVC stage script shares: OpenBLAS loaded first, fully validated params.yaml, user errors as one line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas
from arena.core.config import load_params
from arena.core.errors import ArenaError
from arena.pipeline.params import validate_all


def checked_params(path: str | Path) -> dict[str, Any]:
    """params.yaml, with every section and the seed plan across them validated before any work starts."""
    params = load_params(path)
    validate_all(params)
    return params


# A stage stopped by SIGINT exits as a shell reports a command killed by it: 128 + 2.
INTERRUPTED = 130


def run(main: Callable[[], None]) -> None:
    """Run a stage's ``main`` after loading OpenBLAS (before anything imports mlx: stage scripts import their
    logic inside ``main``); a user error (bad params, missing model) prints ``error: ...`` and exits 2; Ctrl-C
    (SIGINT) prints one line and exits 130, every output it was writing removed (``core.artifacts``' temporaries
    are dropped on any exception), so a rerun of ``dvc repro`` starts the stage afresh."""
    ensure_fast_blas()
    try:
        main()
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {Path(sys.argv[0]).stem} stopped, nothing of it written; `dvc repro` reruns it",
              file=sys.stderr)
        sys.exit(INTERRUPTED)
