"""Frontier faults at the game level: real matches against random on Kuhn, with the fault server as the endpoint.

A fault errors the games it hits (counted for neither side), finished games and cached replies survive,
retries and the call cap stay bounded; garbage moves twice in a row lose by forfeit (a loss, not an error);
the API key reaches the server and nothing else.
"""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner
from fault_server import FaultServer, Reply

from arena.cli import main
from arena.core.paths import cache_dir
from arena.play.match import duplicate_schedule, play_match
from arena.play.records import read_shard, write_shard
from arena.play.stats import summarize_match
from arena.players.build import make_player
from arena.players.config import FrontierConfig
from arena.players.frontier import MAX_REPLY_BYTES, FrontierPlayer

# Always a legal Kuhn move: parse_action plays the one legal action it names ([call] facing a bet, else [check]).
LEGAL_REPLY = "[call] [check]"
FAST = FrontierConfig(timeout_s=0.2, max_retries=2, backoff_s=0.02, max_wait_s=0.2)
ATTEMPTS = FAST.max_retries + 1
# Three deals from both seats; the first four games are played (and cached) before the endpoint breaks.
SCHEDULE = duplicate_schedule(range(7000, 7003), 6)
GOOD_GAMES = 4
CANARY = "sk-canary-5b0e2d7c9a41f3"


