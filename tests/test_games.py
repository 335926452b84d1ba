"""Games layer: registry and variants, legal actions, standard Kuhn chips and info sets, RNG isolation, replay."""

from __future__ import annotations

import dataclasses
import math
import random
import re

import pytest
import textarena as ta
from gameplay import play_game

from arena.games.kuhn import seat_payoffs
from arena.games.kuhn_theory import DEALS, TERMINALS, info_set_name, terminal_value
from arena.games.registry import GAMES, get_spec, legal_actions, make_game, replay
from arena.players.scripted import RandomPlayer, StallerPlayer

RANDOM = RandomPlayer()


def test_registry_lists_the_seven_games_with_their_envs():
    assert sorted(GAMES) == ["kuhn", "leduc", "liarsdice", "negotiation", "nim", "tictactoe", "ultimatum"]
    assert get_spec("ultimatum").env_id == "IteratedUltimatumGame-v0"
    assert get_spec("ultimatum").default_variant == {"pool": 50, "rounds": 5, "alternate": False}
    assert get_spec("negotiation").env_id == "SimpleNegotiation-v0"
    assert get_spec("negotiation").default_variant == {"turns": 10, "units": 3}
    assert get_spec("tictactoe").env_id == "TicTacToe-v0"
    assert get_spec("liarsdice").env_id == "LiarsDice-v0-small"
    assert get_spec("nim").env_id == "Nim-v0"
    assert get_spec("kuhn").env_id == "arena-KuhnPoker-v0"
    assert get_spec("kuhn").default_variant == {"rounds": 1}
    assert get_spec("leduc").env_id == "arena-LeducHoldem-v0"
    assert get_spec("nim").default_variant == {"piles": [3, 4, 5]}
    assert get_spec("liarsdice").default_variant == {"dice": 3}
    assert get_spec("tictactoe").default_variant == {}


def test_unknown_game_id_names_the_id_and_the_known_ones():
    with pytest.raises(ValueError, match=r"'chess'.*kuhn.*liarsdice.*nim.*tictactoe"):
        get_spec("chess")
    with pytest.raises(ValueError, match="'chess'"):
        make_game("chess", 0)


@pytest.mark.parametrize(
    ("game_id", "variant", "message"),
    [
        ("kuhn", {"round": 3}, r"unknown kuhn variant key\(s\) \['round'\]; allowed keys: \['rounds'\]"),
        ("kuhn", {"rounds": 0}, r"'rounds' must be an int >= 1, got 0"),
        ("kuhn", {"rounds": True}, r"'rounds' must be an int >= 1, got True"),
        ("nim", {"piles": []}, r"'piles' must be a non-empty list"),
        ("nim", {"piles": [3, 0]}, r"'piles' must be an int >= 1, got 0"),
        ("nim", {"piles": "345"}, r"'piles' must be a non-empty list"),
        ("liarsdice", {"num_dice": 5}, r"unknown liarsdice variant key\(s\) \['num_dice'\]"),
        ("liarsdice", {"dice": 0}, r"'dice' must be an int >= 1"),
        ("tictactoe", {"size": 4}, r"unknown tictactoe variant key\(s\) \['size'\]; allowed keys: \['opening'\]"),
        ("tictactoe", {"opening": 9}, r"'opening' \(random moves before play\) must be an int in \[0, 8\], got 9"),
        ("tictactoe", {"opening": -1}, r"'opening' .* must be an int in \[0, 8\], got -1"),
        ("tictactoe", {"opening": True}, r"'opening' .* got True"),
        ("nim", {"opening": 12}, r"nim variant 'opening' .* int in \[0, 11\] for piles \[3, 4, 5\] .* got 12"),
        ("nim", {"piles": [1], "opening": 1}, r"must be an int in \[0, 0\] for piles \[1\]"),
    ],
)
def test_bad_variants_are_rejected_with_the_key_and_value(game_id, variant, message):
    with pytest.raises(ValueError, match=message):
        make_game(game_id, 0, variant)


