"""Find the model a pin names by its arena digest: at the spec's path, else in the DVC cache, else from the remote.

DVC directory objects list their files by md5; the arena digest (blake3 over relative paths and bytes,
``meta.json`` excluded) is recomputed from the cached objects, so a model is found whatever DVC calls
it. A cached copy is copied out into a scratch directory; neither the workspace nor the cache is changed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.core.hashing import digest_config, digest_dir, digest_file, dir_manifest

MODEL_DIRS_ENV = "ARENA_MODEL_DIRS"
# One plain path component: no '.', '..', leading '-', whitespace, control or other odd characters.
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+@=-]*")


def allowed_model_dirs(extra: Sequence[str | Path] = ()) -> list[Path]:
    """Model directories outside the project a card's spec may name: ``extra`` and ``$ARENA_MODEL_DIRS``."""
    listed = [*extra, *os.environ.get(MODEL_DIRS_ENV, "").split(os.pathsep)]
    return [Path(entry).resolve() for entry in map(str, listed) if entry]


def spec_path_problem(repo: Path, rel: str, allowed: Sequence[Path]) -> str | None:
    """Why a card's ``mlx:`` path must not be read (None when it may): it must be plain names and resolve, links
    followed, inside the project ``repo`` or an allowed model directory (a hostile card must not walk the disk)."""
    parts = rel.split("/")
    if rel.startswith("/"):
        parts = parts[1:]
    if not rel or not all(_PLAIN.fullmatch(part) for part in parts):
        return (f"{rel!r} is not a path of plain names (letters, digits, . _ + @ = -; no '..', no leading '-' "
                "or '.'); a card's spec is refused unread")
    resolved = (repo / rel).resolve()
    roots = [repo.resolve(), *allowed]
    if not any(resolved == root or root in resolved.parents for root in roots):
        return (f"{rel} resolves to {resolved}, outside the project {repo} and every allowed model directory; "
                f"if the model lives there, allow it with --model-dir or ${MODEL_DIRS_ENV}")
    return None


def _dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    # The same interpreter's dvc: the one this environment installed, whatever PATH says.
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True)


def dvc_cache_dir(repo: str | Path) -> Path | None:
    """The DVC repository's cache directory (``dvc cache dir``), or None when ``repo`` is not a DVC repository."""
    repo = Path(repo)
    if not (repo / ".dvc").is_dir():
        return None
    done = _dvc(repo, "cache", "dir")
    if done.returncode != 0 or not done.stdout.strip():
        return repo / ".dvc" / "cache"
    return Path(done.stdout.strip().splitlines()[-1])


def _dir_objects(cache: Path) -> list[Path]:
    # DVC 3 keeps objects under files/md5/; DVC 2-era (md5-dos2unix) objects sit at the cache root.
    return sorted(cache.rglob("*.dir")) if cache.is_dir() else []


