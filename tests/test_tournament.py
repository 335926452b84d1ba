"""Tests for arena.eval (tournament, ratings, scorecards, leaderboard): seed checks, round robin, TrueSkill, cards."""

import copy
import json

import pytest
import trueskill
from tourney_fakes import ScriptedPlay, make_record, pin_of

from arena.core.artifacts import dump_json
from arena.core.code import closure, code_digest, producing_code, project_root
from arena.core.config import ConfigError
from arena.core.hashing import digest_config
from arena.core.seeds import check_seed_ranges
from arena.eval.config import EvalConfig
from arena.eval.errors import TournamentError
from arena.eval.leaderboard import build_leaderboard, write_leaderboard
from arena.eval.ratings import Outcome, update_ratings
from arena.eval.scorecards import (
    card_digest,
    load_archive,
    load_excluded,
    make_scorecard,
    verify_card,
    write_scorecards,
)
from arena.eval.tournament import run_tournament

STRENGTH = {"oracle": 3.0, "first": 2.0, "random": 1.0}


def _config(seeds=range(1000, 1040), games=("kuhn", "tictactoe")):
    return EvalConfig.from_dict({"games": list(games), "seeds": [seeds.start, seeds.stop]})


def _tournament(players=("random", "oracle", "first"), play=None, config=None):
    return run_tournament(config or _config(), list(players), play or ScriptedPlay(STRENGTH))


# --------------------------------------------------------------------------------------------- config and seeds


def test_eval_config_round_trips_and_hashes_its_canonical_form():
    config = EvalConfig.from_dict(
        {"games": ["kuhn", {"id": "nim", "variant": {"piles": [3, 4]}}], "seeds": {"start": 5, "stop": 9}}
    )
    assert EvalConfig.from_dict(config.to_dict()) == config
    assert config.digest() == digest_config(config.to_dict())
    assert [game.label for game in config.games] == ["kuhn", "nim[piles=[3, 4]]"]
    assert config.trueskill_env() is not trueskill.global_env()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"games": ["kuhn"], "seeds": [10, 10]}, r"eval.seeds \[10, 10\) is empty"),
        ({"games": [], "seeds": [0, 5]}, "eval.games is empty"),
        ({"games": ["kuhn", "kuhn"], "seeds": [0, 5]}, "twice"),
        ({"games": [{"id": "kuhn", "bogus": 1}], "seeds": [0, 5]}, r"eval.games\[0\]"),
        ({"games": ["kuhn"], "seeds": [0, 5], "players": ["a"]}, "unknown keys"),
        ({"games": ["kuhn"], "seeds": [0, 5], "trueskill": {"draw_probability": 0.0}}, "draw_probability"),
        ({"games": ["kuhn"], "seeds": [0.5, 5]}, "integers"),
    ],
)
def test_eval_config_rejects_bad_values(data, message):
    with pytest.raises(ConfigError, match=message):
        EvalConfig.from_dict(data)


def test_overlapping_seed_ranges_are_refused_naming_both():
    with pytest.raises(ConfigError, match=r"\[1000, 1040\).*\[0, 1010\).*\[1000, 1010\)"):
        check_seed_ranges(range(1000, 1040), [range(2000, 3000), (0, 1010)])
    with pytest.raises(ConfigError, match=r"\[1000, 1040\) overlap.*\[1039, 1041\)"):
        run_tournament(
            _config(), ["a", "b"], ScriptedPlay({"a": 1, "b": 2}), reserved_seeds=[{"start": 1039, "stop": 1041}]
        )
    # Touching ranges share no seed: [0, 1000) and [1000, 1040) are disjoint.
    check_seed_ranges(range(1000, 1040), [range(0, 1000), [1040, 5000]])


def test_fewer_than_two_players_or_duplicates_are_refused():
    with pytest.raises(TournamentError, match="at least two"):
        _tournament(players=["oracle"])
    with pytest.raises(TournamentError, match="listed twice"):
        _tournament(players=["oracle", "random", "oracle"])


# --------------------------------------------------------------------------------------------- ratings


def test_draw_between_equals_leaves_mu_unchanged_and_shrinks_sigma():
    env = trueskill.TrueSkill(draw_probability=0.2)
    after = update_ratings({}, [Outcome("a", "b", 0.5)], env=env)
    assert after["a"].mu == pytest.approx(env.mu, abs=1e-9)
    assert after["b"].mu == pytest.approx(env.mu, abs=1e-9)
    assert after["a"].sigma < env.sigma


