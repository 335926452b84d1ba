"""SimpleNegotiation: the offer grammar, TextArena's parse of it, outcomes, value gains, measures and the audit gate."""

import random

import pytest

from arena.core.errors import ArenaError
from arena.games.negotiation import ACCEPT, DENY, NegotiationGame, legal_actions
from arena.games.negotiation_theory import (
    RESOURCES,
    answerable_offers,
    best_extraction,
    offer_text,
    pareto_counts,
    single_offers,
    trade_gains,
)
from arena.games.registry import make_game, replay
from arena.play.config import ProbeConfig
from arena.play.match import duplicate_schedule, play_match
from arena.play.probe import run_probe
from arena.players.scripted import make_scripted
from arena.players.traders import fair_move, greedy_move, parse_listed_offer, responder_move


def _play(game, actions):
    for action in actions:
        game.step(action)
    return game


def _random_actions(seed):
    game, rng = make_game("negotiation", seed), random.Random(seed)
    while not game.done:
        game.step(rng.choice(game.observation().legal_actions))
    return game


def test_grammar_size_and_order():
    assert len(single_offers(3)) == 5 * 4 * 3 * 3
    assert offer_text((2, 0, 0, 0, 1), (0, 0, 5, 0, 0)) == "[Offer: 2 Wheat, 1 Ore -> 5 Sheep]"
    holdings = (12, 23, 22, 9, 16)
    legal = legal_actions(holdings, None, 3)
    assert legal[0] == DENY and ACCEPT not in legal and len(legal) == 1 + 180
    assert legal_actions(holdings, (0, 0, 0, 9, 0), 3)[0] == ACCEPT
    assert ACCEPT not in legal_actions(holdings, (0, 0, 0, 10, 0), 3)  # cannot pay for it
    # Only what the proposer holds: 1 Wheat left means no offer gives 2 or 3 Wheat.
    poor = legal_actions((1, 5, 5, 5, 5), None, 3)
    assert "[Offer: 1 Wheat -> 1 Ore]" in poor and "[Offer: 2 Wheat -> 1 Ore]" not in poor


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_textarena_accepts_every_listed_action(seed):
    """Every listed action, played from the same position, is a valid move by TextArena's own parse."""
    game = _random_actions(seed)
    for cut in range(0, len(game.actions), 3):
        position = _play(make_game("negotiation", seed), game.actions[:cut])
        for action in position.observation().legal_actions:
            trial = _play(make_game("negotiation", seed), game.actions[:cut])
            trial.step(action)
            assert trial.moves[-1].valid, (seed, cut, action)


def test_textarena_rejects_what_the_grammar_leaves_out():
    game = make_game("negotiation", 3)  # seat 0 holds 9 Brick
    game.step("[Offer: 10 Brick -> 1 Ore]")
    assert not game.moves[-1].valid
    game = make_game("negotiation", 3)
    game.step("[Offer: 1 Wheat -> 1 Ore]")
    game.step("[Offer: 2 Wheat, 1 Wood -> 1 Ore]")  # a bundle: outside the grammar, but TextArena's own text
    assert game.moves[-1].valid and game.observation().legal_actions[0] == ACCEPT


def test_trade_outcome_value_gains_and_turn_limit():
    game = make_game("negotiation", 3)
    values = [game._values(game._ta_state.game_state, p) for p in (0, 1)]
    _play(game, ["[Offer: 1 Wheat -> 1 Ore]", ACCEPT] + [DENY] * 8)
    assert not game.done  # 10 moves played; TextArena's max_turns 10 plays an 11th
    game.step(DENY)
    result, details = game.result(), game.result().details
    g0, g1 = trade_gains(values, 0, (1, 0, 0, 0, 0), (0, 0, 0, 0, 1))
    assert details["value_gain"] == [g0, g1] == [values[0][4] - values[0][0], values[1][0] - values[1][4]]
    assert result.rewards == (1.0, -1.0) and details["trades"] == [{"from": 0, "give": [1, 0, 0, 0, 0],
                                                                    "get": [0, 0, 0, 0, 1]}]
    assert [a - b for a, b in zip(details["end"][0], details["start"][0], strict=True)] == [-1, 0, 0, 0, 1]
    assert len(game.actions) == 11 and answerable_offers(0, 11) == 5 and answerable_offers(1, 11) == 5


def test_no_trade_draws_and_a_denied_offer_stays_on_the_table():
    game = make_game("negotiation", 5)
    game.step("[Offer: 1 Wheat -> 1 Wood]")
    game.step(DENY)
    assert game.observation().state["offer"]["from"] == "me"  # seat 0 sees its own offer still standing
    game.step(DENY)
    assert game.observation().legal_actions[0] == ACCEPT  # seat 1 may still take it
    _play(game, [DENY] * 8)
    assert game.result().rewards == (0.0, 0.0) and game.result().details["trades"] == []


