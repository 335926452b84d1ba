"""params.yaml's ``frontier:`` section reaches every frontier player built from a spec: stages and `arena play`.

Each path is driven end to end against the local fault server, which records what it was sent: the call cap
must hold and the request must carry the section's system prompt, temperature and max_tokens.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fault_server import FaultServer, Reply

from arena.cli import main
from arena.core.config import parse_params
from arena.players.config import FrontierConfig, MLXPlayerConfig
from arena.players.frontier import FrontierPlayer

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PROMPT = "Think it through, then give your move."
FRONTIER = {"max_calls": 1, "max_retries": 0, "temperature": 0.25, "max_tokens": 7, "view": "compact",
            "system_prompt": SYSTEM_PROMPT, "timeout_s": 2.0}
CAP_ERROR = "call cap reached (max_calls=1)"


@pytest.fixture(autouse=True)
def _own_cache_and_no_real_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "arena-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _completions(server: FaultServer) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def _assert_params_reached_the_server(server: FaultServer) -> None:
    """One completion (the cap), sent with the section's prompt, sampling settings and view."""
    (body,) = _completions(server)
    assert body["temperature"] == FRONTIER["temperature"] and body["max_tokens"] == FRONTIER["max_tokens"]
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][1]["content"].startswith("card: ")  # the compact view, not the full transcript


def _stage_params(tmp_path: Path, edits: dict) -> Path:
    """The repository's params.yaml with ``edits`` (section -> replacement keys) applied, written to tmp_path."""
    params = parse_params((ROOT / "params.yaml").read_text())
    for section, values in edits.items():
        params[section] = {**(params.get(section) or {}), **values}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def _run_stage(monkeypatch, script: str, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", [script, *args])
    runpy.run_path(str(ROOT / "stages" / script), run_name="__main__")


def test_helper_reads_the_section_and_defaults_when_absent():
    from arena.eval.config import TournamentConfig
    from arena.players.build import PlayerConfigs, load_frontier_config, player_configs

    section = TournamentConfig(view="full", temperature=0.5)
    configs = player_configs({"frontier": FRONTIER}, section)
    assert configs == PlayerConfigs(MLXPlayerConfig(view="full", temperature=0.5), FrontierConfig(**FRONTIER))
    assert load_frontier_config({}) == FrontierConfig() == player_configs({}, section).frontier


def test_the_tournament_stage_uses_the_frontier_section(tmp_path, monkeypatch):
    with FaultServer(Reply(content="[check]")) as server:
        spec = f"openai:m@{server.base_url}"
        params = _stage_params(tmp_path, {
            "eval": {"games": ["kuhn"], "seeds": [9_000_000, 9_000_004]},
            "roundeval": {"games": 2},
            "baseline": {"players": ["random"], "frontier": [spec]},
            "frontier": FRONTIER,
        })
        _run_stage(monkeypatch, "tournament.py", "--params", str(params), "--section", "baseline",
                   "--out", str(tmp_path / "scores"))
        _assert_params_reached_the_server(server)
    written = "".join(p.read_text() for p in sorted((tmp_path / "scores").iterdir()))
    assert CAP_ERROR in written  # every decision after the first ran into the cap
    expected_pin = FrontierPlayer("m", server.base_url, FrontierConfig(**FRONTIER)).pin()
    cards = [json.loads(p.read_text()) for p in (tmp_path / "scores").glob("*.card.json")]
    assert all(player["pin"] == expected_pin for card in cards for player in card["players"]
               if player["spec"] == spec)


def test_the_shards_stage_uses_the_frontier_section(tmp_path, monkeypatch):
    with FaultServer(Reply(content="[check]")) as server:
        spec = f"openai:m@{server.base_url}"
        params = _stage_params(tmp_path, {
            "shards": {"players": [spec, "random"], "shards": [0], "games_per_shard": 4},
            "frontier": FRONTIER,
        })
        _run_stage(monkeypatch, "shards.py", "--params", str(params), "--shard", "0",
                   "--out", str(tmp_path / "shard"))
        _assert_params_reached_the_server(server)
    assert CAP_ERROR in (tmp_path / "shard" / "games.jsonl").read_text()


def _play(*args: str):
    return CliRunner().invoke(main, ["play", "kuhn", "--p1", "random", "--games", "4", "--seed", "7200", "--json",
                                     *args])


def test_arena_play_uses_the_frontier_section_of_params(tmp_path):
    params = tmp_path / "custom.yaml"
    params.write_text(yaml.safe_dump({"frontier": FRONTIER}))
    with FaultServer(Reply(content="[check]")) as server:
        result = _play("--p0", f"openai:m@{server.base_url}", "--params", str(params))
        assert result.exit_code == 1, result.output  # every game ran into the cap: nothing measured
        assert "error: all 4 games of kuhn" in result.stderr and "call cap reached (max_calls=1)" in result.stderr
        _assert_params_reached_the_server(server)
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["errored"] >= 3  # one call for all four games: the rest ran into the cap


def test_arena_play_reads_params_yaml_in_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"frontier": FRONTIER}))
    monkeypatch.chdir(tmp_path)
    with FaultServer(Reply(content="[check]")) as server:
        result = _play("--p0", f"openai:m@{server.base_url}")
        assert result.exit_code == 1, result.output  # every game ran into the cap (max_calls: 1)
        _assert_params_reached_the_server(server)


def test_arena_play_without_params_uses_the_defaults_and_a_missing_params_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no params.yaml here: FrontierConfig's defaults
    with FaultServer(Reply(content="[check]")) as server:
        assert _play("--p0", f"openai:m@{server.base_url}").exit_code == 0
        bodies = _completions(server)
    assert len(bodies) > 1 and bodies[0]["max_tokens"] == FrontierConfig().max_tokens
    missing = _play("--p0", "random", "--params", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "nope.yaml not found" in missing.output and "Traceback" not in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"frontier": {"max_calls": -1}}))
    refused = _play("--p0", "random", "--params", str(bad))
    assert refused.exit_code == 2 and "frontier.max_calls = -1" in refused.output