def test_variants_reach_the_env():
    nim = make_game("nim", 0, {"piles": (1, 2)})
    assert nim.variant == {"piles": [1, 2]}
    assert nim.observation().state == {"piles": [1, 2]}
    assert nim.observation().legal_actions == ("[0 1]", "[1 1]", "[1 2]")
    dice = make_game("liarsdice", 0, {"dice": 5})
    assert len(dice.observation().state["dice"]) == 5
    assert dice.observation().state["dice_counts"] == [5, 5]
    kuhn = make_game("kuhn", 0, {"rounds": 3})
    assert kuhn.observation().state["rounds"] == 3


def _valid_after(game_id, seed, variant, prefix, action) -> bool:
    game = make_game(game_id, seed, variant)
    for earlier in prefix:
        game.step(earlier)
    game.step(action)
    return game.moves[-1].valid


@pytest.mark.parametrize(
    ("game_id", "variant"),
    [("kuhn", {"rounds": 3}), ("tictactoe", None), ("nim", {"piles": [2, 3]}), ("liarsdice", {"dice": 2})],
)
def test_every_listed_action_is_accepted(game_id, variant):
    # Walk random games and try every listed action at every decision on a fresh replay of the prefix.
    for seed in range(3):
        game = make_game(game_id, seed, variant)
        rng = random.Random(seed)
        while not game.done:
            legal = game.observation().legal_actions
            assert legal, "a live game always has a legal action"
            assert len(set(legal)) == len(legal)
            for action in legal:
                assert _valid_after(game_id, seed, variant, game.actions, action), (game.actions, action)
            game.step(rng.choice(legal))
        assert all(move.valid for move in game.moves)


@pytest.mark.parametrize(
    ("game_id", "variant", "prefix", "rejected"),
    [
        ("kuhn", None, [], ["[call]", "[fold]", "call", "hello there", "[raise]"]),
        ("kuhn", None, ["[bet]"], ["[check]", "[bet]", "[raise]"]),
        ("tictactoe", None, ["[4]"], ["[4]", "[9]", "[-1]", "four", "hello there"]),
        ("nim", None, [], ["[0 4]", "[1 5]", "[3 1]", "[0 0]", "[1]", "hello there"]),
        ("liarsdice", None, [], ["[Call]", "[Bid: 1, 7]", "[Bid: 2]", "hello there"]),
        ("liarsdice", None, ["[Bid: 2, 3]"], ["[Bid: 2, 3]", "[Bid: 1, 4]", "[Bid: 3, 2]", "[Bid: 1, 3]", "[raise]"]),
    ],
)
def test_unlisted_actions_are_rejected(game_id, variant, prefix, rejected):
    game = make_game(game_id, 5, variant)
    for action in prefix:
        game.step(action)
    legal = game.observation().legal_actions
    for action in rejected:
        assert action not in legal
        assert not _valid_after(game_id, 5, variant, prefix, action), action


def test_liarsdice_lists_only_what_textarena_accepts_after_odd_bids():
    # TextArena accepts a vacuous quantity-0 bid (which cannot be called) and bids above the dice in play.
    game = make_game("liarsdice", 2)
    game.step("[Bid: 0, 4]")
    assert game.moves[-1].valid
    legal = game.observation().legal_actions
    assert "[Call]" not in legal and legal[0] == "[Bid: 1, 4]"
    assert not _valid_after("liarsdice", 2, None, game.actions, "[Call]")
    for action in legal:
        assert _valid_after("liarsdice", 2, None, game.actions, action)
    game.step("[Bid: 9, 4]")
    assert game.observation().legal_actions == ("[Call]",)
    assert _valid_after("liarsdice", 2, None, game.actions, "[Call]")


