"""`arena play`, `arena replay`, `arena kuhn-policy`: JSON output, digests, and one-line errors for bad input."""

import json

import pytest
from click.testing import CliRunner

from arena.cli import main


def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_play_json_summary():
    result = _invoke("play", "nim", "--p0", "oracle", "--p1", "random", "--games", 20, "--seed", 0, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["games"] == 20 and summary["wins"]["p0"] == 20 and summary["errored"] == 0
    assert {"p0_win_rate", "mean_reward", "invalid_moves", "games_per_sec"} <= set(summary)
    assert summary["p0_win_rate"]["low"] > 0.5


def test_play_kuhn_reports_chips():
    result = _invoke("play", "kuhn", "--p0", "oracle", "--p1", "random", "--games", 200, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert set(summary["mean_chips_per_round"]) == {"p0", "p1"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["play", "chess", "--p0", "random", "--p1", "first"], "unknown game id 'chess'"),
        (["play", "nim", "--p0", "robot", "--p1", "first"], "unknown player spec 'robot'"),
        (["play", "nim", "--p0", "random", "--p1", "first", "--games", "-3"], "--games -3 must be >= 1"),
        (["play", "nim", "--p0", "mlx:/no/such/model", "--p1", "first"], "model directory not found"),
        (["play", "nim", "--p0", "random", "--p1", "first", "--variant", "piles=[0]"], "piles"),
    ],
)
def test_play_bad_input_is_one_clear_line(args, message):
    result = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_replay_verifies_and_catches_tampering(tmp_path):
    shard = tmp_path / "games.jsonl"
    assert _invoke("play", "tictactoe", "--p0", "oracle", "--p1", "random", "--games", 6, "--out", shard,
                   "--json").exit_code == 0
    ok = _invoke("replay", shard)
    assert ok.exit_code == 0 and "6/6 games verified" in ok.output
    records = [json.loads(line) for line in shard.read_text().splitlines()]
    records[2]["transcript_digest"] = "0" * 64
    shard.write_text("".join(json.dumps(r) + "\n" for r in records))
    bad = _invoke("replay", shard)
    assert bad.exit_code == 1 and "MISMATCH" in bad.output and "game 2" in bad.output


def test_replay_names_file_and_line_of_a_malformed_shard(tmp_path):
    shard = tmp_path / "games.jsonl"
    shard.write_text('{"game_id": "nim"}\n')
    result = _invoke("replay", shard)
    assert result.exit_code == 2 and f"{shard}:1" in result.output and "missing key" in result.output
    shard.write_text('{"game_id": "nim"}')
    assert "truncated" in _invoke("replay", shard).output


def test_kuhn_policy_and_exploitability(base_model_dir, tmp_path):
    result = _invoke("kuhn-policy", base_model_dir, "--json")
    assert result.exit_code == 0, result.output
    policy = json.loads(result.stdout)
    assert len(policy) == 12 and all(0.0 <= p <= 1.0 for p in policy.values())
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy))
    report = json.loads(_invoke("exploitability", path).stdout)
    assert 0.0 < report["exploitability"] < 1.0


def test_play_whose_games_all_error_says_why_in_one_line(base_model_dir, monkeypatch):
    from arena.players.mlx import MLXPlayer

    def act_batch(self, observations):
        raise KeyError((34, 1))

    monkeypatch.setattr(MLXPlayer, "act_batch", act_batch)
    result = _invoke("play", "kuhn", "--p0", f"mlx:{base_model_dir}", "--p1", "random", "--games", 4, "--json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["errored"] == 4  # the summary is still printed
    assert result.stderr.endswith(f"\nerror: all 4 games of kuhn (mlx:{base_model_dir} vs random) errored; the first "
                             "(seed 0): KeyError: (34, 1)\n")
    assert "Traceback" not in result.output and "ZeroDivision" not in result.output
