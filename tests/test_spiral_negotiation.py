"""SPIRAL's SimpleNegotiation-v1 (negotiation with spiral: true): its rules on hand-computed games, the grammar,
scripted players, and stable replays."""

import pytest

from arena.core.errors import ArenaError
from arena.games.negotiation import ACCEPT, DENY
from arena.games.registry import get_spec, make_game, replay
from arena.games.spiral_negotiation import ENV_ID, parse_offer
from arena.games.variants import validate_variant
from arena.play.match import duplicate_schedule, play_match
from arena.play.stats import summarize_match
from arena.players.scripted import make_scripted

ALIAS = "textarena:SimpleNegotiation-v1"


def _play(actions, game_id=ALIAS, seed=0):
    game = make_game(game_id, seed)
    for action in actions:
        assert not game.done
        game.step(action)
    return game


def test_the_alias_is_negotiation_with_spiral_true():
    assert validate_variant(ALIAS, None) == {"turns": 10, "units": 3, "spiral": True}
    assert validate_variant("negotiation", {"spiral": False}) == {"turns": 10, "units": 3}  # the default keeps its id
    spec = get_spec(ALIAS)
    assert (spec.game_id, spec.env_id) == ("negotiation", ENV_ID)
    with pytest.raises(ArenaError, match="'spiral'.*true or false"):
        validate_variant("negotiation", {"spiral": "yes"})


def test_start_holdings_values_views_and_grammar():
    game = make_game(ALIAS, 5)
    observation = game.observation()
    assert observation.game_id == "negotiation" and game.env_id == ENV_ID
    assert "Value: 15" in observation.text and "The game lasts for 10 turns in total." in observation.text
    assert observation.compact == "you hold (value each): Wood 10 (5), Gold 10 (15)\noffer: none\nmoves left: 10\n"
    legal = observation.legal_actions
    assert legal[0] == DENY and ACCEPT not in legal and len(legal) == 1 + 2 * 3 * 3
    game.step("[Offer: 3 Wood -> 2 Gold]")
    seat1 = game.observation()
    assert seat1.compact.startswith(
        "you hold (value each): Wood 10 (15), Gold 10 (5)\noffer: you get 3 Wood for 2 Gold")
    assert seat1.legal_actions[0] == ACCEPT and seat1.state["base"] == (10, 10)


def test_a_trade_then_ten_moves_hand_computed():
    """P0 gives 3 Wood for 2 Gold: P0 7 Wood, 12 Gold = 35 + 180 = 215 (+15); P1 13 Wood, 8 Gold = 195 + 40 = 235
    (+35). SPIRAL ends the game on move 10: P1 wins."""
    game = _play(["[Offer: 3 Wood -> 2 Gold]", ACCEPT] + [DENY] * 7)
    assert not game.done
    game.step(DENY)
    result = game.result()
    assert game.done and result.turns == 10 and result.rewards == (-1.0, 1.0) and result.forfeit_by is None
    assert result.details["start"] == [[10, 10], [10, 10]] and result.details["end"] == [[7, 12], [13, 8]]
    assert result.details["values"] == [[5, 15], [15, 5]] and result.details["value_gain"] == [15, 35]
    assert result.details["trades"] == [{"from": 0, "give": [3, 0], "get": [0, 2]}]


def test_no_trade_draws_after_ten_moves():
    result = _play([DENY] * 10).result()
    assert result.rewards == (0.0, 0.0) and result.turns == 10


def test_deny_withdraws_and_a_pass_keeps_the_offer():
    game = _play(["[Offer: 3 Wood -> 2 Gold]", DENY])
    assert game._ta_state.game_state["current_offer"] is None  # 0.7.4's SimpleNegotiation keeps a denied offer
    assert ACCEPT not in _play(["[Offer: 3 Wood -> 2 Gold]", DENY, DENY]).observation().legal_actions
    game = _play(["[Offer: 3 Wood -> 2 Gold]", "I am thinking"])  # any other text passes: the offer stands
    assert game._ta_state.game_state["current_offer"]["from_player"] == 0
    game.step(DENY)
    game.step(ACCEPT)  # P1 accepts its standing offer later
    assert game._ta_state.game_state["player_resources"][1] == {"Wood": 13, "Gold": 8}


def test_invalid_moves_follow_textarena_064_one_retry_then_minus_one_and_zero():
    """Accepting one's own standing offer is invalid (retried); a second invalid move in a row ends the game with -1
    for the offender and 0 for the other player (TextArena 0.6.4's State, under which SPIRAL ran)."""
    game = _play(["[Offer: 3 Wood -> 2 Gold]", "hello", ACCEPT])
    assert not game.done and game.current_player == 0 and game.moves[-1].valid is False
    game.step("[Offer: 11 Wood -> 1 Gold]")  # more Wood than P0 holds: invalid again
    result = game.result()
    assert result.forfeit_by == 0 and result.rewards == (-1.0, 0.0) and result.invalid_moves == (2, 0)
    assert parse_offer("I give 2 woods and 1 gold -> 6 Wood.") == {
        "offered_resources": {"Wood": 2, "Gold": 1}, "requested_resources": {"Wood": 6}}
    assert parse_offer("3 Wheat -> 1 Gold") is None


