"""Repairs what a killed `dvc repro` leaves cut short: dvc.lock (from a last good copy) and DVC's stage-lock file.

DVC 3 writes ``dvc.lock`` in place (``dvc/utils/serialize/_common.py``: ``open(path, "w+")`` then ruamel's
dump), after each stage; a ``dvc repro`` killed during that dump leaves a truncated lock, and every later dvc
command then fails ("dvc.lock validation failed"). DVC offers no option to write it atomically. So arena keeps
its own copy: a stage's runner starts only after its DVC parent has finished writing the lock (DVC dumps the
lock between stages), so the lock it sees is whole, and it copies it (atomically) to ``.dvc/tmp``. When the lock
does not load under DVC's own loader and schema, ``restore_lock`` puts that copy back: the stages DVC had
finished since are simply rerun (their outputs' hashes are no longer in the lock), so nothing wrong is reused.

DVC also rewrites ``.dvc/tmp/rwlock`` (which stage paths a running dvc holds, by PID) in place
(``dvc/rwlock.py``: ``open(path, "w")`` then ``json.dump``), so a kill there leaves a file every later
``dvc repro`` refuses ("JSON structure is corrupted"). Its entries only matter while their processes live (DVC
itself drops dead PIDs), so ``repair_rwlock`` empties it when no other dvc process runs in the project, under
DVC's own guard lock, and refuses (naming them) when some do.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from arena.core.artifacts import atomic_write_bytes
from arena.core.errors import ArenaError

LOCK = "dvc.lock"
GOOD = Path(".dvc") / "tmp" / "arena-good-dvc.lock"
RWLOCK = Path(".dvc") / "tmp" / "rwlock"


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


def rwlock_problem(path: str | Path) -> str | None:
    """Why DVC would refuse the stage-lock file at ``path`` (JSON and DVC's schema), or None when it loads."""
    from dvc.rwlock import SCHEMA
    from voluptuous import Invalid

    try:
        SCHEMA(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return f"not JSON: {error}"
    except Invalid as error:
        return f"not DVC's format: {error}"
    return None


def dvc_processes(root: str | Path) -> list[str]:
    """Other live processes running dvc in ``root`` (or below it), as ``PID: command`` lines."""
    import psutil

    root = Path(root).resolve()
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "cwd"]):
        info = process.info
        if info["pid"] == os.getpid() or not info["cwd"] or not info["cmdline"]:
            continue
        runs_dvc = any(Path(part).name == "dvc" for part in info["cmdline"])
        if runs_dvc and Path(info["cwd"]).resolve().is_relative_to(root):
            found.append(f"{info['pid']}: {' '.join(info['cmdline'])}")
    return found


def repair_rwlock(root: str | Path = ".") -> str | None:
    """Empty ``root``'s DVC stage-lock file when it does not load and no other dvc runs there; say what was done."""
    from dvc.lock import LockError, make_lock

    root = Path(root)
    path = root / RWLOCK
    if (problem := rwlock_problem(path)) is None:
        return None
    if running := dvc_processes(root):
        raise ArenaError(f"{path} does not load ({problem}) and dvc still runs in {root}: " + "; ".join(running)
                         + "; let those finish (or stop them), then rerun")
    try:
        with make_lock(str(path) + ".lock", tmp_dir=str(path.parent)):
            atomic_write_bytes(path, b"{}")
    except LockError as error:
        raise ArenaError(f"{path} does not load ({problem}) and its guard lock is held ({error}); "
                         "let the dvc holding it finish, then rerun") from error
    return (f"{path} did not load ({problem}), likely cut short by a killed dvc repro; no dvc runs here, "
            "so it was emptied (it only names the stages live dvc processes hold)")


def repair(root: str | Path = ".") -> list[str]:
    """Every repair a killed ``dvc repro`` may need before the next one (the lock, the stage-lock file)."""
    return [said for said in (restore_lock(root), repair_rwlock(root)) if said]


def main() -> None:
    """``python -m arena.pipeline.lockguard [ROOT]``: repair what a killed build left (``./dev.sh repro`` runs this)."""
    try:
        said = repair(sys.argv[1] if len(sys.argv) > 1 else ".")
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    for line in said:
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()
