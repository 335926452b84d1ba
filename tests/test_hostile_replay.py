"""Hostile records through `arena replay`: extra actions and huge variants are one line each, errored games are
never counted as verified."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.play.match import duplicate_schedule, play_match
from arena.play.records import encode_record
from arena.players.build import make_player


@pytest.fixture(scope="module")
def good_records() -> list[dict]:
    records = play_match("kuhn", (make_player("random"), make_player("first")), duplicate_schedule(range(2), 4),
                         progress=False)
    assert not any(r["errored"] for r in records)
    return records


def _shard(tmp_path, records) -> str:
    (tmp_path / "games.jsonl").write_text("".join(encode_record(r) + "\n" for r in records))
    return str(tmp_path)


def _replay(path):
    result = CliRunner().invoke(main, ["replay", path])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_extra_actions_are_a_mismatch_line_naming_the_game(tmp_path, good_records):
    records = [dict(r) for r in good_records]
    records[1]["actions"] = [*records[1]["actions"], "[check]"]
    code, output = _replay(_shard(tmp_path, records))
    assert code == 1
    assert "MISMATCH" in output and "game 1" in output and "extra actions" in output, output
    assert "3/4 games verified" in output


@pytest.mark.parametrize(("game_id", "variant"), [
    ("liarsdice", {"dice": 10**9}), ("nim", {"piles": [10**12]}), ("nim", {"piles": [1] * 100000}),
    ("kuhn", {"rounds": 10**9}), ("nim", {"piles": "x"}),
])
def test_a_huge_or_bad_variant_is_refused_before_it_is_built(tmp_path, good_records, game_id, variant):
    record = dict(good_records[0], game_id=game_id, variant=variant)
    started = time.monotonic()
    code, output = _replay(_shard(tmp_path, [record, *good_records[1:]]))
    assert time.monotonic() - started < 10
    assert code == 1 and "MISMATCH" in output and "game 0" in output, output
    assert "3/4 games verified" in output


def test_too_many_actions_are_refused(tmp_path, good_records):
    record = dict(good_records[0], actions=["[check]"] * 100000)
    code, output = _replay(_shard(tmp_path, [record]))
    assert code == 1 and "actions" in output and "0/1 games verified" in output, output


def test_an_errored_record_is_not_counted_as_verified(tmp_path, good_records):
    records = [dict(r) for r in good_records]
    records[2] = dict(records[2], errored=True, error="endpoint down")
    code, output = _replay(_shard(tmp_path, records))
    assert code == 0, output
    assert f"{tmp_path}: 3/4 games verified (1 errored, not replayable)" in output, output
