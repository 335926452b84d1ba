"""``textarena:ENV_ID``: any two-player TextArena env, generation players only, under TextArena's invalid-move rule."""

import json
from pathlib import Path

import pytest

from arena.core.errors import ArenaError
from arena.games.registry import make_game, replay
from arena.games.variants import check_game_id, validate_variant
from arena.play.match import duplicate_schedule, play_match
from arena.players.scripted import make_scripted

SURVEY = Path(__file__).resolve().parents[1] / "studies" / "results" / "textarena_envs.json"
PLAYABLE = [row["id"] for row in json.loads(SURVEY.read_text()) if row["status"] == "plays"]


def test_ids_and_variants():
    assert check_game_id("textarena:Chess-v0-long") == "textarena:Chess-v0-long"
    assert validate_variant("textarena:Chess-v0", None) == {}
    for bad in ("textarena:", "textarena:bad id", "chess"):
        with pytest.raises(ArenaError, match="textarena:ENV_ID"):
            check_game_id(bad)
    with pytest.raises(ArenaError, match="unknown textarena variant key"):
        validate_variant("textarena:Chess-v0", {"rounds": 2})
    with pytest.raises(ArenaError, match="cannot start as a two-player TextArena game"):
        make_game("textarena:NoSuchGame-v0", 0)


def test_only_frontier_players_play_it():
    with pytest.raises(ArenaError, match=r"lists no legal actions.*\['random'\]"):
        play_match("textarena:TicTacToe-v0", (make_scripted("random"), make_scripted("random")),
                   duplicate_schedule([0], 1), progress=False)


def test_a_frontier_player_plays_it_end_to_end(tmp_path, monkeypatch):
    from fault_server import FaultServer, Reply

    from arena.players.config import FrontierConfig
    from arena.players.frontier import FrontierPlayer

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fast = FrontierConfig(timeout_s=2.0, max_retries=0, backoff_s=0.0, max_wait_s=0.0)
    reply = "I take the centre: [4]"
    with FaultServer(Reply(content=reply)) as server:
        a, b = FrontierPlayer("a", server.base_url, fast), FrontierPlayer("b", server.base_url, fast)
        records = play_match("textarena:TicTacToe-v0", (a, b), duplicate_schedule([5], 2), progress=False)
    for record in records:
        assert not record["errored"]
        # The reply goes to TextArena as written. Seat 0 takes cell 4; seat 1 asks for it too (invalid), is
        # re-prompted with TextArena's reason, asks again and forfeits.
        assert record["actions"] == [reply] * 3 and record["forfeit_by"] == 1 and record["rewards"] == [1.0, -1.0]
        assert "attempted an invalid move" in record["decisions"][-1]["text"]
        assert all(d["legal"] == [] for d in record["decisions"])
        result = replay(record["game_id"], record["variant"], record["seed"], record["actions"])
        assert result.transcript_digest == record["transcript_digest"]


@pytest.mark.parametrize("env_id", PLAYABLE)
def test_every_surveyed_env_plays_a_few_moves(env_id):
    game = make_game(f"textarena:{env_id}", 0)
    for _ in range(4):
        if game.done:
            break
        observation = game.observation()
        assert observation.text and observation.legal_actions == () and observation.compact == observation.text
        game.step("zq")
    if game.done:
        assert game.result().rewards is not None