def test_upset_moves_ratings_more_than_an_expected_win():
    env = trueskill.TrueSkill(draw_probability=0.1)
    start = {"strong": env.create_rating(mu=32, sigma=3), "weak": env.create_rating(mu=20, sigma=3)}
    before = {name: (rating.mu, rating.sigma) for name, rating in start.items()}
    expected = update_ratings(start, [Outcome("strong", "weak", 1.0)], env=env)
    upset = update_ratings(start, [Outcome("strong", "weak", 0.0)], env=env)
    expected_move = expected["strong"].mu - start["strong"].mu
    upset_move = upset["weak"].mu - start["weak"].mu
    assert expected_move > 0 and upset_move > 0
    assert upset_move > 3 * expected_move
    # Pure: the input mapping is not modified.
    assert {name: (rating.mu, rating.sigma) for name, rating in start.items()} == before


def test_update_order_is_respected_and_deterministic():
    env = trueskill.TrueSkill(draw_probability=0.1)
    games = [Outcome("a", "b", 1.0), Outcome("a", "c", 0.0), Outcome("b", "c", 0.5)]
    once, again = update_ratings({}, games, env=env), update_ratings({}, games, env=env)
    assert {k: (r.mu, r.sigma) for k, r in once.items()} == {k: (r.mu, r.sigma) for k, r in again.items()}
    reordered = update_ratings({}, list(reversed(games)), env=env)
    assert reordered["a"].mu != once["a"].mu


# --------------------------------------------------------------------------------------------- tournament and cards


def test_round_robin_plays_every_pair_on_every_game_with_the_eval_seeds():
    play = ScriptedPlay(STRENGTH)
    result = _tournament(play=play)
    pairs = {(a, b) for _, _, a, b, _ in play.calls}
    assert pairs == {("random", "oracle"), ("random", "first"), ("oracle", "first")}
    assert sorted(call[0] for call in play.calls) == ["kuhn"] * 3 + ["tictactoe"] * 3
    assert all(call[4] == list(range(1000, 1040)) for call in play.calls)
    assert len(result.cards) == 6 and result.excluded == {}
    for card in result.cards:
        verify_card(card)


def test_score_card_pins_both_players_and_recomputes_its_score():
    config = _config()
    records = ScriptedPlay(STRENGTH)("kuhn", {}, "oracle", "random", list(config.seeds))
    card = make_scorecard(config, config.games[0], "oracle", "random", records)
    assert card["players"] == [{"spec": "oracle", "pin": pin_of("oracle")}, {"spec": "random", "pin": pin_of("random")}]
    assert card["eval_config_hash"] == config.digest()
    assert card["seeds"] == {"start": 1000, "stop": 1040}
    assert card["digest"] == card_digest(card) == digest_config({k: v for k, v in card.items() if k != "digest"})
    assert [o["seed"] for o in card["outcomes"]] == list(range(1000, 1040))
    assert set(card["outcomes"][0]) >= {"seed", "players", "rewards", "transcript_digest", "errored"}
    assert card["summary"]["wins"] == {"p0": 40, "p1": 0, "draws": 0}
    # Standard-Kuhn chips: oracle wins +1 net per game over three rounds.
    assert card["summary"]["mean_chips_per_round"]["p0"] == pytest.approx(1 / 3)
    tampered = copy.deepcopy(card)
    tampered["outcomes"][0]["rewards"] = [-1, 1]
    with pytest.raises(TournamentError, match="digest"):
        verify_card(tampered)
    tampered["digest"] = card_digest(tampered)
    with pytest.raises(TournamentError, match="summary does not follow"):
        verify_card(tampered)
    foreign = copy.deepcopy(card)
    foreign["game_id"] = "chess"
    foreign["digest"] = card_digest(foreign)
    with pytest.raises(TournamentError, match="'chess' {} is not in its eval config"):
        verify_card(foreign)