def test_first_invalid_move_reprompts_the_same_player_and_is_counted():
    game = make_game("tictactoe", 0)
    game.step("[4]")
    player = game.current_player
    game.step("[4]")
    assert game.current_player == player and not game.done
    assert "invalid move" in game.observation().text
    game.step("[0]")
    assert game.current_player == 1 - player
    game.step("[8]")
    game.step("[8]")  # taken: first invalid of this streak
    game.step("[1]")
    assert not game.done
    assert [move.valid for move in game.moves] == [True, False, True, True, False, True]
    assert game.actions == ["[4]", "[4]", "[0]", "[8]", "[8]", "[1]"]
    rest = ["[2]", "[6]", "[5]"]  # O completes 2-5-8
    for action in rest:
        game.step(action)
    result = game.result()
    assert result.invalid_moves == (0, 2)
    assert result.forfeit_by is None
    assert result.turns == 7
    assert result.rewards == (1.0, -1.0)


@pytest.mark.parametrize("game_id", ["tictactoe", "nim", "liarsdice", "kuhn"])
@pytest.mark.parametrize("offender", [0, 1])
def test_two_invalid_moves_in_a_row_forfeit(game_id, offender):
    game = make_game(game_id, 3)
    if game.current_player != offender:
        game.step(game.observation().legal_actions[0])
    game.step("garbage")
    game.step("[pass]")
    result = game.result()
    assert result.forfeit_by == offender
    assert result.invalid_moves[offender] == 2 and result.invalid_moves[1 - offender] == 0
    loss = -2.0 if game_id == "kuhn" else -1.0  # Kuhn: the maximum round loss
    assert result.rewards[offender] == loss and result.rewards[1 - offender] == -loss
    assert f"Player {offender} forfeited" in result.reason


def test_kuhn_forfeit_keeps_finished_rounds_and_charges_two_chips_per_round_left():
    game = make_game("kuhn", 11, {"rounds": 3})
    for action in ["[bet]", "[call]"]:
        game.step(action)
    first_round = seat_payoffs(game.completed_rounds[0])
    offender = game.current_player
    game.step("[nonsense]")
    game.step("[nonsense]")
    result = game.result()
    penalty = (-2.0, 2.0) if offender == 0 else (2.0, -2.0)
    assert result.round_rewards == (first_round, penalty, penalty)
    assert result.rewards == (first_round[0] + 2 * penalty[0], first_round[1] + 2 * penalty[1])


def test_a_kuhn_forfeit_never_pays_better_than_any_legal_line():
    # Every legal line of play loses at most 2 chips in a round; a forfeited round costs exactly 2.
    worst = min(terminal_value(h, deal) * sign for deal in DEALS for h in TERMINALS for sign in (1, -1))
    assert worst == -2
    for seed in range(6):
        game = make_game("kuhn", seed)
        result = play_game(game, (StallerPlayer(), RANDOM), seed)
        assert result.rewards[0] == worst


def test_textarena_kuhn_moves_no_chips_on_bet_or_call():
    env = ta.make("KuhnPoker-v0")
    env.reset(num_players=2, seed=0)
    env.step("[bet]")
    assert env.state.game_state["pot"] == 2  # standard Kuhn: 3
    env.step("[call]")
    showdown = [message for _, message in env.state.logs if message.startswith("Showdown")]
    assert "wins pot of 2 chips." in showdown[0]  # standard Kuhn: 4
    # A bet and a call, yet the round moved one chip: standard Kuhn would show -2 and 2.
    assert re.search(r"Current scores: Player 0: '(-1|1)'; Player 1: '(-1|1)'", showdown[0])


def test_arena_kuhn_moves_a_chip_on_bet_and_call():
    game = make_game("kuhn", 0)
    game.step("[bet]")
    assert game._env.state.game_state["pot"] == 3
    game.step("[call]")
    result = game.result()
    showdown = [message for _, message in game._env.state.logs if message.startswith("Showdown")]
    assert "wins pot of 4 chips. Current scores" in showdown[0]
    assert sorted(result.rewards) == [-2.0, 2.0]