class Sleeps(list):
    """Records every backoff wait (and skips it: the schedule, not the clock, is under test here)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def cache_files() -> dict[str, bytes]:
    root = cache_dir() / "frontier"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def _own_cache_and_no_real_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "arena-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _match(player: FrontierPlayer, schedule) -> list[dict]:
    return play_match("kuhn", (player, make_player("random")), schedule, progress=False)


# name: (reply while broken, or None for "server gone"; the reason each errored game records)
FAULTS = {
    "connection_refused": (None, "cannot connect to {url}"),
    "read_timeout": (Reply("timeout", delay_s=0.6), "timed out after 0.2 s"),
    "http429_retry_after": (Reply("status", status=429, retry_after="0.05"), "HTTP 429"),
    "http500": (Reply("status", status=500), "HTTP 500"),
    "malformed_json": (Reply("malformed"), "malformed JSON reply"),
    "empty_choices": (Reply("empty_choices"), "reply has no choices"),
    "one_megabyte": (Reply("huge", size=1_000_000), f"reply larger than {MAX_REPLY_BYTES} bytes"),
    "raw_control_characters": (Reply("raw_control"), "malformed JSON reply"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_faults_error_games_and_finished_games_survive(fault):
    broken, reason = FAULTS[fault]
    with FaultServer(Reply(content=LEGAL_REPLY)) as server:
        url = server.base_url
        healthy = _match(FrontierPlayer("m", url, FAST), SCHEDULE[:GOOD_GAMES])
        assert not any(r["errored"] for r in healthy)
        cached = cache_files()
        seen_healthy = server.completions_seen()
        assert len(cached) == seen_healthy > 0
        # The cap leaves room for one full retry sequence plus one attempt: the second broken game hits it.
        capped = FrontierConfig(**{**FAST.__dict__, "max_calls": ATTEMPTS + 1})
        sleeps = Sleeps()
        player = FrontierPlayer("m", url, capped, sleep=sleeps)
        if broken is None:
            server.__exit__(None, None, None)
        else:
            server.default = broken
        records = _match(player, SCHEDULE)
        if broken is not None:
            assert server.completions_seen() - seen_healthy == capped.max_calls

    reason = reason.format(url=url)
    # Finished games replay from the cache into the very same records; the broken ones are errored, not scored.
    assert records[:GOOD_GAMES] == healthy
    assert [r["errored"] for r in records] == [False] * GOOD_GAMES + [True, True]
    # Which broken game asks first depends on who opens; one spends every retry, the other runs into the cap.
    assert sorted(r["error"] for r in records[GOOD_GAMES:]) == sorted(
        [f"{reason} (after {ATTEMPTS} attempts)", f"call cap reached (max_calls={capped.max_calls}) after {reason}"])
    assert all(r["rewards"] is None and r["forfeit_by"] is None for r in records[GOOD_GAMES:])
    # Bounded: never more real attempts than the cap, and every wait within max_wait_s.
    assert player.stats.calls == capped.max_calls and player.stats.errors == 2
    assert player.stats.cache_hits == seen_healthy
    assert len(sleeps) == ATTEMPTS - 1 and all(0 < s <= FAST.max_wait_s for s in sleeps)
    if fault == "http429_retry_after":
        assert sleeps == [0.05, 0.05]  # Retry-After beats the 0.02/0.04 backoff
    assert cache_files() == cached

    summary = summarize_match(records, player.spec, "random")
    before = summarize_match(healthy, player.spec, "random")
    assert summary["games"] == len(SCHEDULE) and summary["errored"] == 2
    assert sum(summary["wins"].values()) == GOOD_GAMES
    for key in ("wins", "p0_win_rate", "mean_reward", "invalid_moves", "mean_chips_per_round"):
        assert summary[key] == before[key], key


GARBAGE = "\x1b[31mI shall go all in\x07\u202e"


def test_garbage_twice_in_a_row_loses_by_forfeit():
    with FaultServer(Reply("control_chars", content=GARBAGE)) as server:
        player = FrontierPlayer("m", server.base_url, FAST)
        records = _match(player, SCHEDULE[:4])
        requests = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    # Each game: the first garbage move is re-prompted with TextArena's reason, the second ends the game.
    re_prompts = [body for body in requests if "attempted an invalid move" in body["messages"][1]["content"]]
    assert len(requests) == 8 and len(re_prompts) == 4
    for record in records:
        seat = record["players"].index(player.spec)
        assert not record["errored"] and record["error"] is None
        assert record["forfeit_by"] == seat and record["invalid_moves"][seat] == 2
        assert record["rewards"][seat] < record["rewards"][1 - seat]
        assert "forfeited by invalid moves in a row" in record["reason"]
    assert player.stats.errors == 0
    summary = summarize_match(records, player.spec, "random")
    assert summary["errored"] == 0
    assert summary["wins"] == {"p0": 0, "p1": 4, "draws": 0}
    assert summary["invalid_moves"] == {"p0": 8, "p1": 0}


def test_one_garbage_reply_is_re_prompted_and_the_game_goes_on():
    with FaultServer(Reply(content=LEGAL_REPLY)) as server:
        server.script(Reply("control_chars", content=GARBAGE))
        player = FrontierPlayer("m", server.base_url, FAST)
        (record,) = _match(player, SCHEDULE[:1])
        requests = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    seat = record["players"].index(player.spec)
    assert not record["errored"] and record["forfeit_by"] is None and record["rewards"] is not None
    assert record["invalid_moves"][seat] == 1
    assert "attempted an invalid move" in requests[1]["messages"][1]["content"]


# ---------------------------------------------------------------- secrets


def _files_holding(needle: bytes, *roots) -> list[str]:
    return [str(p) for root in roots for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


def test_the_key_reaches_the_server_and_nothing_else(tmp_path, monkeypatch, caplog):
    """A match with faults that echo the Authorization header back, its shard, `arena play`: no canary anywhere."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    out = tmp_path / "out"
    with FaultServer(Reply(content=LEGAL_REPLY)) as server, caplog.at_level(logging.DEBUG):
        server.script(Reply("status", status=500, echo_auth=True), Reply("status", status=401, echo_auth=True),
                      *[Reply("status", status=503, echo_auth=True)] * ATTEMPTS)
        server.models_status = 200
        player = FrontierPlayer("m", server.base_url, FAST, sleep=Sleeps())
        records = _match(player, SCHEDULE)
        write_shard(out / "match.jsonl", records)
        summary = summarize_match(records, player.spec, "random")
        result = CliRunner().invoke(main, ["play", "kuhn", "--p0", f"openai:m@{server.base_url}", "--p1", "random",
                                           "--games", "4", "--seed", "7100", "--out", str(out / "cli.jsonl"),
                                           "--json"])
        sent = [r.headers.get("authorization") for r in server.requests]
    assert result.exit_code == 0, result.output
    assert sum(r["errored"] for r in records) == 2  # the 401 and the run of 503s each errored a game
    assert sent and all(header == f"Bearer {CANARY}" for header in sent)
    assert len(read_shard(out / "cli.jsonl")) == 4 and cache_files()
    assert _files_holding(CANARY.encode(), tmp_path) == []
    texts = [json.dumps(records), json.dumps(summary), result.output, caplog.text, repr(player),
             json.dumps(player.pin())]
    assert [t for t in texts if CANARY in t] == []