def test_cards_reject_records_that_do_not_match_the_request():
    config = _config()
    records = ScriptedPlay(STRENGTH)("kuhn", {}, "oracle", "random", list(config.seeds))
    with pytest.raises(TournamentError, match="39 records for 40 seeds"):
        make_scorecard(config, config.games[0], "oracle", "random", records[:-1])
    with pytest.raises(TournamentError, match=r"records for game\(s\) \['kuhn'\]"):
        make_scorecard(config, config.games[1], "oracle", "random", records)
    changed = copy.deepcopy(records)
    changed[3]["pins"][changed[3]["players"].index("oracle")] = {"kind": "scripted", "code_digest": "other"}
    with pytest.raises(TournamentError, match="changed pin"):
        make_scorecard(config, config.games[0], "oracle", "random", changed)
    fixed_seats = copy.deepcopy(records)
    for record in fixed_seats[1::2]:
        record["players"].reverse()
        record["pins"].reverse()
        record["rewards"].reverse()
    with pytest.raises(TournamentError, match="seat 0 in 40 of 40 games"):
        make_scorecard(config, config.games[0], "oracle", "random", fixed_seats)
    unpinned = copy.deepcopy(records)
    unpinned[5]["pins"] = None
    with pytest.raises(TournamentError, match="no pin dict"):
        make_scorecard(config, config.games[0], "oracle", "random", unpinned)
    # An errored game may lack pins (the endpoint never answered): it scores nobody, so that is accepted.
    unpinned[5].update(errored=True, error="endpoint unreachable")
    card = make_scorecard(config, config.games[0], "oracle", "random", unpinned)
    assert card["summary"]["errored"] == 1 and card["players"][0]["pin"] == pin_of("oracle")


def test_player_that_fails_to_load_is_reported_and_left_out():
    play = ScriptedPlay({**STRENGTH, "mlx:missing": 9.0}, fail_load={"mlx:missing": "no such model directory"})
    result = _tournament(players=("random", "mlx:missing", "oracle", "first"), play=play)
    assert result.excluded == {"mlx:missing": "failed to load or play: no such model directory"}
    assert all("mlx:missing" not in (p["spec"] for p in card["players"]) for card in result.cards)
    assert len(result.cards) == 6
    # After the first failure the player is not asked to play again.
    assert sum("mlx:missing" in call[2:4] for call in play.calls) == 1
    board = build_leaderboard(result.cards, excluded=result.excluded)
    assert [row["player"] for row in board["ranking"]] == ["oracle", "first", "random"]
    assert board["unrated"] == [{"player": "mlx:missing", "reason": result.excluded["mlx:missing"]}]


def test_player_with_only_errored_games_is_reported_and_never_scored():
    play = ScriptedPlay({**STRENGTH, "openai:m@http://x": 9.0}, broken=["openai:m@http://x"])
    result = _tournament(players=("random", "oracle", "openai:m@http://x"), play=play)
    assert list(result.excluded) == ["openai:m@http://x"]
    assert "endpoint unreachable (synthetic)" in result.excluded["openai:m@http://x"]
    board = build_leaderboard(result.cards)
    assert [row["player"] for row in board["ranking"]] == ["oracle", "random"]


def test_errored_games_count_for_neither_side_in_the_leaderboard():
    config = _config(games=("tictactoe",))
    records = ScriptedPlay(STRENGTH)("tictactoe", {}, "oracle", "random", list(config.seeds))
    records[0].update(errored=True, error="timeout", rewards=[-1, 1])
    card = make_scorecard(config, config.games[0], "oracle", "random", records)
    board = build_leaderboard([card])
    oracle = next(row for row in board["ranking"] if row["player"] == "oracle")
    assert (oracle["games"], oracle["wins"], oracle["errored"]) == (39, 39, 1)
    cell = board["head_to_head"]["overall"][0][1]
    assert (cell["games"], cell["wins"], cell["errored"]) == (39, 39, 1)


# --------------------------------------------------------------------------------------------- leaderboard and archive


def test_leaderboard_ranks_by_conservative_rating_with_head_to_head():
    board = build_leaderboard(_tournament().cards)
    ranking = board["ranking"]
    assert [row["player"] for row in ranking] == ["oracle", "first", "random"]
    assert [row["rank"] for row in ranking] == [1, 2, 3]
    for row in ranking:
        assert row["conservative"] == pytest.approx(row["mu"] - 3 * row["sigma"], abs=2e-6)
        assert row["pin"] == pin_of(row["player"]) and row["pin_digest"] == digest_config(pin_of(row["player"]))
        assert row["games"] == 160
    assert ranking[0]["wins"] == 160 and ranking[0]["win_rate"]["low"] > 0.97
    assert board["head_to_head"]["players"] == ["oracle", "first", "random"]
    overall = board["head_to_head"]["overall"]
    assert overall[0][0] is None
    assert overall[0][2]["win_rate"]["rate"] == 1.0 and overall[2][0]["win_rate"]["rate"] == 0.0
    assert set(board["ratings_by_game"]) == {"kuhn", "tictactoe"}
    assert len(board["pairs"]) == 6
    assert all("mean_chips_per_round" in pair for pair in board["pairs"] if pair["game"] == "kuhn")
    assert not any("mean_chips_per_round" in pair for pair in board["pairs"] if pair["game"] == "tictactoe")


