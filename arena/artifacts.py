"""Atomic writes: files and whole artifact directories appear complete or not at all."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary sibling, fsync it, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
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
    failed stage never leaves a half-written artifact behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if path.exists():
            old = path.with_name(f".{path.name}.old{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
