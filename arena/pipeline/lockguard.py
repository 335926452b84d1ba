"""A last good copy of dvc.lock, kept by every stage and restored when a killed `dvc repro` left the lock cut short.

DVC 3 writes ``dvc.lock`` in place (``dvc/utils/serialize/_common.py``: ``open(path, "w+")`` then ruamel's
dump), after each stage; a ``dvc repro`` killed during that dump leaves a truncated lock, and every later dvc
command then fails ("dvc.lock validation failed"). DVC offers no option to write it atomically. So arena keeps
its own copy: a stage's runner starts only after its DVC parent has finished writing the lock (DVC dumps the
lock between stages), so the lock it sees is whole, and it copies it (atomically) to ``.dvc/tmp``. When the lock
does not load under DVC's own loader and schema, ``restore_lock`` puts that copy back: the stages DVC had
finished since are simply rerun (their outputs' hashes are no longer in the lock), so nothing wrong is reused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from arena.core.artifacts import atomic_write_bytes
from arena.core.errors import ArenaError

LOCK = "dvc.lock"
GOOD = Path(".dvc") / "tmp" / "arena-good-dvc.lock"


def keep_good_lock(root: str | Path | None = None) -> Path | None:
    """Inside a DVC stage (``$DVC_ROOT`` set by DVC), copy the project's whole ``dvc.lock`` aside; return the copy."""
    root = Path(root if root is not None else os.environ.get("DVC_ROOT", ""))
    if not str(root) or not (root / ".dvc").is_dir():
        return None
    try:
        data = (root / LOCK).read_bytes()
    except FileNotFoundError:
        return None
    atomic_write_bytes(root / GOOD, data)
    return root / GOOD


def lock_problem(path: str | Path) -> str | None:
    """Why DVC would refuse the lock file at ``path`` (its own loader and schema), or None when it loads."""
    from dvc.exceptions import DvcException
    from dvc.schema import COMPILED_LOCKFILE_SCHEMA
    from dvc.utils.strictyaml import load

    try:
        load(str(path), COMPILED_LOCKFILE_SCHEMA)
    except FileNotFoundError:
        return None
    except DvcException as error:
        return str(error).splitlines()[0]
    return None


def restore_lock(root: str | Path = ".") -> str | None:
    """Put the last good lock back when ``root``'s ``dvc.lock`` does not load; say what was done (None: nothing)."""
    root = Path(root)
    problem = lock_problem(root / LOCK)
    if problem is None:
        return None
    good = root / GOOD
    if not good.is_file() or lock_problem(good) is not None:
        raise ArenaError(f"{root / LOCK} does not load ({problem}) and there is no good copy at {good}; "
                         f"restore it from git (git checkout -- {LOCK}) and rerun dvc repro")
    atomic_write_bytes(root / LOCK, good.read_bytes())
    return (f"{root / LOCK} did not load ({problem}), likely cut short by a killed dvc repro; restored the last "
            f"good copy {good} (stages finished after it rerun)")


def main() -> None:
    """``python -m arena.pipeline.lockguard [ROOT]``: restore the lock if it needs it (``./dev.sh repro`` runs this)."""
    try:
        said = restore_lock(sys.argv[1] if len(sys.argv) > 1 else ".")
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    if said:
        print(said, file=sys.stderr)


if __name__ == "__main__":
    main()