def test_leaderboard_upsets_lower_the_favourite():
    plain = build_leaderboard(_tournament().cards)
    upsets = ScriptedPlay(STRENGTH, upsets={("oracle", "first"): 12})
    shaken = build_leaderboard(_tournament(play=upsets).cards)
    mu = {board_id: {r["player"]: r["mu"] for r in b["ranking"]} for board_id, b in (("p", plain), ("u", shaken))}
    assert mu["u"]["oracle"] < mu["p"]["oracle"]
    assert mu["u"]["first"] > mu["p"]["first"]


def test_leaderboard_is_byte_identical_whatever_the_card_order(tmp_path):
    cards = _tournament().cards
    first = dump_json(build_leaderboard(cards))
    second = dump_json(build_leaderboard(list(reversed(copy.deepcopy(cards)))))
    assert first == second
    write_leaderboard(tmp_path / "a.json", build_leaderboard(cards))
    write_leaderboard(tmp_path / "b.json", build_leaderboard(cards))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert "NaN" not in first and "Infinity" not in first
    json.loads(first)


def test_archive_round_trip_is_byte_identical_and_verified(tmp_path):
    result = _tournament(
        players=("random", "oracle", "first", "mlx:gone"),
        play=ScriptedPlay(STRENGTH, fail_load={"mlx:gone": "missing weights"}),
    )
    written_a = write_scorecards(tmp_path / "a", result.cards, excluded=result.excluded)
    written_b = write_scorecards(tmp_path / "b", list(reversed(result.cards)), excluded=result.excluded)
    assert [p.name for p in written_a] == [p.name for p in written_b]
    assert all(pa.read_bytes() == pb.read_bytes() for pa, pb in zip(written_a, written_b, strict=True))
    loaded = load_archive([tmp_path / "a", tmp_path / "b"])
    assert len(loaded) == 6
    assert build_leaderboard(loaded) == build_leaderboard(result.cards)
    assert load_excluded([tmp_path / "a"]) == {"mlx:gone": "failed to load or play: missing weights"}
    # Rewriting an archive replaces it whole: no stale cards stay behind.
    write_scorecards(tmp_path / "a", result.cards[:2])
    assert len(load_archive([tmp_path / "a"])) == 2
    with pytest.raises(TournamentError, match="not a directory"):
        load_archive([tmp_path / "missing"])
    # A card edited by hand is caught, naming its file.
    victim = written_b[0]
    card = json.loads(victim.read_text())
    card["summary"]["wins"]["p0"] += 1
    victim.write_text(json.dumps(card))
    with pytest.raises(TournamentError, match=victim.name):
        load_archive([tmp_path / "b"])


def test_leaderboard_refuses_mixed_configs_conflicting_pins_and_empty_archives():
    cards = _tournament().cards
    other = _tournament(config=_config(seeds=range(5000, 5010))).cards
    with pytest.raises(TournamentError, match="mixes evaluation configs"):
        build_leaderboard(cards + other)
    with pytest.raises(TournamentError, match="empty"):
        build_leaderboard([])
    config = _config(games=("tictactoe",))
    records = ScriptedPlay(STRENGTH)("tictactoe", {}, "oracle", "first", list(config.seeds))
    for record in records:
        record["pins"] = [{"model_hash": "retrained"}, {"model_hash": "retrained"}]
    conflicting = make_scorecard(config, config.games[0], "oracle", "first", records)
    base = [c for c in _tournament(config=config, players=("oracle", "random")).cards]
    with pytest.raises(TournamentError, match="different pins"):
        build_leaderboard(base + [conflicting])