def _seeds_by_deal() -> dict[tuple[int, int], int]:
    seeds: dict[tuple[int, int], int] = {}
    seed = 0
    while len(seeds) < len(DEALS):
        game = make_game("kuhn", seed)
        game.step("[check]")
        game.step("[check]")
        seeds.setdefault(game.completed_rounds[0].cards, seed)
        seed += 1
    return seeds


def _kuhn_action(legal: tuple[str, ...], letter: str) -> str:
    wanted = ("[bet]", "[call]") if letter == "b" else ("[check]", "[fold]")
    return next(action for action in legal if action in wanted)


def test_kuhn_pays_standard_chips_for_every_deal_and_history():
    # Exhaustive: 6 deals x 5 terminal histories through the engine, each against the rulebook payoff.
    for cards, seed in _seeds_by_deal().items():
        for history in TERMINALS:
            game = make_game("kuhn", seed)
            opener = game.current_player
            assert opener == 1  # TextArena's round 1 is opened by player 1
            for depth, letter in enumerate(history):
                observation = game.observation()
                assert observation.info_set == info_set_name(cards[observation.player_id], history[:depth])
                game.step(_kuhn_action(observation.legal_actions, letter))
            result = game.result()
            expected = terminal_value(history, (cards[opener], cards[1 - opener]))
            assert result.rewards[opener] == expected and result.rewards[1 - opener] == -expected
            assert result.round_rewards == (result.rewards,)
            chips = game._env.state.game_state["player_chips"]
            assert (chips[0], chips[1]) == result.rewards  # the env's chips agree with the rulebook


def test_kuhn_sampled_value_of_uniform_random_play_matches_one_eighth():
    # Player 1 opens a one-round game. Payoffs lie in [-2, 2]; the tolerance is 4 standard errors of the
    # sample mean (sample std / sqrt(n)), so a correct engine fails with probability < 1e-4 and the fixed
    # seeds make the outcome reproducible.
    n = 3000
    payoffs = [play_game(make_game("kuhn", seed), (RANDOM, RANDOM), seed).rewards[1] for seed in range(n)]
    mean = sum(payoffs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in payoffs) / (n - 1))
    assert abs(mean - 0.125) < 4 * std / math.sqrt(n), (mean, std)


def test_kuhn_multi_round_games_alternate_the_opener_and_sum_rounds():
    game = make_game("kuhn", 4, {"rounds": 3})
    result = play_game(game, (RANDOM, RANDOM), 4)
    assert [r.opener for r in game.completed_rounds] == [1, 0, 1]
    assert result.round_rewards == tuple(seat_payoffs(r) for r in game.completed_rounds)
    assert result.rewards == (sum(r[0] for r in result.round_rewards), sum(r[1] for r in result.round_rewards))
    chips = game._env.state.game_state["player_chips"]
    assert (chips[0], chips[1]) == result.rewards  # no extra ante after the last round


def test_kuhn_observations_expose_info_set_compact_and_state():
    cards, seed = next(iter(_seeds_by_deal().items()))
    game = make_game("kuhn", seed)
    names = "JQK"
    first = game.observation()
    assert first.info_set == f"{cards[1]}" and first.player_id == 1
    assert first.compact == f"card: {names[cards[1]]}\nhistory: \n"
    assert first.state == {"card": cards[1], "history": "", "round": 1, "rounds": 1}
    assert first.legal_actions == ("[check]", "[bet]")
    assert "Kuhn Poker" in first.text
    game.step("[check]")
    second = game.observation()
    assert second.info_set == f"{cards[0]}p" and second.compact == f"card: {names[cards[0]]}\nhistory: p\n"
    game.step("[bet]")
    third = game.observation()
    assert third.info_set == f"{cards[1]}pb" and third.compact == f"card: {names[cards[1]]}\nhistory: pb\n"
    assert third.legal_actions == ("[fold]", "[call]")


