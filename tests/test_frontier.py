"""Frontier player: spec/config checks, action parsing, injected faults, cache, call cap, secrets, a real server."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from email.utils import formatdate
from pathlib import Path

import pytest
from fault_server import FaultServer, Reply, closed_port_url

from arena.core.config import ConfigError, load_section
from arena.core.errors import ArenaError
from arena.core.paths import cache_dir
from arena.games.base import Observation
from arena.players.config import FrontierConfig
from arena.players.frontier import MAX_REPLY_BYTES, FrontierPlayer, parse_retry_after, retry_delay
from arena.players.frontier_reply import MAX_ACTION_CHARS, parse_action
from arena.players.localserver import stop
from arena.players.specs import FrontierError, parse_spec

LEGAL = ("[check]", "[bet]")
# Short timeouts keep the fault tests fast; backoff is real (small) so the gaps between attempts can be measured.
FAST = FrontierConfig(timeout_s=0.2, max_retries=2, backoff_s=0.02, max_wait_s=0.2)


def observation(key: int = 0, compact: str = "card: K\nhistory: p\n") -> Observation:
    return Observation(
        game_id="kuhn",
        player_id=1,
        text=f"[GAME] You are Player 1. Your card: K\n[Player 0] [check]\n{compact}",
        compact=compact,
        legal_actions=LEGAL,
        sample_key=key,
    )


def cache_files() -> dict[str, bytes]:
    root = cache_dir() / "frontier"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class Sleeps(list):
    """Records every backoff wait and really sleeps it, so the server sees the gaps."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        time.sleep(seconds)


@pytest.fixture()
def server():
    with FaultServer() as fault_server:
        yield fault_server


@pytest.fixture(autouse=True)
def _own_cache_and_no_real_key(tmp_path, monkeypatch):
    # Each test counts cache files, so each gets its own cache (conftest's is shared by the session).
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "arena-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# ---------------------------------------------------------------- spec and config


