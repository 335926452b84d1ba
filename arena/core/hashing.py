"""blake3 content addressing: digests of bytes, files, directories and canonical configs, with a stat cache."""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from blake3 import blake3

from arena.core.errors import ArenaError
from arena.core.paths import cache_dir

# Below this size a single-threaded in-memory hash is faster than mmap + a thread pool.
_MMAP_THRESHOLD = 4 * 1024 * 1024


def digest_bytes(data: bytes) -> str:
    """blake3 hex digest of ``data``."""
    return blake3(data).hexdigest()


def _hash_file_uncached(path: Path, size: int) -> str:
    if size >= _MMAP_THRESHOLD:
        return blake3(max_threads=blake3.AUTO).update_mmap(path).hexdigest()
    return blake3(path.read_bytes()).hexdigest()


class HashCache:
    """Digests keyed on (absolute path, inode, size, mtime_ns, ctime_ns), kept in SQLite.

    ctime is in the key because no user call can set it back: a file rewritten in place with the
    same size and a restored mtime still changes ctime, so a stale digest is never reused.
    """

    def __init__(self, path: Path | None = None, timeout: float = 30.0) -> None:
        self.path = path or cache_dir() / "hashes.sqlite"
        self.timeout = timeout
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            try:
                # WAL persists in the file; switching takes a lock concurrent workers can hold, so switch once.
                if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS digests (path TEXT, inode INTEGER, size INTEGER, "
                    "mtime_ns INTEGER, ctime_ns INTEGER, digest TEXT, "
                    "PRIMARY KEY (path, inode, size, mtime_ns, ctime_ns))"
                )
            except sqlite3.Error:
                db.close()  # kept only once set up: the next call tries again
                raise
            self._db = db
        return self._db

    @staticmethod
    def _key(path: Path, st: os.stat_result) -> tuple[str, int, int, int, int]:
        return (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def digest(self, path: str | Path) -> str:
        """The file's digest, from the cache when its stat key is unchanged. The cache only saves time: when SQLite
        fails (a database locked by concurrent workers past the timeout, a damaged file) the file is hashed anew."""
        path = Path(path).resolve()
        before = path.stat()
        key = self._key(path, before)
        try:
            row = self._conn().execute(
                "SELECT digest FROM digests WHERE path=? AND inode=? AND size=? AND mtime_ns=? AND ctime_ns=?", key
            ).fetchone()
        except sqlite3.Error:
            return _hash_file_uncached(path, before.st_size)
        if row:
            return row[0]
        digest = _hash_file_uncached(path, before.st_size)
        # A file modified while it was being hashed must not be cached under either stat key.
        if self._key(path, path.stat()) == key:
            self._store(key, digest)
        return digest

    def _store(self, key: tuple[str, int, int, int, int], digest: str) -> None:
        try:
            self._conn().execute("DELETE FROM digests WHERE path=?", (key[0],))
            self._conn().execute("INSERT OR REPLACE INTO digests VALUES (?,?,?,?,?,?)", (*key, digest))
        except sqlite3.Error:
            pass  # not kept this time; the next call hashes the file again


_default_cache: HashCache | None = None


def _cache() -> HashCache:
    global _default_cache
    expected = cache_dir() / "hashes.sqlite"
    if _default_cache is None or _default_cache.path != expected:
        _default_cache = HashCache(expected)
    return _default_cache


def digest_file(path: str | Path, *, use_cache: bool = True) -> str:
    """blake3 hex digest of a file's bytes (multi-threaded for large files, stat-cached)."""
    path = Path(path)
    if use_cache:
        return _cache().digest(path)
    return _hash_file_uncached(path, path.stat().st_size)


def _walk(root: Path, exclude: frozenset[str]) -> Iterable[tuple[str, Path]]:
    for entry in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
        rel = entry.relative_to(root).as_posix()
        if rel in exclude:
            continue
        yield rel, entry


def _link_problem(root: Path, rel: str, entry: Path, link_roots: tuple[Path, ...] | None) -> str | None:
    """Why the symbolic link ``entry`` cannot be hashed (None when it is a link to a file it may follow)."""
    target = os.readlink(entry)
    if not entry.is_file():  # a directory (a loop to "." among them), a dangling or looping link
        return f"{root}: {rel} is a symbolic link to {target!r}, not to a file"
    if link_roots is None:
        return None
    resolved = entry.resolve()
    if any(resolved.is_relative_to(allowed.resolve()) for allowed in link_roots):
        return None
    return f"{root}: {rel} is a symbolic link to {target!r}; an artifact holds plain files only"


def dir_manifest(path: str | Path, *, exclude: Iterable[str] = ("meta.json",),
                 link_roots: Iterable[str | Path] | None = None) -> dict[str, str]:
    """Sorted relative path -> file digest (empty directories map to ``"dir"``).

    A symbolic link to a file is hashed as the file's content when ``link_roots`` is None (a model directory, e.g.
    a Hugging Face snapshot whose files link to blobs), else only when it resolves inside one of ``link_roots``
    (``()``: never; an artifact arena wrote holds none). A link to a directory (a loop to ``.`` included), a dangling
    or looping link is never followed: an ArenaError names it, where it was silently skipped before.
    """
    root = Path(path)
    if not root.is_dir():
        raise NotADirectoryError(f"not a directory: {root}")
    roots = None if link_roots is None else tuple(Path(p) for p in link_roots)
    manifest: dict[str, str] = {}
    for rel, entry in _walk(root, frozenset(exclude)):
        if entry.is_symlink():
            problem = _link_problem(root, rel, entry, roots)
            if problem is not None:
                raise ArenaError(f"{problem}: replace it with the file itself, or rebuild with `dvc repro --force`")
        if entry.is_file():
            manifest[rel] = digest_file(entry)
        elif entry.is_dir() and not any(entry.iterdir()):
            manifest[rel] = "dir"
    return manifest


def digest_dir(path: str | Path, *, exclude: Iterable[str] = ("meta.json",),
               link_roots: Iterable[str | Path] | None = None) -> str:
    """Digest of a directory: relative paths and file digests, so renames and moves change it.

    ``meta.json`` is excluded by default because it records the directory's own digest; ``link_roots`` as in
    ``dir_manifest``.
    """
    return digest_config(dir_manifest(path, exclude=exclude, link_roots=link_roots))


def digest_path(path: str | Path) -> str:
    """Digest of a file or a directory."""
    path = Path(path)
    return digest_dir(path) if path.is_dir() else digest_file(path)


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot hash a non-finite float: {value!r}")
        # repr() is the shortest round-tripping form, so 0.1 is always "0.1"; -0.0 equals 0.0.
        return {"__float__": repr(value + 0.0)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, Path):
        return value.as_posix()
    raise TypeError(f"cannot hash a value of type {type(value).__name__}: {value!r}")


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, floats tagged and rendered by repr()."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_config(value: Any) -> str:
    """blake3 digest of a config's canonical JSON (key order never matters; 1 and 1.0 differ)."""
    return digest_bytes(canonical_json(value).encode("utf-8"))
