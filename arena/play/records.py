"""Game records <-> JSONL rollout shards: atomic writes, and reads that name the file and line of any defect."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_text
from arena.core.errors import ArenaError
from arena.players.base import reasoning_digest

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


# A record is untrusted input: before a game is built from it, its variant and actions are bounded by what any
# game arena plays can hold (the match runner's action cap; no variant value, summed, above REPLAY_MAX_SIZE), so a
# hostile record cannot make replay allocate gigabytes. Games' own tighter limits apply in their variant checks.
REPLAY_MAX_SIZE = 10_000
REPLAY_MAX_ACTIONS = 400  # arena.play.match.MAX_ACTIONS: no game arena played has more


def _variant_size(value: Any) -> int:
    """The sum of every int in a variant and the length of its lists (what building the game scales with)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return abs(value)
    if isinstance(value, dict):
        return sum(_variant_size(item) for item in value.values())
    if isinstance(value, list):
        return len(value) + sum(_variant_size(item) for item in value)
    return 0


def _replay_bound_problem(record: dict[str, Any]) -> str | None:
    size = _variant_size(record["variant"])
    if size > REPLAY_MAX_SIZE:
        return (f"variant {json.dumps(record['variant'])[:80]} is larger than any game arena plays (sizes summing "
                f"to {size} > {REPLAY_MAX_SIZE}); not replayed")
    if len(record["actions"]) > REPLAY_MAX_ACTIONS:
        return (f"{len(record['actions'])} actions exceed the {REPLAY_MAX_ACTIONS}-action cap of every game; "
                "not replayed")
    return None


def _replay_problem(record: dict[str, Any]) -> str | None:
    """Why the record does not replay to its transcript digest (None when it does)."""
    from arena.games.registry import replay

    bound = _replay_bound_problem(record)
    if bound is not None:
        return bound
    try:
        result = replay(record["game_id"], record["variant"], record["seed"], record["actions"])
    except (ArenaError, ValueError, TypeError, KeyError, IndexError) as error:
        return f"does not replay: {' '.join(str(error).split())[:300]}"
    if result.transcript_digest != record["transcript_digest"]:
        return (f"transcript digest {result.transcript_digest[:16]} != "
                f"recorded {str(record['transcript_digest'])[:16]}")
    return _reasoning_problem(record)


def _reasoning_problem(record: dict[str, Any]) -> str | None:
    """Why a record's reasoning does not match its reasoning digest (None when it does, or nothing reasoned)."""
    decisions = record.get("decisions")
    try:
        digest = reasoning_digest(decisions) if isinstance(decisions, list) else None
    except (TypeError, ValueError, AttributeError) as error:
        return f"reasoning cannot be digested: {error}"
    recorded = record.get("reasoning_digest")
    if digest != recorded:
        return (f"reasoning digest {str(digest)[:16]} != recorded {str(recorded)[:16]} "
                "(a decision's reasoning or its tokens were changed, added or removed)")
    return None


def verify_records(records: Iterable[dict[str, Any]]) -> list[str]:
    """Re-play every finished game from (game, variant, seed, actions); list each game that does not reproduce
    its transcript digest (a mismatch, extra or missing actions, a variant no game has). Errored games are skipped:
    they have no transcript; count them with ``errored_count``."""
    problems = []
    for index, record in enumerate(records):
        if record["errored"]:
            continue
        problem = _replay_problem(record)
        if problem is not None:
            problems.append(f"game {index} ({record['game_id']}, seed {record['seed']}): {problem}")
    return problems


def errored_count(records: Iterable[dict[str, Any]]) -> int:
    """How many records are errored games (no transcript to replay, so never verified)."""
    return sum(bool(record["errored"]) for record in records)
