"""Integrity checks DVC does not make: artifacts against their meta.json digests, cache objects against names.

DVC 3.67 trusts its local cache: a corrupted object is checked out (by `dvc checkout`, or by `dvc repro`
restoring a cached stage) without a word, and `dvc status` then reports the pipeline up to date
(treeverse/dvc#5978, #9641). Every arena artifact directory records its own blake3 digest in meta.json
and every DVC object is named by its md5, so both can be checked here.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from arena.core.errors import ArenaError
from arena.core.hashing import digest_dir

META_FILE = "meta.json"
# DVC 3's object layout: files/md5/<first 2 hex>/<remaining 30 hex>[.dir]
DVC_OBJECTS = Path("files") / "md5"
_CHUNK = 1 << 20


def find_artifacts(root: str | Path) -> list[Path]:
    """Every directory under ``root`` (``root`` included) that holds a meta.json, sorted."""
    root = Path(root)
    return sorted(meta.parent for meta in root.rglob(META_FILE) if meta.is_file())


def verify_artifact(path: str | Path, dvc_cache: str | Path = ".dvc/cache") -> str | None:
    """None when the directory's content digest equals the one its meta.json records, else the problem.

    A symbolic link is a problem unless it is DVC's own link to a file in ``dvc_cache`` (``cache.type symlink``).
    """
    path = Path(path)
    try:
        recorded = json.loads((path / META_FILE).read_text(encoding="utf-8"))["digest"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"{path}: unreadable {META_FILE} ({type(error).__name__}); rebuild it with `dvc repro --force`"
    if not isinstance(recorded, str) or not recorded:
        return (f"{path}: {META_FILE} records digest {recorded!r}, not a digest string; "
                "rebuild it with `dvc repro --force`")
    try:
        actual = digest_dir(path, link_roots=(dvc_cache,))
    except ArenaError as error:
        return str(error)
    if actual != recorded:
        return (f"{path}: content digest {actual[:16]} does not match {recorded[:16]} recorded in {META_FILE}: "
                "the files changed after the stage wrote them")
    return None


def verify_artifacts(root: str | Path = "artifacts", dvc_cache: str | Path = ".dvc/cache") -> list[str]:
    """Problems with every artifact directory under ``root`` (empty when all match their meta.json), and every
    symbolic link outside them (score-card archives have no meta.json) that is not DVC's own."""
    artifacts = find_artifacts(root)
    problems = [problem for path in artifacts if (problem := verify_artifact(path, dvc_cache)) is not None]
    return problems + stray_links(root, artifacts, dvc_cache)


def stray_links(root: str | Path, artifacts: list[Path], dvc_cache: str | Path) -> list[str]:
    """One line per symbolic link under ``root`` but outside ``artifacts`` (those are checked with their digest)
    that is not a link to a file in the DVC cache; links are listed, never followed."""
    cache = Path(dvc_cache).resolve()
    inside = {path.resolve() for path in artifacts}
    problems = []
    for folder, dirs, files in os.walk(root):  # os.walk follows no links
        here = Path(folder)
        if here.resolve() in inside:
            dirs.clear()
            continue
        for name in sorted(dirs + files):
            link = here / name
            if link.is_symlink() and not (link.is_file() and link.resolve().is_relative_to(cache)):
                problems.append(f"{link}: a symbolic link to {os.readlink(link)!r} in the artifacts: remove it "
                                "(arena writes none; it may point anywhere)")
    return sorted(problems)


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_dvc_cache(cache: str | Path = ".dvc/cache", *, repair: bool = False) -> list[str]:
    """Problems with DVC cache objects whose bytes no longer hash to their name; ``repair`` deletes them.

    A deleted object is safe to lose: `dvc status` then reports the outputs that used it as "not in
    cache", and `dvc repro` rebuilds and re-caches them (a corrupt object left in place is reused instead).
    """
    root = Path(cache) / DVC_OBJECTS
    problems = []
    for prefix in sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []:
        for obj in sorted(p for p in prefix.iterdir() if p.is_file()):
            expected = prefix.name + obj.name.removesuffix(".dir")
            actual = _md5(obj)
            if actual == expected:
                continue
            problem = f"{obj}: DVC cache object hashes to {actual}, not {expected}: it is corrupt"
            if repair:
                obj.unlink()
                problem += "; deleted (run `dvc repro` to rebuild what used it)"
            problems.append(problem)
    return problems
