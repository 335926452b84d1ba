"""What every DVC stage script shares: OpenBLAS loaded first, fully validated params.yaml, user errors as one line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas
from arena.core.code import project_root
from arena.core.config import load_params
from arena.core.errors import ArenaError, disk_full, is_disk_full
from arena.pipeline.lockguard import keep_good_lock
from arena.pipeline.params import validate_all


def checked_params(path: str | Path) -> dict[str, Any]:
    """params.yaml, with every section and the seed plan across them validated before any work starts."""
    params = load_params(path)
    validate_all(params)
    return params


def check_own_package() -> None:
    """Refuse a stage script that imports `arena` from another repository than its own: its meta.json would record
    the other checkout's code (the CLI's entry and digest) while DVC tracked this one's."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if not script or Path(script).resolve().parent.name != "stages":
        return  # not a stage script (a test, the CLI)
    repository = Path(script).resolve().parents[1]
    if repository != project_root():
        raise ArenaError(
            f"stage script {Path(script).resolve()} belongs to {repository} but imports arena from {project_root()}: "
            f"run it from a checkout holding its own arena/ package (a stage puts its repository first on sys.path)"
        )


# A stage stopped by SIGINT exits as a shell reports a command killed by it: 128 + 2.
INTERRUPTED = 130


def run(main: Callable[[], None]) -> None:
    """Run a stage's ``main`` after loading OpenBLAS (before anything imports mlx: stage scripts import their
    logic inside ``main``); a user error (bad params, missing model) or a full disk prints ``error: ...``, exit 2;
    Ctrl-C (SIGINT) prints one line and exits 130, every output it was writing removed (``core.artifacts``'
    temporaries are dropped on any exception), so a rerun of ``dvc repro`` starts the stage afresh. Under DVC,
    the whole dvc.lock its parent just wrote is first copied aside (``lockguard``: a killed repro can cut it
    short)."""
    keep_good_lock()
    try:
        check_own_package()
        ensure_fast_blas(strict=True)  # a stage builds with the pinned OpenBLAS or not at all
        main()
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except OSError as error:
        if not is_disk_full(error):
            raise
        print(f"error: {disk_full(error)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {Path(sys.argv[0]).stem} stopped, nothing of it written; `dvc repro` reruns it",
              file=sys.stderr)
        sys.exit(INTERRUPTED)