def test_compact_view_and_state():
    obs = make_game("negotiation", 3).observation()
    assert obs.compact.startswith("you hold (value each): Wheat 12 (5), Wood 23 (11)")
    assert "offer: none" in obs.compact and "moves left: 11" in obs.compact
    assert "[Offer: 3 Sheep, 2 Ore -> 5 Brick, 2 Sheep]" in obs.text  # TextArena's own prompt (full view)
    game = _play(make_game("negotiation", 3), ["[Offer: 1 Wheat -> 1 Ore]"])
    assert "offer: you get 1 Wheat for 1 Ore" in game.observation().compact


def test_same_seed_same_bytes_and_replay():
    first, second = _random_actions(11), _random_actions(11)
    assert first.actions == second.actions
    assert first.result().transcript_digest == second.result().transcript_digest
    assert replay("negotiation", None, 11, first.actions) == first.result()
    assert make_game("negotiation", 12).observation().compact != make_game("negotiation", 11).observation().compact
    state = random.getstate()
    make_game("negotiation", 4).step(DENY)
    assert random.getstate() == state


def test_variant_validation():
    assert NegotiationGame.validate_variant({}) == {"turns": 10, "units": 3}
    assert len(make_game("negotiation", 0, {"units": 1}).observation().legal_actions) == 1 + 20
    assert len(_play(make_game("negotiation", 0, {"turns": 2}), [DENY] * 3).actions) == 3
    for bad in ({"units": 6}, {"units": 0}, {"turns": 0}, {"rounds": 2}):
        with pytest.raises(ArenaError):
            NegotiationGame.validate_variant(bad)


def test_pareto_counts_on_hand_built_trades():
    values = [[5, 10, 15, 25, 40], [6, 8, 15, 25, 40]]
    details = {"values": values, "trades": [
        {"from": 0, "give": [2, 0, 0, 0, 0], "get": [0, 1, 0, 0, 0]},  # 0: +0, 1: +4: not strictly both
        {"from": 0, "give": [3, 0, 0, 0, 0], "get": [0, 2, 0, 0, 0]},  # 0: +5, 1: +2: improving
        {"from": 1, "give": [0, 0, 0, 0, 1], "get": [1, 0, 0, 0, 0]},  # 1 gives Ore for Wheat: 1 loses
    ]}
    assert trade_gains(values, 0, (3, 0, 0, 0, 0), (0, 2, 0, 0, 0)) == (5, 2)
    assert pareto_counts([details]) == (1, 3)


def test_best_extraction_is_exact_on_a_small_case():
    values = [[5, 10, 15, 25, 40], [6, 8, 15, 25, 40]]
    # Seat 1 values Wood below seat 0 and Wheat above: the offers both gain from are 3 Wheat -> 2 Wood (+5 to seat 0,
    # +2 to seat 1) and 1 Brick -> 3 Wood (+5, +1); each is worth 5 to seat 0.
    assert best_extraction(values, [[20] * 5, [20] * 5], 0, 1, 3) == 5
    assert best_extraction(values, [[20] * 5, [20] * 5], 0, 3, 3) == 15
    # Holdings bind: no Brick and 5 Wheat afford one 3-Wheat offer; 2 Wheat -> 1 Wood gains seat 0 nothing.
    assert best_extraction(values, [[5, 20, 20, 0, 20], [20] * 5], 0, 3, 3) == 5
    # The responder must hold what it is asked for: with 3 Wood it can pay one 3-Wood offer only.
    assert best_extraction(values, [[20] * 5, [20, 3, 20, 20, 20]], 0, 3, 3) == 5 + 0


def test_traders_judge_offers_by_their_own_values():
    state = {"values": (5, 10, 15, 25, 40), "have": (10,) * 5, "units": 3,
             "offer": {"from": "them", "give": (0, 0, 0, 0, 1), "get": (3, 0, 0, 0, 0)}, "moves_left": 5}
    legal = legal_actions(state["have"], state["offer"]["get"], 3)
    assert greedy_move(state, legal) == ACCEPT == responder_move(state, legal)
    assert fair_move(state, legal) == ACCEPT  # own gain 25 >= the proposer's base gain -25
    state["offer"] = {"from": "them", "give": (0, 0, 0, 0, 1), "get": (0, 0, 0, 1, 0)}  # +15 to me, -15 to them
    assert fair_move(state, legal) == ACCEPT
    state["offer"] = {"from": "them", "give": (0, 0, 1, 0, 0), "get": (0, 0, 0, 1, 0)}
    assert responder_move(state, legal) == DENY
    assert greedy_move(state, legal) == DENY  # at the base values no offer gains both sides
    state["values"] = (6, 8, 15, 25, 40)  # Wheat dearer, Wood cheaper than the base: 2 Wood -> 3 Wheat gains both
    proposal = greedy_move(state, legal)
    give, get = parse_listed_offer(proposal)
    assert sum(v * (b - a) for v, a, b in zip(state["values"], give, get, strict=True)) > 0
    assert parse_listed_offer("[Offer: 2 Wheat -> 1 Ore]") == ((2, 0, 0, 0, 0), (0, 0, 0, 0, 1))
    assert set(RESOURCES) == {"Wheat", "Wood", "Sheep", "Brick", "Ore"}


