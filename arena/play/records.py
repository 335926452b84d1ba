"""Game records <-> JSONL rollout shards: atomic writes, and reads that name the file and line of any defect."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_text
from arena.core.errors import ArenaError

SHARD_FILE = "games.jsonl"
REQUIRED = {
    "game_id": str, "variant": dict, "seed": int, "players": list, "pins": list, "actions": list,
    "decisions": list, "errored": bool,
}


class ShardError(ArenaError):
    """A shard file is missing, truncated or has rows of the wrong shape."""


def encode_record(record: dict[str, Any]) -> str:
    """One record as a canonical JSON line (sorted keys): same games -> same bytes."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write_shard(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Atomically write records as JSONL; return how many were written."""
    lines = [encode_record(r) for r in records]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def _check(record: Any, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise ShardError(f"{where}: expected a JSON object per line, got {type(record).__name__}")
    for key, kind in REQUIRED.items():
        if key not in record:
            raise ShardError(f"{where}: missing key {key!r} (is this a rollout shard?)")
        if not isinstance(record[key], kind) or (kind is int and isinstance(record[key], bool)):
            raise ShardError(f"{where}: {key!r} should be {kind.__name__}, got {type(record[key]).__name__}")
    if not record["errored"] and not isinstance(record.get("transcript_digest"), str):
        raise ShardError(f"{where}: a finished game needs a 'transcript_digest' string")
    return record


def read_shard(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a shard (a games.jsonl file, or a directory holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / SHARD_FILE
    if not path.exists():
        raise ShardError(f"shard not found: {path}")
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        raise ShardError(f"{path}: truncated (the last line has no newline); rebuild the shard with `dvc repro`")
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{path}:{number}"
        try:
            records.append(_check(json.loads(line), where))
        except json.JSONDecodeError as error:
            raise ShardError(f"{where}: not valid JSON ({error.msg})") from error
    return records


def verify_records(records: Iterable[dict[str, Any]]) -> list[str]:
    """Re-play every finished game from (game, variant, seed, actions); list each transcript digest mismatch."""
    from arena.games.registry import replay

    problems = []
    for index, record in enumerate(records):
        if record["errored"]:
            continue
        result = replay(record["game_id"], record["variant"], record["seed"], record["actions"])
        if result.transcript_digest != record["transcript_digest"]:
            problems.append(
                f"game {index} ({record['game_id']}, seed {record['seed']}): transcript digest "
                f"{result.transcript_digest[:16]} != recorded {record['transcript_digest'][:16]}"
            )
    return problems