@pytest.mark.parametrize(
    ("spec", "model", "url"),
    [
        ("openai:gpt-4o-mini@https://api.openai.com/v1", "gpt-4o-mini", "https://api.openai.com/v1"),
        ("openai:base@http://127.0.0.1:8080/v1/", "base", "http://127.0.0.1:8080/v1"),
        ("openai:/tmp/m@v2/base@http://localhost:9/v1", "/tmp/m@v2/base", "http://localhost:9/v1"),
    ],
)
def test_parse_spec_splits_model_and_url(spec, model, url):
    assert parse_spec(spec) == (model, url)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("gpt-4o@https://api.openai.com/v1", "must start with 'openai:'"),
        ("openai:gpt-4o", "openai:MODEL@BASE_URL"),
        ("openai:@https://api.openai.com/v1", "openai:MODEL@BASE_URL"),
        ("openai:gpt-4o@ftp://example.com/v1", "openai:MODEL@BASE_URL"),
        ("openai:gpt-4o@https://user:hunter2@example.com/v1", "contains credentials"),
        ("openai:gpt-4o@https://example.com/v1?key=abc", "query or fragment"),
        ("openai:gpt-4o@http://127.0.0.1:99999/v1", "invalid port"),
        ("openai: gpt-4o@http://127.0.0.1:8080/v1", "surrounding spaces"),
    ],
)
def test_parse_spec_rejects_bad_specs_with_a_fix(spec, fragment):
    with pytest.raises(FrontierError) as error:
        parse_spec(spec)
    assert fragment in str(error.value)
    assert isinstance(error.value, ArenaError)
    assert "hunter2" not in str(error.value)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"api_key_env": "sk-live-abc"}, "frontier.api_key_env"),
        ({"max_calls": -1}, "frontier.max_calls"),
        ({"timeout_s": 0.0}, "frontier.timeout_s"),
        ({"max_retries": -1}, "frontier.max_retries"),
        ({"backoff_s": -0.1}, "frontier.backoff_s"),
        ({"backoff_s": 5.0, "max_wait_s": 1.0}, "frontier.max_wait_s"),
        ({"temperature": 2.5}, "frontier.temperature"),
        ({"max_tokens": 0}, "frontier.max_tokens"),
        ({"max_tokens": 100_000}, "frontier.max_tokens"),
        ({"seed": -1}, "frontier.seed"),
        ({"view": "brief"}, "frontier.view"),
        ({"system_prompt": "  "}, "frontier.system_prompt"),
    ],
)
def test_config_errors_name_the_key(overrides, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        FrontierConfig(**overrides)


def test_config_loads_from_a_params_section():
    config = load_section(FrontierConfig, "frontier", {"frontier": {"max_calls": 5, "view": "compact"}})
    assert config == FrontierConfig(max_calls=5, view="compact")
    with pytest.raises(ConfigError, match="unknown key frontier.api_key"):
        load_section(FrontierConfig, "frontier", {"frontier": {"api_key": "sk-live"}})


# ---------------------------------------------------------------- pure helpers


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        ("[bet]", "[bet]"),
        # Reasoning replies: the last legal action named is the answer, within the first pass that finds one.
        ("I think [check] then maybe [bet]", "[bet]"),
        ("I could [check], but I'll [bet]", "[bet]"),
        ("[bet]? On reflection, no: [check]", "[check]"),
        ("[BET]!", "[bet]"),
        ("Check? No: bet, obviously.", "[bet]"),
        ("[check] is safe; I BET", "[check]"),  # an exact match beats a later case-folded or bare one
        ("I will Check.", "[check]"),
        # An answer tag is the final answer: the last tag's content, wherever the reasoning wanders after it.
        ("I could [check], but <answer>[bet]</answer>", "[bet]"),
        ("<answer>[bet]</answer>, definitely not [check]", "[bet]"),
        ("<answer>[check]</answer>? No. <answer>[bet]</answer>", "[bet]"),
        ("<ANSWER> Bet </Answer>", "[bet]"),
        ("[check] is tempting. <answer>\nall in\x07</answer>", "all in"),  # an illegal final answer stays illegal
        ("unclosed <answer>[check] then [bet]", "[bet]"),  # no closed tag: the whole reply is read
        ("alphabet soup", "alphabet soup"),  # "bet" inside a word is not the token
        ("\x00\x1b[31m\x07  go\tall\nin ", "[31m go all in"),
        ("", ""),
    ],
)
def test_parse_action(reply, action):
    assert parse_action(reply, LEGAL) == action


def test_parse_action_prefers_the_longest_action_at_the_same_place():
    assert parse_action("[Bid: 3, 4] please", ("[Bid: 3, 4]", "[Bid: 3, 4]]", "[Call]")) == "[Bid: 3, 4]"
    assert parse_action("take 1 3", ("[1 3]", "[1 2]")) == "[1 3]"
    # The occurrence that ends last wins, the longest on a tie: an action inside a longer one never beats it.
    assert parse_action("take 1 3", ("[3]", "[1 3]")) == "[1 3]"
    bids = ("[Bid: 1, 2]", "[Bid: 1, 2, 3]")
    assert parse_action("[Bid: 1, 2] or [Bid: 1, 2, 3]? [Bid: 1, 2]", bids) == "[Bid: 1, 2]"


def test_parse_action_caps_garbage():
    action = parse_action("garbage " * 1000, LEGAL)
    assert len(action) == MAX_ACTION_CHARS and action.startswith("garbage garbage")


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5", "retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": formatdate(1000.0 + 7, usegmt=True)}, now=1000.0) == 7.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_delay_is_exponential_honours_retry_after_and_is_capped():
    config = FrontierConfig(backoff_s=0.5, max_wait_s=3.0)
    assert [retry_delay(i, None, config) for i in range(4)] == [0.5, 1.0, 2.0, 3.0]
    assert retry_delay(0, 2.5, config) == 2.5
    assert retry_delay(2, 0.1, config) == 2.0
    assert retry_delay(0, 3600.0, config) == 3.0