def test_compact_views_of_the_other_games():
    ttt = make_game("tictactoe", 0)
    ttt.step("[4]")
    assert ttt.observation().compact == "012\n3O5\n678\nmark: X\n"
    assert ttt.observation().state == {"board": ["", "", "", "", "O", "", "", "", ""], "mark": "X"}
    nim = make_game("nim", 0)
    nim.step("[2 5]")
    assert nim.observation().compact == "piles: 3 4 0\n"
    dice = make_game("liarsdice", 0)
    own = dice.observation().state["dice"]
    assert dice.observation().compact == f"dice: {' '.join(map(str, own))}\nopponent dice: 3\nbid: none\n"
    dice.step("[Bid: 2, 5]")
    assert dice.observation().compact.endswith("opponent dice: 3\nbid: 2 of 5\n")
    assert dice.observation().state["bid"] == (2, 5)
    assert dice.observation().legal_actions[:3] == ("[Call]", "[Bid: 2, 6]", "[Bid: 3, 5]")
    assert legal_actions(dice) == dice.observation().legal_actions


def _mixed_games() -> list[tuple[str, dict | None, int]]:
    specs = [("kuhn", {"rounds": 3}), ("liarsdice", None), ("tictactoe", None), ("nim", None), ("kuhn", None)]
    return [(game_id, variant, seed) for seed in range(4) for game_id, variant in specs]


def test_interleaved_games_match_sequential_games_and_leave_global_random_alone():
    random.seed(12345)
    before = random.getstate()
    sequential = [
        play_game(make_game(game_id, seed, variant), (RANDOM, RANDOM), seed).transcript_digest
        for game_id, variant, seed in _mixed_games()
    ]
    assert random.getstate() == before  # playing games never moves the caller's global random
    games = [(make_game(game_id, seed, variant), seed) for game_id, variant, seed in _mixed_games()]
    while any(not game.done for game, _ in games):
        for game, seed in games:
            if not game.done:
                observation = dataclasses.replace(game.observation(), sample_key=seed * 1_000 + len(game.actions))
                random.random()  # the caller drawing from global random between steps must not matter
                game.step(RANDOM.act(observation).action)
    assert [game.result().transcript_digest for game, _ in games] == sequential


def test_raw_textarena_envs_interleaved_lose_determinism():
    # Why the isolation exists: a second env's reset reseeds the global RNG the first one deals from.
    def round_two_cards(interleave: bool) -> dict:
        env = ta.make("KuhnPoker-v0")
        env.reset(num_players=2, seed=1)
        if interleave:
            ta.make("KuhnPoker-v0").reset(num_players=2, seed=2)
        env.step("[check]")
        env.step("[check]")
        return dict(env.state.game_state["player_cards"])

    assert round_two_cards(interleave=True) != round_two_cards(interleave=False)


@pytest.mark.parametrize("game_id", sorted(GAMES))
def test_replay_reproduces_the_digest_and_detects_a_changed_action(game_id):
    game = make_game(game_id, 21)
    result = play_game(game, (RANDOM, RANDOM), 21)
    again = replay(game_id, game.variant, 21, game.actions)
    assert again == result
    assert replay(game_id, None, 21, list(game.actions)).transcript_digest == result.transcript_digest
    # Change one action to another legal one at the first decision with a choice, then play on.
    changed = make_game(game_id, 21)
    for action in game.actions:
        alternatives = [a for a in changed.observation().legal_actions if a != action]
        changed.step(alternatives[0] if alternatives else action)
        if alternatives:
            break
    changed_result = play_game(changed, (RANDOM, RANDOM), 21)
    assert changed_result.transcript_digest != result.transcript_digest


