"""Atomic writes: files and whole artifact directories appear complete or not at all."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena.core.errors import disk_full, is_disk_full


def _temp_prefix(path: Path, kind: str) -> str:
    """``.NAME.writing-PID-`` (or ``old``): the writer's pid in the name tells a killed writer's leftovers apart."""
    return f".{path.name}.{kind}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` is killed but not yet reaped: it still answers signal 0, but it never writes again. A writer
    SIGKILLed with its parent is an orphan until its new parent reaps it, and that can outlast the next write."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (macOS), or gone while we looked: signal 0's answer stands
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def sweep_stale_temps(path: str | Path) -> list[Path]:
    """Remove the temporaries beside ``path`` that writers killed mid-write left (SIGKILL, OOM, power loss).

    A temporary is stale when the pid in its name is no longer running; a live writer's is never
    touched (a reused pid only keeps a stale one a while longer). Returns what was removed.
    """
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:writing|old)-(\d+)-[a-z0-9_]*\.tmp")
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except FileNotFoundError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or _pid_alive(int(match.group(1))):
            continue
        stale = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
        removed.append(stale)
    return removed


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary sibling, fsync it, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path, "writing"), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if is_disk_full(error):
            raise disk_full(error, path) from error
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Atomically write UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def dump_json(data: Any) -> str:
    """Stable, human-readable JSON (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Atomically write ``data`` as stable JSON."""
    atomic_write_text(path, dump_json(data))


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; on success it replaces ``path`` whole.

    On any exception the temporary directory is removed and ``path`` is left as it was, so a
    failed stage never leaves a half-written artifact behind. A writer killed outright (no exception
    runs) leaves only its temporary, never a partial ``path``; the next write of ``path`` sweeps it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(path)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path, "writing"), suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if path.exists():
            old = path.with_name(f"{_temp_prefix(path, 'old')}{tmp.name.rsplit('-', 1)[-1]}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full(error, path) from error
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