# ---------------------------------------------------------------- talking to the fault server


def test_good_reply_records_served_model_and_is_cached(server):
    server.default = Reply(content="Sure: [bet]", model="gpt-4o-mini-2024-07-18")
    player = FrontierPlayer("gpt-4o-mini", server.base_url, FAST)
    pin = player.pin()
    assert player.served_model is None
    decision = player.act(observation())
    assert decision.action == "[bet]" and decision.error is None
    assert decision.model_id == "gpt-4o-mini-2024-07-18"
    assert player.pin() == pin  # a reply never changes the pin: a tournament needs one pin per spec
    assert pin["model"] == "gpt-4o-mini" and player.served_model == "gpt-4o-mini-2024-07-18"
    assert pin["endpoint"] == server.base_url and pin["kind"] == "frontier"
    assert player.stats.as_dict() == {"calls": 1, "cache_hits": 0, "errors": 0, "checks": 0}

    sent = server.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "gpt-4o-mini" and sent.body["max_tokens"] == FAST.max_tokens
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert "Legal actions: [check] [bet]" in sent.body["messages"][1]["content"]
    assert sent.headers["authorization"] == "Bearer sk-no-key"  # the dummy: no key variable is set

    (entry,) = cache_files().values()
    assert json.loads(entry)["response"]["model"] == "gpt-4o-mini-2024-07-18"

    again = FrontierPlayer("gpt-4o-mini", server.base_url, FAST)
    assert again.act(observation()) == decision
    assert again.stats.calls == 0 and again.stats.cache_hits == 1 and server.completions_seen() == 1
    assert again.pin() == pin


def test_views_and_request_parameters_change_the_cache_key(server):
    base = FrontierPlayer("m", server.base_url, FAST)
    base.act(observation(key=1))
    assert server.requests[-1].body["messages"][1]["content"].startswith("[GAME]")
    compact = FrontierPlayer("m", server.base_url, FrontierConfig(**{**FAST.__dict__, "view": "compact"}))
    compact.act(observation(key=1))
    assert server.requests[-1].body["messages"][1]["content"].startswith("card: K")
    hotter = FrontierPlayer("m", server.base_url, FrontierConfig(**{**FAST.__dict__, "temperature": 0.5}))
    hotter.act(observation(key=1))
    base.act(observation(key=2))  # another decision: another seed, another sample
    assert server.completions_seen() == 4 and len(cache_files()) == 4
    seeds = [r.body["seed"] for r in server.requests]
    assert seeds[0] == seeds[1] == seeds[2] != seeds[3]
    assert base.pin()["config_hash"] != hotter.pin()["config_hash"] != compact.pin()["config_hash"]