def test_the_alias_and_the_variant_play_the_same_bytes_and_replay():
    actions = ["[Offer: 3 Wood -> 2 Gold]", ACCEPT] + [DENY] * 8
    digest = _play(actions).result().transcript_digest
    assert not _play(actions, "negotiation").done  # 0.7.4's game plays 11 moves
    variant = validate_variant(ALIAS, None)
    game = make_game("negotiation", 0, {"spiral": True})
    for action in actions:
        game.step(action)
    assert game.result().transcript_digest == digest == replay(ALIAS, variant, 0, actions).transcript_digest
    assert digest == GOLDEN


@pytest.mark.parametrize("game_id", [ALIAS, "negotiation"])
def test_scripted_traders_play_it_deterministically(game_id):
    variant = {"spiral": True} if game_id == "negotiation" else None
    schedule = duplicate_schedule([0, 1], 4)
    players = (make_scripted("greedy"), make_scripted("fair"))
    records = play_match(game_id, players, schedule, variant=variant, progress=False)
    again = play_match(game_id, players, schedule, variant=variant, progress=False)
    assert records == again and all(not r["errored"] for r in records)
    assert summarize_match(records, "greedy", "fair")["trades"]["pareto_share"] == 1.0
    for record in records:
        assert record["details"]["trades"], "greedy proposes 3 Wood for 2 Gold (or 3 Gold for 2 Wood); fair accepts"
        assert replay(game_id, record["variant"], record["seed"], record["actions"]).transcript_digest == \
            record["transcript_digest"]
    never = play_match(game_id, (make_scripted("never"), make_scripted("responder")), schedule, variant=variant,
                       progress=False)
    assert all(r["rewards"] == [0.0, 0.0] for r in never)
    spam = play_match(game_id, (make_scripted("offer-spam"), make_scripted("random")), schedule, variant=variant,
                      progress=False)
    assert all(not r["errored"] and r["details"] is not None for r in spam)


# The transcript digest of the hand-computed game above: a change here means old SPIRAL records no longer verify.
GOLDEN = "764ebced91f262fde0ede02068aa09175d6245c0650ea20c7f0580aee0416ff1"


def test_value_left_against_the_responder_is_measured_over_wood_and_gold():
    """Seat 0 has 5 answerable offers (moves 1, 3, 5, 7, 9 of 10), seat 1 four (its move 10 is never answered)."""
    from arena.eval.negotiation import value_left_of
    from arena.games.negotiation_theory import answerable_offers, best_extraction

    assert answerable_offers(0, 10) == 5 and answerable_offers(1, 10) == 4
    # Seat 0 (Wood 5, Gold 15) to the responder (Wood 15, Gold 5), which accepts when 15 x Wood > 5 x Gold: the best
    # single offer is 2 Wood -> 3 Gold (+35), but the responder holds 10 Gold, so five of 1 Wood -> 2 Gold (+25 each,
    # 10 Gold in all) give the most, 125 (three of +35 and one 1 Wood -> 1 Gold give 115; two and two, 120).
    assert best_extraction([[5, 15], [15, 5]], [[10, 10], [10, 10]], 0, 5, 3) == 125
    measures = value_left_of(make_scripted("greedy"), [0, 1], {"spiral": True})
    assert measures["games"] == 4 and measures["best"] > 0 and 0 <= measures["left"] <= measures["best"]


def test_a_local_player_and_a_frontier_player_play_it(standin_dir, tmp_path, monkeypatch):
    from fault_server import FaultServer, Reply

    from arena.players.config import FrontierConfig, MLXPlayerConfig
    from arena.players.frontier import FrontierPlayer
    from arena.players.mlx import MLXPlayer

    schedule = duplicate_schedule([0], 2)
    local = MLXPlayer(standin_dir, MLXPlayerConfig())
    records = play_match(ALIAS, (local, make_scripted("greedy")), schedule, progress=False)
    assert records == play_match(ALIAS, (local, make_scripted("greedy")), schedule, progress=False)
    for record in records:
        assert not record["errored"] and record["invalid_moves"] == [0, 0]
        assert all(d["action"] in d["legal"] for d in record["decisions"])
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fast = FrontierConfig(timeout_s=2.0, max_retries=0, backoff_s=0.0, max_wait_s=0.0)
    with FaultServer(Reply(content="Gold is worth more to me. [Offer: 2 Wood and 1 Gold -> 4 Gold]")) as server:
        frontier = FrontierPlayer("a", server.base_url, fast)
        records = play_match(ALIAS, (frontier, make_scripted("responder")), schedule, progress=False)
    # A bundle (no listed action) goes to SPIRAL's parser as written: from seat 0, the responder (Wood 15, Gold 5)
    # gains 35 - 20 and takes it; from seat 1, the responder (Wood 5, Gold 15) would lose, so nothing trades.
    trades = [t for record in records for t in record["details"]["trades"]]
    assert trades and all((t["from"], t["give"], t["get"]) == (0, [2, 1], [0, 4]) for t in trades)
    for record in records:
        assert not record["errored"] and record["forfeit_by"] is None
        assert replay(ALIAS, record["variant"], record["seed"], record["actions"]).transcript_digest == \
            record["transcript_digest"]