def _cached_files(dir_object: Path) -> dict[str, Path] | None:
    """relpath -> cache object of a DVC directory object, or None if it is unreadable or not fully cached."""
    try:
        entries = json.loads(dir_object.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    root = dir_object.parent.parent
    files: dict[str, Path] = {}
    for entry in entries if isinstance(entries, list) else []:
        md5, rel = (entry.get("md5"), entry.get("relpath")) if isinstance(entry, Mapping) else (None, None)
        if not isinstance(md5, str) or not isinstance(rel, str) or len(md5) < 3:
            return None
        files[rel] = root / md5[:2] / md5[2:]
    if not files or not all(path.is_file() for path in files.values()):
        return None
    return files


def _cached_digest(files: Mapping[str, Path]) -> str:
    """``digest_dir`` of the directory these cache objects make up (DVC never tracks empty directories)."""
    return digest_config({rel: digest_file(path) for rel, path in files.items() if rel != "meta.json"})


def find_in_cache(cache: Path, model_hash: str) -> tuple[Path, dict[str, Path]] | None:
    """A fully cached DVC directory whose arena digest is ``model_hash``: (its .dir object, relpath -> object)."""
    for dir_object in _dir_objects(cache):
        files = _cached_files(dir_object)
        if files is None or "config.json" not in files:
            continue  # not a model directory, or only partly fetched
        meta = files.get("meta.json")
        if meta is not None:
            # Every stage's meta.json records its directory's digest: a cheap filter before hashing the files.
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8")).get("digest")
            except (OSError, ValueError, AttributeError):
                recorded = None
            if recorded is not None and recorded != model_hash:
                continue
        if _cached_digest(files) == model_hash:
            return dir_object, files
    return None


def _materialise(files: Mapping[str, Path], dest: Path) -> Path:
    # Copies, not links: nothing may write through into DVC's read-only cache.
    for rel, source in sorted(files.items()):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return dest


def _model_hash(path: Path) -> str:
    """The ``model_hash`` an MLX player at ``path`` pins: an adapter directory that names its base (mlx-lm's
    ``adapter_config.json`` ``model``) pins base x adapter; any other directory, a QLoRA snapshot holding its base
    weights beside its adapter included, pins its own files (``MLXPlayer.pin``'s rule)."""
    adapter_config = path / "adapter_config.json"
    base = json.loads(adapter_config.read_text()).get("model") if adapter_config.exists() else None
    if base is not None:
        return digest_config({"base": digest_dir(base), "adapter": digest_dir(path)})
    return digest_dir(path)


def _changed_files(workspace: Path, files: Mapping[str, Path]) -> str:
    """Which files of the workspace copy differ from the pinned copy found in the cache."""
    here = dir_manifest(workspace)
    pinned = {rel: digest_file(path) for rel, path in files.items() if rel != "meta.json"}
    changed = sorted(rel for rel in here.keys() & pinned.keys() if here[rel] != pinned[rel])
    missing = sorted(pinned.keys() - here.keys())
    extra = sorted(here.keys() - pinned.keys())
    parts = [f"{label}: {', '.join(names)}" for label, names in
             (("changed", changed), ("missing", missing), ("extra", extra)) if names]
    return "; ".join(parts) or "no file differs"


@dataclass
class Located:
    """Where the pinned model was found (``path``, None when nowhere), what happened on the way, and why not."""

    path: Path | None
    notes: list[str]
    detail: str = ""
    workspace_digest: str | None = None


def locate_model(repo: Path, rel: str, model_hash: str, scratch: Path, *, fetch: bool = True) -> Located:
    """Find the model directory whose arena digest is ``model_hash``: the workspace path, else the DVC cache.

    When the cache lacks it and ``fetch`` is set, ``dvc fetch`` the path (its dvc.lock version, then every
    commit's) from the default remote. A cached copy is copied into ``scratch``; the workspace is never
    changed.
    """
    workspace = repo / rel
    located = Located(None, [])
    if workspace.is_dir():
        located.workspace_digest = _model_hash(workspace)
        if located.workspace_digest == model_hash:
            located.path = workspace
            return located
    cache = dvc_cache_dir(repo)
    found = find_in_cache(cache, model_hash) if cache else None
    fetch_errors = []
    if cache and found is None and fetch:
        for extra in ((), ("--all-commits",)):
            done = _dvc(repo, "fetch", *extra, rel)
            found = find_in_cache(cache, model_hash)
            if found is None:
                # dvc fetch exits 0 when the remote lacks the files; its warning says so.
                fetch_errors.append(f"dvc fetch {' '.join((*extra, rel))}: {_complaint(done)}")
            if found is not None:
                located.notes.append(f"fetched {rel} from the DVC remote")
                break
    if found is not None:
        dir_object, files = found
        located.path = _materialise(files, scratch / rel.replace("/", "_"))
        located.notes.append(f"{rel}: the pinned model came from the DVC cache ({dir_object.name})")
        if workspace.is_dir():
            located.notes.append(f"{rel} in the workspace is not the pinned model ({_changed_files(workspace, files)})")
        return located
    located.detail = _not_found(workspace, located.workspace_digest, cache, fetch_errors)
    return located


def _complaint(done: subprocess.CompletedProcess) -> str:
    """DVC's first error or warning line, else its last line."""
    lines = [line.strip() for line in f"{done.stderr}\n{done.stdout}".splitlines() if line.strip()]
    flagged = [line for line in lines if line.startswith(("ERROR", "WARNING"))]
    return (flagged or lines or [f"exit {done.returncode}, no output"])[0]


def _not_found(workspace: Path, digest: str | None, cache: Path | None, fetch_errors: Sequence[str]) -> str:
    where = [f"{workspace} is missing" if digest is None else f"{workspace} has digest {digest}"]
    meta = workspace / "meta.json"
    if digest is not None and meta.exists():
        try:
            recorded = json.loads(meta.read_text()).get("digest")
        except (OSError, ValueError, AttributeError):
            recorded = None
        if recorded is not None and recorded != digest:
            where.append(f"its meta.json records {recorded}: its files changed after it was built")
    where.append("no DVC cache (not a DVC repository)" if cache is None else f"not in the DVC cache {cache}")
    where.extend(fetch_errors)
    return "; ".join(where)

