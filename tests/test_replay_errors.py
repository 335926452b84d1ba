"""Malformed rollout shards through `arena replay`: one error line naming the file and line, exit 2, no traceback."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.play.match import duplicate_schedule, play_match
from arena.play.records import encode_record, write_shard
from arena.players.build import make_player


@pytest.fixture(scope="module")
def good_lines(tmp_path_factory) -> list[str]:
    """Six real Kuhn games (random vs first) as canonical JSONL lines."""
    records = play_match("kuhn", (make_player("random"), make_player("first")), duplicate_schedule(range(3), 6),
                         progress=False)
    assert not any(r["errored"] for r in records)
    return [encode_record(r) for r in records]


def _replay(*paths) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["replay", *map(str, paths)])
    return result.exit_code, result.output


def _with(lines: list[str], number: int, change) -> str:
    """The shard text with line ``number`` (1-based) replaced by ``change(record)`` as JSON."""
    edited = list(lines)
    record = json.loads(edited[number - 1])
    edited[number - 1] = json.dumps(change(record))
    return "".join(line + "\n" for line in edited)


def test_a_good_shard_verifies(tmp_path, good_lines):
    shard = tmp_path / "games.jsonl"
    shard.write_text("".join(line + "\n" for line in good_lines))
    assert _replay(tmp_path) == (0, f"{tmp_path}: 6/6 games verified\n")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("truncated", lambda lines: "\n".join(lines)[:-40],
         "{path}: truncated (the last line has no newline); rebuild the shard with `dvc repro`"),
        ("cut_mid_line", lambda lines: "\n".join(lines[:2]) + "\n" + lines[2][:50] + "\n",
         "{path}:3: not valid JSON (Unterminated string starting at)"),
        ("missing_key", lambda lines: _with(lines, 2, lambda r: {k: v for k, v in r.items() if k != "seed"}),
         "{path}:2: missing key 'seed' (is this a rollout shard?)"),
        ("wrong_type", lambda lines: _with(lines, 4, lambda r: {**r, "seed": "4"}),
         "{path}:4: 'seed' should be int, got str"),
        ("bool_for_int", lambda lines: _with(lines, 1, lambda r: {**r, "seed": True}),
         "{path}:1: 'seed' should be int, got bool"),
        ("no_digest", lambda lines: _with(lines, 5, lambda r: {**r, "transcript_digest": None}),
         "{path}:5: a finished game needs a 'transcript_digest' string"),
        ("not_an_object", lambda lines: "[1, 2]\n" + "\n".join(lines) + "\n",
         "{path}:1: expected a JSON object per line, got list"),
        ("other_jsonl", lambda lines: '{"prompt": "hi", "completion": "there"}\n',
         "{path}:1: missing key 'game_id' (is this a rollout shard?)"),
    ],
)
def test_malformed_shards_name_file_and_line(tmp_path, good_lines, name, text, message):
    shard = tmp_path / "games.jsonl"
    shard.write_text(text(good_lines))
    code, output = _replay(shard)
    assert code == 2
    assert output == f"error: {message.format(path=shard)}\n"


def test_a_missing_shard_is_named(tmp_path):
    assert _replay(tmp_path / "nowhere") == (2, f"error: shard not found: {tmp_path / 'nowhere'}\n")


def test_a_tampered_game_is_a_mismatch_not_a_crash(tmp_path, good_lines):
    """Well-formed rows whose moves no longer produce the recorded transcript: exit 1 and the game is named."""
    shard = tmp_path / "games.jsonl"
    records = [json.loads(line) for line in good_lines]
    records[3]["seed"] += 1  # another deal: the same moves tell another story
    write_shard(shard, records)
    code, output = _replay(shard)
    assert code == 1
    lines = output.splitlines()
    assert len(lines) == 2 and lines[-1] == f"{shard}: 5/6 games verified"
    assert lines[0].startswith(f"MISMATCH {shard}: game 3 (kuhn, seed {records[3]['seed']}): transcript digest ")
