"""The base class of errors a user can fix (bad params, unknown game, missing model); the CLI prints them plainly."""

from __future__ import annotations

import errno
import os

# A full disk, or a full quota: the user frees space and reruns.
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class ArenaError(ValueError):
    """An error caused by input the user can fix; its message names the problem and the fix."""


class DiskFullError(ArenaError):
    """The disk (or quota) filled while arena wrote; nothing partial is left, since every write is atomic."""


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` is an OSError for a full disk or quota."""
    return isinstance(error, OSError) and error.errno in _NO_SPACE


def disk_full(error: OSError, path: str | os.PathLike[str] | None = None) -> DiskFullError:
    """The one-line error for a full disk while writing ``path`` (default: the path the OSError names)."""
    where = path if path is not None else (error.filename or "a file")
    return DiskFullError(f"no space left on device while writing {os.fspath(where)} ({os.strerror(error.errno)}); "
                         "nothing partial was kept: free some space and rerun")