FAULTS = {  # name: (scripted reply, the reason the Decision must give)
    "timeout": (Reply("timeout", delay_s=0.6), "timed out after 0.2 s"),
    "stalled_body": (Reply("stall", delay_s=0.6), "timed out reading the reply after 0.2 s"),
    "dripping_body": (Reply("drip", delay_s=0.05), "reply body too slow"),
    "http429": (Reply("status", status=429, retry_after="0"), "HTTP 429"),
    "http500": (Reply("status", status=500), "HTTP 500"),
    "malformed_json": (Reply("malformed"), "malformed JSON reply"),
    "empty_choices": (Reply("empty_choices"), "reply has no choices"),
    "one_megabyte": (Reply("huge", size=1_000_000), f"reply larger than {MAX_REPLY_BYTES} bytes"),
    "raw_control_characters": (Reply("raw_control"), "malformed JSON reply"),
    "deeply_nested_json": (Reply("nested", size=200_000), "malformed JSON reply"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_an_error_after_bounded_retries_and_keeps_the_cache(server, fault):
    primer = FrontierPlayer("m", server.base_url, FAST)
    assert primer.act(observation(key=100)).action == "[check]"
    before = cache_files()
    assert len(before) == 1

    reply, reason = FAULTS[fault]
    server.script(*[reply] * 10)
    sleeps = Sleeps()
    player = FrontierPlayer("m", server.base_url, FAST, sleep=sleeps)
    decision = player.act(observation(key=1))

    attempts = FAST.max_retries + 1
    assert decision.action == "" and decision.model_id is None
    assert decision.error == f"{reason} (after {attempts} attempts)"
    assert server.completions_seen() == 1 + attempts
    assert player.stats.as_dict() == {"calls": attempts, "cache_hits": 0, "errors": 1, "checks": 0}
    assert sleeps == [FAST.backoff_s, 2 * FAST.backoff_s]
    times = [r.time for r in server.requests[1:]]
    assert all(later - earlier >= wait for earlier, later, wait in zip(times[:-1], times[1:], sleeps, strict=True))
    assert cache_files() == before
    # The good reply cached before the fault is still served, for free.
    assert player.act(observation(key=100)).action == "[check]" and player.stats.cache_hits == 1


def test_one_megabyte_reply_is_cut_off_at_the_cap(server):
    server.script(Reply("huge", size=MAX_REPLY_BYTES - 1000), Reply("huge", size=1_000_000))
    player = FrontierPlayer("m", server.base_url, FrontierConfig(**{**FAST.__dict__, "max_retries": 0}))
    below = player.act(observation(key=1))
    assert below.error is None and below.action == "x" * MAX_ACTION_CHARS
    above = player.act(observation(key=2))
    assert above.error == f"reply larger than {MAX_REPLY_BYTES} bytes (after 1 attempt)"
    assert len(cache_files()) == 1


def test_connection_refused_is_an_error_not_a_crash():
    sleeps = Sleeps()
    url = closed_port_url()
    player = FrontierPlayer("m", url, FAST, sleep=sleeps)
    decision = player.act(observation())
    assert decision.action == "" and decision.error == f"cannot connect to {url} (after 3 attempts)"
    assert player.stats.calls == 3 and sleeps == [0.02, 0.04]
    assert cache_files() == {}
    with pytest.raises(FrontierError, match=f"cannot reach {url}/models .*start the server"):
        player.check_endpoint()


def test_retry_after_is_honoured_and_bounded(server):
    server.script(Reply("status", status=429, retry_after="0.15"), Reply("status", status=429, retry_after="3600"))
    sleeps = Sleeps()
    player = FrontierPlayer("m", server.base_url, FAST, sleep=sleeps)
    decision = player.act(observation())
    assert decision.action == "[check]" and decision.error is None
    assert sleeps == [0.15, FAST.max_wait_s]
    assert player.stats.calls == 3 and len(cache_files()) == 1


def test_recovers_after_a_transient_failure(server):
    server.script(Reply("status", status=503), Reply("malformed"))
    player = FrontierPlayer("m", server.base_url, FAST)
    assert player.act(observation()).action == "[check]"
    assert player.stats.calls == 3 and player.stats.errors == 0 and len(cache_files()) == 1


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(server, status):
    server.script(Reply("status", status=status))
    player = FrontierPlayer("m", server.base_url, FAST)
    decision = player.act(observation())
    assert decision.error == f"HTTP {status} (after 1 attempt)"
    assert server.completions_seen() == 1


def test_call_cap_counts_every_retry(server):
    server.default = Reply("status", status=500)
    config = FrontierConfig(**{**FAST.__dict__, "max_calls": 2, "max_retries": 5, "backoff_s": 0.0})
    player = FrontierPlayer("m", server.base_url, config)
    first = player.act(observation(key=1))
    assert first.error == "call cap reached (max_calls=2) after HTTP 500"
    second = player.act(observation(key=2))
    assert second.error == "call cap reached (max_calls=2)"
    assert server.completions_seen() == 2 and player.stats.calls == 2 and player.stats.errors == 2


def test_call_cap_across_decisions_and_cache_hits_are_free(server):
    config = FrontierConfig(**{**FAST.__dict__, "max_calls": 3})
    player = FrontierPlayer("m", server.base_url, config)
    decisions = [player.act(observation(key=k)) for k in range(5)]
    assert [d.action for d in decisions] == ["[check]"] * 3 + ["", ""]
    assert all(d.error == "call cap reached (max_calls=3)" for d in decisions[3:])
    assert server.completions_seen() == 3
    assert [player.act(observation(key=k)).action for k in range(3)] == ["[check]"] * 3
    assert player.stats.as_dict() == {"calls": 3, "cache_hits": 3, "errors": 2, "checks": 0}
    replay = FrontierPlayer("m", server.base_url, FrontierConfig(**{**FAST.__dict__, "max_calls": 0}))
    assert replay.act(observation(key=0)).action == "[check]" and replay.stats.calls == 0


def test_control_characters_in_the_content_reach_the_game_as_an_invalid_move(server):
    server.script(
        Reply("control_chars", content="\x00\x1b[2J\x07junk\u202e\r\n"),
        Reply("control_chars", content="\x00[bet]\x7f"),
        Reply("control_chars", content="\ud800 lone surrogate"),
    )
    player = FrontierPlayer("m", server.base_url, FAST)
    garbage = player.act(observation(key=1))
    assert garbage.error is None and garbage.action == "[2J junk"
    assert player.act(observation(key=2)).action == "[bet]"
    assert player.act(observation(key=3)).action == "? lone surrogate"
    assert len(cache_files()) == 3
    replay = FrontierPlayer("m", server.base_url, FAST)
    assert [replay.act(observation(key=k)).action for k in (1, 2, 3)] == ["[2J junk", "[bet]", "? lone surrogate"]


def test_corrupt_cache_entry_is_ignored_and_refetched(server, caplog):
    player = FrontierPlayer("m", server.base_url, FAST)
    player.act(observation())
    (name,) = cache_files()
    path = cache_dir() / "frontier" / name
    path.write_text('{"format": 1, "request": ')
    fresh = FrontierPlayer("m", server.base_url, FAST)
    with caplog.at_level(logging.WARNING, logger="arena.players.frontier_cache"):
        decision = fresh.act(observation())
    assert decision.action == "[check]" and fresh.stats.calls == 1 and server.completions_seen() == 2
    assert "ignoring unreadable frontier cache entry" in caplog.text and name in caplog.text
    assert path.read_text() == '{"format": 1, "request": '  # never overwritten


def test_check_endpoint(server):
    player = FrontierPlayer("m", server.base_url, FAST)
    assert player.check_endpoint() == ["fault-model-2024"]
    server.models_status = 401
    with pytest.raises(FrontierError, match=r"refused the API key \(HTTP 401\): set \$OPENAI_API_KEY"):
        player.check_endpoint()
    server.models_status = 404
    with pytest.raises(FrontierError, match="answered HTTP 404: check BASE_URL"):
        player.check_endpoint()
    assert player.stats.checks == 3 and player.stats.calls == 0


@pytest.mark.parametrize("body", [b"", b"{}", b'{"data": null}', b"[]", b"<html>"])
def test_check_endpoint_on_an_answer_that_is_no_model_list_is_one_line(server, body):
    server.models_body = body  # mlx_lm.server without an HF_HUB_CACHE folder: an empty 200
    player = FrontierPlayer("m", server.base_url, FAST)
    with pytest.raises(FrontierError, match=r"/v1/models did not answer with a model list: check BASE_URL .*"
                                            r"HF_HUB_CACHE") as raised:
        player.check_endpoint()
    assert "\n" not in str(raised.value) and raised.value.__cause__ is None


# ---------------------------------------------------------------- secrets


CANARY = "sk-canary-7f3e9b1d2c4a"


def test_the_key_is_sent_but_never_written(server, monkeypatch, caplog):
    monkeypatch.setenv("ARENA_TEST_KEY", CANARY)
    config = FrontierConfig(**{**FAST.__dict__, "api_key_env": "ARENA_TEST_KEY", "backoff_s": 0.0})
    server.script(
        Reply(content="[bet]"),
        Reply("status", status=401, echo_auth=True),
        *[Reply("status", status=500, echo_auth=True)] * 3,
        *[Reply("malformed")] * 3,
    )
    player = FrontierPlayer("m", server.base_url, config)
    with caplog.at_level(logging.DEBUG):
        decisions = [player.act(observation(key=k)) for k in range(4)]
        server.models_status = 401
        with pytest.raises(FrontierError) as refused:
            player.check_endpoint()
    assert all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in server.requests)
    assert decisions[0].action == "[bet]" and all(d.error for d in decisions[1:])

    written = b"".join(p.read_bytes() for p in cache_dir().rglob("*") if p.is_file())
    assert written and CANARY.encode() not in written
    surfaces = [json.dumps(player.pin()), json.dumps(player.stats.as_dict()), repr(decisions), str(refused.value),
                repr(refused.value), caplog.text, repr(player), repr(player.config)]
    assert not [s for s in surfaces if CANARY in s]


def test_key_is_refused_over_plain_http_to_a_remote_host(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with pytest.raises(FrontierError, match=r"refusing to send \$OPENAI_API_KEY in clear text") as error:
        FrontierPlayer("gpt-4o-mini", "http://api.example.com/v1")
    assert CANARY not in str(error.value)
    FrontierPlayer("gpt-4o-mini", "https://api.example.com/v1")  # https: fine (nothing is sent yet)
    FrontierPlayer("base", "http://127.0.0.1:8080/v1")  # loopback: fine


# ---------------------------------------------------------------- a real OpenAI-compatible server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_mlx_server(model_dir: Path, work: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str] | None:
    """Start the server on a free port and wait until it answers; None if another process took the port first.

    The port is free when chosen but can be taken before the server binds it; mlx_lm's server then
    logs the bind error but never exits (its generation thread is not a daemon), so the log is watched.
    """
    port = _free_port()
    log_path = work / f"server-{port}.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "mlx_lm", "server", "--model", str(model_dir), "--host", "127.0.0.1",
             "--port", str(port)],
            env=env, stdout=log_file, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        log_text = log_path.read_text(errors="replace")
        if "Address already in use" in log_text:
            stop(process)
            return None
        if process.poll() is not None:
            pytest.fail(f"mlx_lm server exited with {process.returncode}:\n{log_text[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=1) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop(process)
            pytest.fail(f"mlx_lm server not ready after 90 s:\n{log_text[-2000:]}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def mlx_server(base_model_dir, tmp_path_factory):
    """``python -m mlx_lm server`` on the embedded base model; yields its base URL, killed by PID after."""
    work = tmp_path_factory.mktemp("mlx-server")
    hub = work / "hub"
    hub.mkdir()
    # HF_HUB_CACHE must exist and the hub must be offline, else GET /v1/models crashes or reaches out.
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    for _ in range(3):
        started = _start_mlx_server(base_model_dir, work, env)
        if started is not None:
            break
    else:
        pytest.fail("three free ports in a row were taken before mlx_lm's server could bind them")
    process, url = started
    try:
        yield url
    finally:
        stop(process)


def _kuhn_exchange(player: FrontierPlayer) -> list:
    """A hand-built Kuhn round against the real server; an invalid move is re-prompted once with the reason."""
    decisions = []
    for key, (card, history) in enumerate([("K", ""), ("Q", "p"), ("J", "b")]):
        obs = observation(key=key, compact=f"card: {card}\nhistory: {history}\n")
        decision = player.act(obs)
        decisions.append(decision)
        if decision.error is None and decision.action not in obs.legal_actions:
            reason = f"\n[GAME] Player 1 attempted an invalid move. Reason: Action must be one of {list(LEGAL)}."
            retry = Observation(obs.game_id, obs.player_id, obs.text + reason, obs.compact + reason,
                                obs.legal_actions, sample_key=obs.sample_key)
            decisions.append(player.act(retry))
    return decisions


def test_real_openai_compatible_server(mlx_server, base_model_dir):
    model = str(base_model_dir)  # mlx_lm serves a local model under its path (and as "default_model")
    config = FrontierConfig(view="compact", max_tokens=8, timeout_s=60.0, max_retries=0, max_calls=20)
    player = FrontierPlayer(model, mlx_server, config)
    assert str(Path(model).resolve()) in player.check_endpoint()

    decisions = _kuhn_exchange(player)
    assert all(d.error is None for d in decisions)
    assert all(d.model_id == model for d in decisions)  # mlx_lm echoes the requested name as `model`
    assert all(len(d.action) <= MAX_ACTION_CHARS and d.action.isprintable() for d in decisions)
    assert player.served_model == model
    assert player.stats.calls == len(decisions) == len(cache_files())

    replay = FrontierPlayer(model, mlx_server, config)
    assert _kuhn_exchange(replay) == decisions
    assert replay.stats.calls == 0 and replay.stats.cache_hits == len(decisions)

    capped = FrontierPlayer(model, mlx_server, FrontierConfig(**{**config.__dict__, "max_calls": 1, "seed": 1}))
    fresh = [capped.act(observation(key=k)) for k in (50, 51)]
    assert fresh[0].error is None and fresh[1].error == "call cap reached (max_calls=1)"
    assert capped.stats.calls == 1


@pytest.mark.slow  # ~150 s: full negotiation games generated by a real server (the default suite stays ~5 min)
def test_a_negotiation_match_against_the_real_server_is_cached_and_capped(mlx_server, base_model_dir):
    """SimpleNegotiation end to end through mlx_lm.server: the endpoint writes free text for TextArena's own
    invalid-move rule, every game ends recorded (forfeit or not, never a crash), a rerun is served from the cache,
    and a cap errors the games it cuts."""
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.scripted import make_scripted

    model = str(base_model_dir)
    config = FrontierConfig(view="full", max_tokens=16, timeout_s=60.0, max_retries=0, max_calls=40, concurrency=1)
    schedule = duplicate_schedule([31], 2)
    player = FrontierPlayer(model, mlx_server, config)
    records = play_match("negotiation", (player, make_scripted("greedy")), schedule, progress=False)
    assert [r["errored"] for r in records] == [False, False] and 0 < player.stats.calls <= 40
    assert all(r["invalid_moves"] is not None and len(r["actions"]) >= 1 for r in records)
    again = FrontierPlayer(model, mlx_server, config)
    replay = play_match("negotiation", (again, make_scripted("greedy")), schedule, progress=False)
    assert again.stats.calls == 0 and again.stats.cache_hits == player.stats.calls
    assert [r["transcript_digest"] for r in replay] == [r["transcript_digest"] for r in records]
    capped = FrontierPlayer(model, mlx_server, FrontierConfig(**{**config.__dict__, "max_calls": 1, "seed": 2}))
    cut = play_match("negotiation", (capped, make_scripted("greedy")), schedule, progress=False)
    assert capped.stats.calls == 1 and any(r["errored"] and "call cap reached" in r["error"] for r in cut)


def test_arena_play_against_an_empty_model_list_is_one_line(server):
    from click.testing import CliRunner

    from arena.cli import main

    server.models_body = b""
    result = CliRunner().invoke(main, ["play", "kuhn", "--p0", f"openai:m@{server.base_url}", "--p1", "random",
                                       "--games", "2"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"error: {server.base_url}/models did not answer with a model list: check BASE_URL (it usually ends in /v1); "
        "an mlx_lm.server needs HF_HUB_CACHE to name an existing folder (docs/frontier.md)"]


# ---------------------------------------------------------------- concurrency

SLOW = Reply(kind="timeout", delay_s=0.3, template="{1}")  # answers after 0.3 s, with the second legal action


def _kuhn_observations(n: int) -> list[Observation]:
    return [observation(key=100 + k) for k in range(n)]


def test_a_local_server_gets_one_request_at_a_time_by_default(server):
    server.default = SLOW
    player = FrontierPlayer("m", server.base_url, FrontierConfig(**{**FAST.__dict__, "timeout_s": 5.0}))
    assert player.concurrency == 1
    decisions = player.act_batch(_kuhn_observations(3))
    assert server.max_in_flight == 1 and all(d.error is None and d.action for d in decisions)


def test_a_remote_endpoint_defaults_to_a_few_and_the_setting_wins():
    assert FrontierPlayer("m", "https://api.example.invalid/v1").concurrency == 4
    assert FrontierPlayer("m", "http://127.0.0.1:8080/v1", FrontierConfig(concurrency=3)).concurrency == 3
    with pytest.raises(ConfigError, match=r"frontier.concurrency = 0 is invalid"):
        FrontierConfig(concurrency=0)


def test_concurrency_caps_requests_in_flight_and_keeps_the_order(server):
    server.default = SLOW
    config = FrontierConfig(**{**FAST.__dict__, "timeout_s": 5.0, "concurrency": 3})
    player = FrontierPlayer("m", server.base_url, config)
    observations = [observation(key=200 + k, compact=f"card: K\nhistory: {'p' * (k % 2)}\n") for k in range(8)]
    decisions = player.act_batch(observations)
    assert server.max_in_flight == 3 and player.stats.calls == 8 == server.completions_seen()
    assert all(d.error is None and d.action for d in decisions)
    one_by_one = FrontierPlayer("m", server.base_url, FrontierConfig(**{**config.__dict__, "concurrency": 1}))
    assert one_by_one.act_batch(observations) == decisions and one_by_one.stats.cache_hits == 8


def test_concurrency_never_changes_who_meets_the_call_cap(server):
    config = FrontierConfig(**{**FAST.__dict__, "max_calls": 7, "max_retries": 1, "concurrency": 4})
    server.script(Reply(kind="status", status=500), *[Reply()] * 20)  # the first request fails once, then retried
    capped = FrontierPlayer("m", server.base_url, config).act_batch(_kuhn_observations(8))
    errors = [d.error for d in capped]
    # One at a time: decision 0 takes 2 attempts, decisions 1..5 one each (7 calls), 6 and 7 meet the cap.
    assert errors[:6] == [None] * 6 and errors[6:] == ["call cap reached (max_calls=7)"] * 2


# ---------------------------------------------------------------- openai 2 and 3


class _Streaming:
    """A chat-completions stream whose body fails mid-read with ``error`` (what the transport raises)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def create(self, **_request):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def iter_bytes(self):
        raise self.error
        yield b""  # a generator, as the client's is


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_a_body_that_fails_mid_read_is_one_retryable_failure_on_either_transport(library):
    """openai 3 streams through httpx2, openai 2 (verifiers 0.4.0's) through httpx: both libraries' errors while a
    reply's body is read are one retryable failure, never an exception out of the player."""
    from types import SimpleNamespace

    from arena.players.frontier_reply import AttemptFailed

    http = pytest.importorskip(library)
    player = FrontierPlayer("m", "http://127.0.0.1:9/v1", FAST)
    request = {"model": "m", "messages": [], "temperature": 0.0, "max_tokens": 4, "seed": 0}
    for error, reason in ((http.ReadTimeout("slow"), "timed out reading the reply"),
                          (http.RemoteProtocolError("cut"), "connection lost while reading the reply")):
        stream = _Streaming(error)
        player._client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(
            with_streaming_response=stream)))
        with pytest.raises(AttemptFailed, match=reason) as failed:
            player._attempt(request)
        assert failed.value.retryable