def test_replay_digest_depends_on_the_seed_and_rejects_wrong_lengths():
    actions = ["[check]", "[check]"]
    digests = {replay("kuhn", None, seed, actions).transcript_digest for seed in range(12)}
    assert len(digests) == 12
    with pytest.raises(ValueError, match="unfinished"):
        replay("kuhn", None, 0, ["[check]"])
    with pytest.raises(ValueError, match=r"ended after 2 of 3 actions"):
        replay("kuhn", None, 0, ["[check]", "[check]", "[check]"])


def test_finished_and_unfinished_games_refuse_the_wrong_calls():
    game = make_game("nim", 0, {"piles": [1]})
    with pytest.raises(RuntimeError, match="not over"):
        game.result()
    with pytest.raises(TypeError, match="must be a str"):
        game.step(3)
    game.step("[0 1]")
    assert game.done and game.result().rewards == (1.0, -1.0)
    with pytest.raises(RuntimeError, match="is over"):
        game.observation()
    with pytest.raises(RuntimeError, match="is over"):
        game.step("[0 1]")
    with pytest.raises(TypeError, match="seed must be an int"):
        make_game("nim", "0")


def test_tictactoe_opening_is_a_seeded_start_that_never_ends_the_game_and_replays():
    # opening 0 is the standard game itself: one canonical variant, so its records and hashes do not move.
    assert get_spec("tictactoe").validate_variant({"opening": 0}) == {}
    assert make_game("tictactoe", 3, {"opening": 0}).opening is None
    lengths = set()
    for seed in range(300):
        game = make_game("tictactoe", seed, {"opening": 8})
        again = make_game("tictactoe", seed, {"opening": 8})
        assert game.opening == again.opening and game.actions == [] and not game.done
        lengths.add(len(game.opening))
        # The opening is on the board and its cells are gone from the legal moves; the player to move follows it.
        assert set(game.opening).isdisjoint(game.observation().legal_actions)
        assert game.current_player == len(game.opening) % 2
        result = play_game(game, (RANDOM, RANDOM), seed)
        assert replay("tictactoe", {"opening": 8}, seed, game.actions) == result
        assert result.turns == len(game.actions)
    # How many moves is uniform in 0..8 (8 itself is rarer: a board may leave no move that keeps the game going).
    assert lengths == set(range(9))
    assert len({make_game("tictactoe", seed, {"opening": 4}).opening for seed in range(50)}) > 20


def test_tictactoe_opening_moves_never_complete_a_line():
    from arena.games.tictactoe import opening_moves

    assert opening_moves(["O", "O", "", "X", "X", "", "", "", ""], "O") == ["[5]", "[6]", "[7]", "[8]"]
    assert opening_moves(["O", "O", "", "X", "X", "", "", "", ""], "X") == ["[2]", "[6]", "[7]", "[8]"]


def test_nim_opening_is_a_seeded_start_inside_the_start_piles_that_never_takes_the_last_object():
    from arena.games.nim import opening_moves

    assert opening_moves([0, 2, 0]) == ["[1 1]"] and opening_moves([0, 1, 0]) == []
    assert get_spec("nim").validate_variant({"opening": 0}) == {"piles": [3, 4, 5]}
    assert make_game("nim", 3).opening is None
    starts = set()
    for seed in range(200):
        game = make_game("nim", seed, {"opening": 11})
        assert game.opening == make_game("nim", seed, {"opening": 11}).opening and not game.done
        piles = tuple(game.observation().state["piles"])
        starts.add(piles)
        # Every opening stays inside the start piles, so the held-out configurations stay unseen in training.
        assert all(size <= start for size, start in zip(piles, (3, 4, 5), strict=True)) and sum(piles) >= 1
        result = play_game(game, (RANDOM, RANDOM), seed)
        assert replay("nim", {"opening": 11}, seed, game.actions) == result
    # Openings of every length: from the start itself down to one object left.
    assert len(starts) > 40 and (3, 4, 5) in starts and any(sum(piles) == 1 for piles in starts)
