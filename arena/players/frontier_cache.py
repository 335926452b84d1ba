"""The frontier response cache: good replies stored append-only, one file per request digest, never rewritten."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.paths import cache_dir
from arena.players.frontier_reply import Reply

log = logging.getLogger(__name__)

# Bumped whenever the request or the cached record changes shape, so old entries are never misread.
CACHE_FORMAT = 1


class ResponseCache:
    """Append-only, content-addressed store of good replies: ``<root>/<key[:2]>/<key>.json``, never rewritten."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "frontier"

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, request: dict[str, Any]) -> Reply | None:
        """The stored reply for ``request``, or None when absent or unreadable (a warning says which file)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record["format"] != CACHE_FORMAT or record["request"] != request:
                raise ValueError("record does not match its request")
            response = record["response"]
            model = response["model"]
            content = response["content"]
            finish = response["finish_reason"]
            if not isinstance(content, str) or not all(isinstance(v, (str, type(None))) for v in (model, finish)):
                raise ValueError("record has the wrong types")
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("ignoring unreadable frontier cache entry %s (%s); delete it to cache this request again",
                        path, type(error).__name__)
            return None
        return Reply(model=model, content=content, finish_reason=finish)

    def put(self, key: str, request: dict[str, Any], reply: Reply) -> None:
        """Store ``reply`` unless an entry for ``key`` exists: written atomically, then linked into place."""
        path = self.path(key)
        if path.exists():
            return
        record = {"format": CACHE_FORMAT, "key": key, "request": request, "response": asdict(reply)}
        # Write a private temporary file atomically, then hard-link it: link() refuses to replace an
        # existing entry, so a concurrent writer of the same key can never overwrite another's reply.
        tmp = path.with_name(f".{key}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        atomic_write_json(tmp, record)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