def test_match_records_details_and_trade_summary():
    from arena.play.stats import summarize_match

    records = play_match("negotiation", (make_scripted("greedy"), make_scripted("fair")),
                         duplicate_schedule([1, 2], 4), progress=False)
    assert all("details" in r and len(r["details"]["value_gain"]) == 2 for r in records)
    trades = summarize_match(records, "greedy", "fair")["trades"]
    assert trades["accepted"] > 0 and trades["pareto_share"] == 1.0  # both accept only what raises their values
    nim = play_match("nim", (make_scripted("random"), make_scripted("first")), duplicate_schedule([1], 2),
                     progress=False)
    assert "details" not in nim[0]


def _failed(checks):
    return [c for c in checks if not c.passed]


def test_probe_passes_on_negotiation():
    checks = run_probe(ProbeConfig(games=("negotiation",), games_per_check=100))
    assert not _failed(checks), _failed(checks)
    assert {c.name for c in checks} >= {"never vs greedy", "accept-all vs greedy", "offer-spam vs greedy",
                                        "greedy vs random", "random vs random"}


def test_probe_fails_when_the_negotiation_reward_pays_the_loser(monkeypatch):
    def flipped(self, ta_rewards, forfeit_by):
        rewards = (-ta_rewards[0], -ta_rewards[1])
        return rewards, (rewards,)

    monkeypatch.setattr(NegotiationGame, "_rewards", flipped)
    failed = {c.name for c in _failed(run_probe(ProbeConfig(games=("negotiation",), games_per_check=40)))}
    assert {"accept-all vs greedy", "offer-spam vs greedy", "greedy vs random"} <= failed


def test_cli_plays_negotiation_between_scripted_traders():
    import json

    from click.testing import CliRunner

    from arena.cli import main

    result = CliRunner().invoke(main, ["play", "negotiation", "--p0", "greedy", "--p1", "fair", "--games", "4",
                                       "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["games"] == 4 and summary["trades"]["pareto_share"] == 1.0


def test_a_frontier_player_negotiates_in_textarenas_own_text(tmp_path, monkeypatch):
    from fault_server import FaultServer, Reply

    from arena.players.config import FrontierConfig
    from arena.players.frontier import FrontierPlayer

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fast = FrontierConfig(timeout_s=2.0, max_retries=0, backoff_s=0.0, max_wait_s=0.0)
    bundle = "Let me open with a bundle. [Offer: 2 Wheat, 1 Wood -> 1 Brick]"  # not a listed action: passed as text
    with FaultServer(Reply(content=bundle)) as server:
        schedule = duplicate_schedule([21], 2)
        records = play_match("negotiation", (FrontierPlayer("m", server.base_url, fast), make_scripted("greedy")),
                             schedule, progress=False)
        calls = server.completions_seen()
        again = play_match("negotiation", (FrontierPlayer("m", server.base_url, fast), make_scripted("greedy")),
                           schedule, progress=False)
        assert server.completions_seen() == calls  # every reply came from the cache
    for record in records:
        seat = record["players"].index("openai:m@" + server.base_url)
        assert not record["errored"] and record["invalid_moves"][seat] == 0
        assert sum(a == bundle for a in record["actions"]) == (6 if seat == 0 else 5)  # 11 moves, seat 0 first
    assert [r["transcript_digest"] for r in again] == [r["transcript_digest"] for r in records]


def test_a_frontier_negotiation_is_capped_and_a_capped_game_is_errored(tmp_path, monkeypatch):
    """max_calls bounds the real requests of a negotiation match; a game that meets the cap is recorded as errored
    (it counts for neither side), and a rerun replays the cached replies for free and asks only for the rest."""
    from fault_server import FaultServer, Reply

    from arena.players.config import FrontierConfig
    from arena.players.frontier import FrontierPlayer

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    capped = FrontierConfig(max_calls=8, timeout_s=2.0, max_retries=0, backoff_s=0.0, max_wait_s=0.0, concurrency=1)
    with FaultServer(Reply(content="[Deny]")) as server:
        schedule = duplicate_schedule([22], 2)  # the player asks 6 times in one game and 5 in the other: 11 > 8
        player = FrontierPlayer("m", server.base_url, capped)
        records = play_match("negotiation", (player, make_scripted("greedy")), schedule, progress=False)
        assert server.completions_seen() == 8 and player.stats.calls == 8
        assert all(r["errored"] and "call cap reached (max_calls=8)" in r["error"] for r in records)  # lockstep
        again = play_match("negotiation", (FrontierPlayer("m", server.base_url, capped), make_scripted("greedy")),
                           schedule, progress=False)
        assert server.completions_seen() == 11  # the 8 cached replies were free
    assert [r["rewards"] for r in again] == [[0.0, 0.0], [0.0, 0.0]] and not any(r["errored"] for r in again)
