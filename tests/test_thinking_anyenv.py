"""A thinking local player plays ``textarena:ENV_ID`` games, which list no legal actions: reasoning, then a
free-text answer that TextArena judges; deterministic, recorded and replayable. A direct-scoring player is refused."""

import json

import pytest

from arena.core.errors import ArenaError
from arena.games.registry import make_game, replay
from arena.play.match import duplicate_schedule, play_match
from arena.play.records import verify_records
from arena.players.config import MLXPlayerConfig, ThinkConfig
from arena.players.mlx import MLXPlayer


def _thinker(path, **think):
    return MLXPlayer(path, MLXPlayerConfig(think=ThinkConfig(**{"max_tokens": 8, **think})))


def _play(player, game, games=2, seeds=(3,)):
    return play_match(game, (player, player), duplicate_schedule(list(seeds), games), progress=False)


def _check(records):
    for record in records:
        assert not record["errored"] and record["reasoning_digest"]
        assert all(d["legal"] == [] and isinstance(d["reasoning"], str) and d["logprob"] is None
                   for d in record["decisions"])
        assert record["forfeit_by"] is not None or record["reason"]  # ended: a win, a loss or a forfeit
        result = replay(record["game_id"], record["variant"], record["seed"], record["actions"])
        assert result.transcript_digest == record["transcript_digest"]
    assert not verify_records(records)


@pytest.mark.parametrize("game", ["textarena:TicTacToe-v0", "textarena:ConnectFour-v0"])
def test_games_end_same_seeds_same_bytes_and_replay(standin_dir, game):
    first = _play(_thinker(standin_dir), game)
    _check(first)
    assert json.dumps(first) == json.dumps(_play(_thinker(standin_dir), game))


def test_the_embedded_models_template_answers_after_its_marker(base_model_dir):
    """The embedded tiny model has no think block: its reasoning ends at 'Answer:' (or the budget), then it writes."""
    records = _play(_thinker(base_model_dir), "textarena:TicTacToe-v0")
    _check(records)
    assert json.dumps(records) == json.dumps(_play(_thinker(base_model_dir), "textarena:TicTacToe-v0"))


def test_the_answer_is_read_as_a_frontier_reply_and_judged_by_textarena(standin_dir, monkeypatch):
    player = _thinker(standin_dir)
    said = player.tokenizer.encode("the centre is best <answer>[4]</answer> ok", add_special_tokens=False)
    calls = []

    def scripted(model, shape, prompts, keys, think, temperature, stops, budget):
        calls.append(list(keys))
        assert think.max_tokens == 8 and temperature == player.config.temperature
        return [list(said) for _ in prompts]

    monkeypatch.setattr("arena.players.scoringpass.answer", scripted)
    records = _play(player, "textarena:TicTacToe-v0")
    for record in records:
        # Seat 0 takes cell 4; seat 1 asks for it too (invalid), is re-prompted with TextArena's reason (a new
        # decision key, so a new reasoning and answer), asks again and forfeits.
        assert record["actions"] == ["[4]"] * 3 and record["forfeit_by"] == 1 and record["rewards"] == [1.0, -1.0]
        assert "attempted an invalid move" in record["decisions"][-1]["text"]
    assert len({key for batch in calls for key in batch}) == sum(len(batch) for batch in calls)
    _check(records)


def test_a_direct_scoring_player_is_refused_in_one_line(standin_dir):
    direct = MLXPlayer(standin_dir, MLXPlayerConfig())
    with pytest.raises(ArenaError, match=r"lists no legal actions.*mlx:.*thinking local players") as error:
        play_match("textarena:TicTacToe-v0", (direct, _thinker(standin_dir)), duplicate_schedule([0], 1),
                   progress=False)
    assert "\n" not in str(error.value)
    observation = make_game("textarena:TicTacToe-v0", 0).observation()
    with pytest.raises(ArenaError, match="only scores listed actions: give its section think"):
        direct.act(observation)
