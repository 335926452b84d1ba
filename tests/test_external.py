"""The exported environments' game driver: the schedule, prompts, reply parsing, re-prompts, records, the probe gate."""

import pytest

from arena.games.registry import replay
from arena.play.config import ProbeConfig
from arena.play.external import ROLES, ExternalGame, game_task, play_external
from arena.play.match import duplicate_schedule, play_match
from arena.play.probe import run_probe
from arena.players.scripted import make_scripted


def test_tasks_swap_seats_and_count_seeds_from_the_start():
    tasks = [game_task("kuhn", {}, 100, k) for k in range(4)]
    assert [t.seed for t in tasks] == [100, 101, 102, 103]
    assert [t.seat_of("player_a") for t in tasks] == [0, 1, 0, 1]
    assert [t.seat_of("player_b") for t in tasks] == [1, 0, 1, 0]
    assert all(t.role_of(t.seat_of(role)) == role for t in tasks for role in ROLES)
    assert tasks[0].variant == {"rounds": 1}  # the full variant, defaults filled in
    with pytest.raises(ValueError, match="task index -1"):
        game_task("kuhn", {}, 0, -1)
    with pytest.raises(ValueError, match="unknown variant key|rounds"):
        game_task("kuhn", {"rounds": 0}, 0, 0)


def test_free_text_replies_are_parsed_and_an_illegal_one_is_reprompted():
    game = ExternalGame(game_task("kuhn", {}, 7, 0), {"player_a": "a", "player_b": "b"})
    first = game.prompt()
    assert "Legal actions: [check] [bet]" in first and "not a legal move" not in first
    assert game.submit("I think I'll [pass] for now") == "I think I'll [pass] for now"
    again = game.prompt()
    assert again.startswith("Your reply \"I think I'll [pass] for now\" is not a legal move here")
    assert game.submit("Let me think... <answer>[Check]</answer>") == "[check]"
    assert "not a legal move" not in game.prompt()  # the other seat's turn, or a fresh turn


def test_a_finished_game_records_what_replay_derives():
    game = ExternalGame(game_task("tictactoe", {}, 3, 1), {"player_a": "a", "player_b": "b"})
    while not game.done:
        game.submit(f"my move: {game.game.observation().legal_actions[0]}")
    record = game.record()
    result = replay("tictactoe", {}, record["seed"], record["actions"])
    assert record["transcript_digest"] == result.transcript_digest
    assert record["players"] == ["b", "a"]  # task 1: role A sits in seat 1
    assert game.reward("player_a") == result.rewards[1] and game.reward("player_b") == result.rewards[0]


def test_a_stopped_game_is_errored_and_scores_nobody():
    game = ExternalGame(game_task("nim", {}, 0, 0), {"player_a": "a", "player_b": "b"})
    game.stop("player_a's run ended")
    record = game.record()
    assert record["errored"] and record["transcript_digest"] is None
    assert game.reward("player_a") == game.reward("player_b") == 0.0


def test_play_external_matches_play_match_for_exact_replies():
    """Players that reply with an exact legal action play the same games either way."""
    players = (make_scripted("oracle"), make_scripted("random"))
    schedule = duplicate_schedule(list(range(6)), 12)
    ours = play_external("kuhn", players, schedule)
    theirs = play_match("kuhn", players, schedule, progress=False)
    for a, b in zip(ours, theirs, strict=True):
        assert (a["transcript_digest"], a["rewards"], a["players"]) == (b["transcript_digest"], b["rewards"],
                                                                        b["players"])


def test_the_probe_gate_passes_through_the_exported_env():
    checks = run_probe(ProbeConfig(games=("tictactoe", "nim", "liarsdice"), games_per_check=100), play=play_external)
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
    assert {c.name for c in checks} >= {"staller vs random", "spammer vs random"}


@pytest.mark.slow
def test_the_probe_gate_passes_through_the_exported_env_on_every_game_at_default_size():
    """Kuhn needs its thousands of hands: the oracle's edge over random is +1/9 chip against a spread of ~1.3."""
    checks = run_probe(ProbeConfig(games=("kuhn", "tictactoe", "nim", "liarsdice", "leduc")), play=play_external)
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