def test_an_endpoint_echoing_the_key_in_good_replies_stores_none_of_it(tmp_path, monkeypatch, caplog):
    """Issue 47 item 3: the key echoed in a reply's text (recorded as the invalid action), its model id, finish
    reason and /models ids never reaches the cache, the shard, the logs or the CLI's output."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    out = tmp_path / "out"
    with FaultServer(Reply(content="my key is", echo_auth=True)) as server, caplog.at_level(logging.DEBUG):
        player = FrontierPlayer("m", server.base_url, FAST, sleep=Sleeps())
        served = player.check_endpoint()
        records = _match(player, SCHEDULE[:2])
        write_shard(out / "match.jsonl", records)
        result = CliRunner().invoke(main, ["play", "kuhn", "--p0", f"openai:m@{server.base_url}", "--p1", "random",
                                           "--games", "2", "--seed", "7100", "--out", str(out / "cli.jsonl"),
                                           "--json"])
        again = _match(FrontierPlayer("m", server.base_url, FAST, sleep=Sleeps()), SCHEDULE[:2])  # from the cache
    assert result.exit_code == 0, result.output
    assert server.requests and all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in server.requests)
    assert cache_files() and not any(r["errored"] for r in records)
    assert _files_holding(CANARY.encode(), tmp_path) == []
    texts = [json.dumps(records), json.dumps(again), result.output, caplog.text, json.dumps(served),
             str(player.served_model)]
    assert [t for t in texts if CANARY in t] == []
    assert "[redacted]" in json.dumps(records)  # the echo is visible as such, not silently dropped


def test_a_tournament_with_a_frontier_player_builds_its_leaderboard(tmp_path):
    """Regression: the pin must not change once the server has answered, or the cards disagree about the player."""
    from arena.eval.config import EvalConfig, TournamentConfig
    from arena.eval.leaderboard import build_leaderboard
    from arena.eval.runner import run_stage
    from arena.eval.scorecards import load_archive

    with FaultServer(Reply(content=LEGAL_REPLY)) as server:
        spec = f"openai:m@{server.base_url}"
        config = TournamentConfig(players=("random", "first"), frontier=(spec,))
        evaluation = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [9_000_000, 9_000_006]})
        assert run_stage(evaluation, config, [range(0, 1_000_000)], tmp_path / "cards") == {}
    board = build_leaderboard(load_archive([tmp_path / "cards"]))
    assert spec in json.dumps(board)


# Reasoning-style replies (formatted with the request's legal actions) -> which legal action each must play.
REASONING = {
    "last_mention": ("{0} is the safe move, but {1} wins more chips.", 1),
    "changed_mind": ("I'll play {1}. Hmm, on reflection, no: {0}.", 0),
    "answer_tag": ("{0} looks tempting, but <answer>{1}</answer>, definitely not {0}.", 1),
    "last_answer_tag": ("<answer>{1}</answer>? Wait. {1} loses here. <answer>{0}</answer>", 0),
}


@pytest.mark.parametrize("style", list(REASONING))
def test_a_reasoning_reply_plays_its_final_answer(style):
    template, index = REASONING[style]
    with FaultServer(Reply(template=template)) as server:
        player = FrontierPlayer("m", server.base_url, FAST)
        records = _match(player, SCHEDULE)
    moves = [(d["legal"], d["action"]) for r in records for d in r["decisions"]
             if r["players"][d["player"]] == player.spec]
    assert moves and all(action == legal[index] for legal, action in moves), moves
    assert not any(r["errored"] for r in records)
    assert all(r["invalid_moves"] == [0, 0] for r in records)