def test_all_games_errored_means_no_leaderboard():
    seats = (["a", "b"], ["b", "a"], ["a", "b"])
    records = [make_record("kuhn", s, seats[s], [0, 0], errored=True, error="down") for s in range(3)]
    config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [0, 3]})
    card = make_scorecard(config, config.games[0], "a", "b", records)
    with pytest.raises(TournamentError, match="no player completed"):
        build_leaderboard([card])


# --------------------------------------------------------------------------------------------- producing code

PINNED_CODE = {"entry": "stages/tournament.py", "code_digest": "c0de" * 16}


def test_score_card_records_the_producing_code_under_its_digest():
    config = _config()
    records = ScriptedPlay(STRENGTH)("kuhn", {}, "oracle", "random", list(config.seeds))
    card = make_scorecard(config, config.games[0], "oracle", "random", records, code=PINNED_CODE)
    assert card["code"] == PINNED_CODE
    verify_card(card)
    # The code is covered by the card's digest: other code, another card; edited code, a stale digest.
    other = make_scorecard(config, config.games[0], "oracle", "random", records,
                           code={**PINNED_CODE, "code_digest": "f" * 64})
    assert other["digest"] != card["digest"]
    assert {k: v for k, v in other.items() if k not in ("code", "digest")} == \
        {k: v for k, v in card.items() if k not in ("code", "digest")}
    edited = copy.deepcopy(card)
    edited["code"]["code_digest"] = "f" * 64
    with pytest.raises(TournamentError, match="digest does not match"):
        verify_card(edited)
    # Without an override a card records this process's code (under pytest: arena/cli.py's closure).
    default = make_scorecard(config, config.games[0], "oracle", "random", records)
    assert default["code"] == producing_code() == {"entry": "arena/cli.py",
                                                   "code_digest": code_digest(closure("arena/cli.py"))}


def test_cards_written_before_code_digests_still_verify_and_malformed_code_is_refused():
    config = _config()
    records = ScriptedPlay(STRENGTH)("kuhn", {}, "oracle", "random", list(config.seeds))
    card = make_scorecard(config, config.games[0], "oracle", "random", records, code=PINNED_CODE)
    old = {k: v for k, v in card.items() if k != "code"}
    old["digest"] = card_digest(old)
    verify_card(old)
    assert build_leaderboard([old])["ranking"] == build_leaderboard([card])["ranking"]
    for bad in ({"entry": "stages/tournament.py"}, {**PINNED_CODE, "code_digest": 7}, "stages/tournament.py"):
        with pytest.raises(TournamentError, match="must be {'entry'"):
            make_scorecard(config, config.games[0], "oracle", "random", records, code=bad)
        forged = {**old, "code": bad}
        forged["digest"] = card_digest(forged)
        with pytest.raises(TournamentError, match="card: code .* must be"):
            verify_card(forged)


def test_tournament_cards_record_the_tournament_stage_code(monkeypatch):
    assert {card["code"]["code_digest"] for card in _tournament().cards} == {producing_code()["code_digest"]}
    pinned = run_tournament(_config(), ["oracle", "random"], ScriptedPlay(STRENGTH), code=PINNED_CODE)
    assert [card["code"] for card in pinned.cards] == [PINNED_CODE, PINNED_CODE]
    # Run as `python stages/tournament.py` (the DVC stage), the cards record that script's import closure.
    import __main__

    monkeypatch.setattr(__main__, "__file__", str(project_root() / "stages" / "tournament.py"), raising=False)
    stage = run_tournament(_config(), ["oracle", "random"], ScriptedPlay(STRENGTH))
    files = closure("stages/tournament.py")
    assert "arena/eval/scorecards.py" in files and "arena/eval/leaderboard.py" not in files
    assert stage.cards[0]["code"] == {"entry": "stages/tournament.py", "code_digest": code_digest(files)}


def test_code_digest_is_the_same_wherever_the_checkout_lies(tmp_path):
    files = closure("stages/tournament.py")
    for where in ("a", "deeper/b"):
        for rel in files:
            (tmp_path / where / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / where / rel).write_bytes((project_root() / rel).read_bytes())
    assert closure("stages/tournament.py", tmp_path / "a") == files
    assert code_digest(files, tmp_path / "a") == code_digest(files, tmp_path / "deeper" / "b") == code_digest(files)
    (tmp_path / "a" / "arena" / "eval" / "scorecards.py").write_text("# changed\n", encoding="utf-8")
    assert code_digest(files, tmp_path / "a") != code_digest(files)
