"""Hostile frontier specs and endpoints: control or bidi characters and dot segments are refused in one line, a
redirect is never followed, a server answering as another model is recorded in the card and warned about."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fault_server import FaultServer, Reply

from arena.eval.config import EvalConfig, GameEntry
from arena.eval.errors import TournamentError
from arena.eval.scorecards import card_digest, make_scorecard, verify_card
from arena.play.match import duplicate_schedule, play_match
from arena.players.build import make_player
from arena.players.config import FrontierConfig
from arena.players.frontier import FrontierPlayer
from arena.players.specs import FrontierError, parse_spec

FAST = FrontierConfig(timeout_s=0.5, max_retries=1, backoff_s=0.01, max_wait_s=0.05)
LEGAL_REPLY = "[call] [check]"


@pytest.fixture(autouse=True)
def _own_cache_and_no_real_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "arena-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.parametrize("model", ["m\x00\n\u202e", "m\u202e", "gpt\u200b-4o", "m\u2028x", "m\u00a0x", "m\ufeff"])
def test_a_model_name_with_control_bidi_or_invisible_characters_is_refused(model):
    spec = f"openai:{model}@http://127.0.0.1:9/v1"
    with pytest.raises(FrontierError, match="model name") as error:
        parse_spec(spec)
    assert "\n" not in str(error.value) and "\u202e" not in str(error.value)
    with pytest.raises(FrontierError):
        FrontierPlayer(model, "http://127.0.0.1:9/v1", FAST)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/../../etc/x", "http://127.0.0.1:9/v1/..", "http://h/./v1",
                                 "http://h/v1/%2e%2e/x", "http://h/v1/%2E%2e", "http://h/v\u202e1", "http://h/v 1",
                                 "http://h/v1\\..\\x"])
def test_a_base_url_with_dot_segments_or_odd_characters_is_refused(url):
    with pytest.raises(FrontierError, match="endpoint URL") as error:
        parse_spec(f"openai:m@{url}")
    assert "\n" not in str(error.value)


def test_a_plain_spec_still_parses():
    assert parse_spec("openai:org/model-7b:q4 v2@https://api.example.com/v1/") == (
        "org/model-7b:q4 v2", "https://api.example.com/v1")


def test_a_card_whose_player_spec_holds_control_characters_is_refused():
    from tourney_fakes import ScriptedPlay

    from arena.eval.tournament import run_tournament

    config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [1000, 1004]})
    card = run_tournament(config, ["random", "oracle"], ScriptedPlay({"oracle": 2.0, "random": 1.0})).cards[0]
    card["players"][0]["spec"] = "openai:m\u202e@http://127.0.0.1:9/v1"
    card["digest"] = card_digest(card)
    with pytest.raises(TournamentError, match="control, format or invisible"):
        verify_card(card, "c.card.json")


class _Redirect(ThreadingHTTPServer):
    """Answers every request with a 307 to ``target`` (another port), as a hostile or misconfigured proxy would."""

    daemon_threads = True

    def __init__(self, target: str) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                return

            def _redirect(self) -> None:
                outer.hits += 1
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(307)
                self.send_header("Location", target + self.path.removeprefix("/v1"))
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect

        self.hits = 0
        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def test_a_redirect_to_another_port_is_refused_not_followed():
    with FaultServer(Reply(content=LEGAL_REPLY)) as target:
        proxy = _Redirect(target.base_url)
        try:
            player = FrontierPlayer("m", proxy.base_url, FAST)
            records = play_match("kuhn", (player, make_player("random")), duplicate_schedule(range(2), 2),
                                 progress=False)
            with pytest.raises(FrontierError, match="redirect"):
                player.check_endpoint()
        finally:
            proxy.close()
        assert target.requests == [] and proxy.hits >= 1
    assert all(record["errored"] for record in records)
    error = records[0]["error"]
    assert "redirect" in error and target.base_url.rsplit("/", 1)[0] in error, error


def test_a_server_answering_as_another_model_is_recorded_in_the_card_and_warned(caplog):
    with FaultServer(Reply(content=LEGAL_REPLY, model="other-model")) as server:
        player = FrontierPlayer("m", server.base_url, FAST)
        with caplog.at_level(logging.WARNING, logger="arena.players.frontier"):
            records = play_match("kuhn", (player, make_player("random")), duplicate_schedule(range(2), 4),
                                 progress=False)
    assert not any(record["errored"] for record in records)
    assert any("other-model" in message and "'m'" in message for message in caplog.messages), caplog.messages
    config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [0, 4]})
    records = [dict(record, seed=seed) for record, seed in zip(records, range(4), strict=True)]
    card = make_scorecard(config, GameEntry("kuhn", {}), player.spec, "random", records,
                          code={"entry": "x.py", "code_digest": "d"})
    entry = card["players"][0]
    assert entry["served_models"] == ["other-model"] and entry["served_model_differs"] is True
    assert "served_models" not in card["players"][1]
    verify_card(json.loads(json.dumps(card)))


def test_a_server_answering_as_the_requested_model_marks_no_difference():
    with FaultServer(Reply(content=LEGAL_REPLY, model="m")) as server:
        player = FrontierPlayer("m", server.base_url, FAST)
        records = play_match("kuhn", (player, make_player("random")), duplicate_schedule(range(2), 4),
                             progress=False)
    config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [0, 4]})
    records = [dict(record, seed=seed) for record, seed in zip(records, range(4), strict=True)]
    card = make_scorecard(config, GameEntry("kuhn", {}), player.spec, "random", records,
                          code={"entry": "x.py", "code_digest": "d"})
    assert card["players"][0]["served_models"] == ["m"] and card["players"][0]["served_model_differs"] is False
