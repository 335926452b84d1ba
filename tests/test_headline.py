"""The headline table: a local model against an endpoint, over all games and the games the endpoint played legally."""

from __future__ import annotations

import json

from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.headline import card_row, headline_markdown, write_headline
from arena.eval.runner import run_stage


def _outcome(seed: int, players: list[str], rewards: list[float], invalid: list[int], errored: bool = False) -> dict:
    return {"seed": seed, "players": players, "rewards": rewards, "invalid_moves": invalid, "errored": errored}


LOCAL, ENDPOINT = "mlx:models/trained", "openai:cold@http://127.0.0.1:1/v1"
# Six games: the endpoint forfeits two (invalid replies), loses one played legally, wins two legally, one errored.
OUTCOMES = [
    _outcome(0, [LOCAL, ENDPOINT], [2.0, -2.0], [0, 2]),   # a forfeit: a win that proves nothing
    _outcome(1, [ENDPOINT, LOCAL], [-1.0, 1.0], [1, 0]),   # another forfeit
    _outcome(2, [LOCAL, ENDPOINT], [1.0, -1.0], [0, 0]),   # won against legal play
    _outcome(3, [ENDPOINT, LOCAL], [2.0, -2.0], [0, 0]),   # lost against legal play
    _outcome(4, [LOCAL, ENDPOINT], [-1.0, 1.0], [0, 0]),   # lost against legal play
    _outcome(5, [ENDPOINT, LOCAL], [0.0, 0.0], [0, 0], errored=True),
]


def _card(outcomes=OUTCOMES) -> dict:
    return {"game_id": "kuhn", "variant": {}, "players": [{"spec": LOCAL}, {"spec": ENDPOINT}], "outcomes": outcomes}


def test_forfeits_are_counted_and_the_legal_games_scored_apart():
    row = card_row(_card())
    assert (row["player"], row["opponent"], row["game"]) == (LOCAL, ENDPOINT, "kuhn")
    assert row["all"]["games"] == 5 and row["errored"] == 1
    assert row["all"]["win_rate"][0] == 0.6 and row["all"]["chips"][0] == 0.2
    assert (row["opponent_invalid_moves"], row["opponent_invalid_games"]) == (3, 2)
    legal = row["opponent_legal"]
    assert legal["games"] == 3 and legal["win_rate"][0] == 0.3333 and legal["chips"][0] == round(-2 / 3, 4)
    low, high = legal["win_rate"][1:]
    assert 0.0 < low < 1 / 3 < high < 1.0


def test_a_draw_counts_half_and_an_opponent_never_legal_has_no_legal_block():
    row = card_row(_card([_outcome(0, [LOCAL, ENDPOINT], [0.0, 0.0], [0, 1])]))
    assert row["all"]["win_rate"][0] == 0.5 and row["opponent_legal"] == {"games": 0}
    assert "| 1 (1) | 0 | - | - |" in headline_markdown([{"archive": "headline", **row}])


def test_the_table_is_written_from_a_tournaments_archive(tmp_path):
    evaluation = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [9_000_000, 9_000_010]})
    run_stage(evaluation, TournamentConfig(players=("first", "random")), [], tmp_path / "scores")
    rows = write_headline([tmp_path / "scores"], tmp_path / "out")
    (row,) = rows
    assert (row["archive"], row["player"], row["opponent"], row["all"]["games"]) == ("scores", "first", "random", 10)
    assert row["opponent_legal"] == row["all"]  # scripted players make no invalid move
    assert json.loads((tmp_path / "out" / "headline.json").read_text())["rows"] == rows
    table = (tmp_path / "out" / "headline.md").read_text().splitlines()
    assert table[2].startswith("| scores | kuhn | first | random | 10 |")
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["inputs"]


def test_the_same_pairing_in_two_archives_is_two_labelled_rows(tmp_path):
    """realmodel's headline and headline-best play one endpoint spec under two system prompts: rows say which."""
    evaluation = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [9_000_000, 9_000_004]})
    for name in ("headline", "headline-best"):
        run_stage(evaluation, TournamentConfig(players=("first", "random")), [], tmp_path / name)
    rows = write_headline([tmp_path / "headline", tmp_path / "headline-best"], tmp_path / "out")
    assert [(row["archive"], row["player"], row["opponent"]) for row in rows] == [
        ("headline", "first", "random"), ("headline-best", "first", "random")]
