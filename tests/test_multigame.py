"""A model trained on several games is evaluated on each: every game's exact measures per round, as flat keys for
``dvc metrics show``, and a curve per game per measure in the report."""

import json
from pathlib import Path

import pytest
from dvc.utils.flatten import flatten

from arena.core.config import load_params
from arena.eval.config import EvalConfig, GameEntry
from arena.eval.roundeval import round_games
from arena.pipeline.presets import apply_preset, checked_flags, load_preset
from arena.pipeline.rounds import RoundPaths, round_zero
from arena.report.gameplots import exact_series, exact_tables, plot_exact_rounds
from arena.report.plots import PNG_SIGNATURE, ReportError

NIM = {"id": "nim", "variant": {"piles": [2, 3]}}
ROOT = Path(__file__).resolve().parents[1]


def test_round_games_adds_each_trained_game_eval_games_lack():
    listed = EvalConfig.from_dict({"games": [{"id": "kuhn", "variant": {"rounds": 5}}],
                                   "seeds": [9_000_000, 9_000_010]})
    games = round_games(listed.games, [("kuhn", {}), ("nim", {"piles": [2, 3]}), ("liarsdice", {})])
    # Kuhn keeps eval.games' 5-hand variant; the other trained games follow in their training order.
    assert [g.label for g in games] == ["kuhn[rounds=5]", "nim[piles=[2, 3]]", "liarsdice"]
    assert round_games(listed.games, [("kuhn", {})]) == listed.games
    assert round_games((GameEntry("nim", {"piles": [2, 3]}),), [("nim", {"piles": [3, 4, 5]})])[0].variant == {
        "piles": [2, 3]}
    # A training start distribution is not part of what is judged: TicTacToe trained from random openings is
    # evaluated from the empty board.
    assert [g.label for g in round_games(listed.games, [("tictactoe", {"opening": 6})])] == ["kuhn[rounds=5]",
                                                                                             "tictactoe"]
    assert [g.label for g in round_games(listed.games, [("nim", {"piles": [3, 4, 5], "opening": 6})])] == [
        "kuhn[rounds=5]", "nim[piles=[3, 4, 5]]"]


@pytest.fixture(scope="module")
def mixed_round_zero(base_model_dir, tmp_path_factory):
    """round0 of a Kuhn + Nim mix through the pipeline's own round function (4 evaluation games a game)."""
    root = tmp_path_factory.mktemp("artifacts")
    params = apply_preset(load_params(ROOT / "params.yaml"), {"selfplay.mix": [NIM], "roundeval.games": 4,
                                                       "roundeval.opponents": ["random"]})
    (root / "models").mkdir()
    (root / "models" / "base").symlink_to(base_model_dir)
    round_zero(RoundPaths(root, 0, 0), params)
    return json.loads((root / "evals" / "r0.json").read_text())


def test_a_mixed_rounds_evaluation_covers_every_game_it_trains_on(mixed_round_zero):
    result = mixed_round_zero
    assert set(result["exact"]) == {"kuhn[rounds=5]", "nim[piles=[2, 3]]"}
    assert result["kuhn[rounds=5]_vs_random"]["games"] == result["nim[piles=[2, 3]]_vs_random"]["games"] == 4
    # dvc metrics show prints DVC's own flattening of the file: one key per game per measure.
    flat = flatten(result)
    assert flat["exact.kuhn[rounds=5].exploitability"] == result["exploitability"]
    nim = result["exact"]["nim[piles=[2, 3]]"]
    assert flat["exact.nim[piles=[2, 3]].winning_move_mass_held_out"] == nim["winning_move_mass_held_out"]
    assert all(isinstance(flat[f"exact.{game}.{key}"], float)
               for game, measures in exact_series([result]).items() for key in measures)


def test_exact_curves_and_tables_per_game(mixed_round_zero):
    later = json.loads(json.dumps(mixed_round_zero))
    later["round"] = 1
    later["exact"]["nim[piles=[2, 3]]"]["winning_move_mass"] = 0.5
    series = exact_series([later, mixed_round_zero])
    assert set(series["nim[piles=[2, 3]]"]) == {"winning_move_mass", "winning_move_mass_held_out"}
    assert series["nim[piles=[2, 3]]"]["winning_move_mass"][1] == (1, 0.5)
    png = plot_exact_rounds([mixed_round_zero, later])
    assert png.startswith(PNG_SIGNATURE) and png == plot_exact_rounds([later, mixed_round_zero])
    lines = exact_tables([mixed_round_zero, later])
    assert "**nim[piles=[2, 3]]**" in lines and "**kuhn[rounds=5]**" in lines
    assert any(line.startswith("| 1 | 0.500 |") for line in lines)
    with pytest.raises(ReportError, match="no eval@r file has exact measures"):
        plot_exact_rounds([{"round": 0}])


@pytest.mark.parametrize("game", ["tictactoe", "nim", "leduc", "liarsdice"])
def test_each_games_recipe_trains_it_alone_and_validates(game):
    preset = ROOT / "presets" / f"{game}.yaml"
    assert load_preset(preset)["selfplay.game"] == game and load_preset(preset)["selfplay.mix"] == []
    assert f"-S selfplay.game={game}" in checked_flags(preset, load_params(ROOT / "params.yaml"))


def test_the_tictactoe_recipe_against_oracles_validates():
    preset = ROOT / "presets" / "tictactoe-oracles.yaml"
    assert load_preset(preset)["pool.scripted"] == ["oracle", "eps-oracle:0.5"]
    flags = checked_flags(preset, load_params(ROOT / "params.yaml"))
    assert "-S selfplay.game=tictactoe" in flags and "pool.scripted" in flags


def test_the_tictactoe_recipe_with_random_openings_validates():
    preset = ROOT / "presets" / "tictactoe-openings.yaml"
    assert load_preset(preset)["selfplay.variant"] == {"opening": 4}
    assert load_preset(preset)["pool.window"] == 1
    flags = checked_flags(preset, load_params(ROOT / "params.yaml"))
    assert "-S selfplay.game=tictactoe" in flags and "selfplay.variant" in flags and "pool.scripted" in flags


def test_the_nim_recipe_with_random_openings_validates():
    preset = ROOT / "presets" / "nim-openings.yaml"
    keys = load_preset(preset)
    assert keys["selfplay.variant"] == {"opening": 6} and keys["train.group_by"] == "seat"
    flags = checked_flags(preset, load_params(ROOT / "params.yaml"))
    assert "-S selfplay.game=nim" in flags and "selfplay.variant" in flags and "pool.scripted" in flags


def test_the_tictactoe_recipe_against_minimax_validates():
    preset = ROOT / "presets" / "tictactoe-minimax.yaml"
    keys = load_preset(preset)
    assert keys["pool.scripted"] == ["oracle"] and keys["train.group_by"] == "seat" and keys["selfplay.group_size"] == 4
    flags = checked_flags(preset, load_params(ROOT / "params.yaml"))
    assert "-S selfplay.game=tictactoe" in flags and "-S train.group_by=seat" in flags


def test_a_thinking_players_estimate_plots_its_point_and_skips_its_interval():
    # A thinking round's exact entry (arena.eval.thinkexact) carries its bootstrap interval and sample count beside
    # the estimate; the curves used to take the interval list for a number and stop the report with a TypeError.
    evals = [{"round": r, "exact": {"kuhn": {"estimated_from_reasonings": 16, "exploitability": value,
                                              "exploitability_interval": [value - 0.05, value + 0.05]}},
              "kuhn_vs_random": {"win_rate": 0.5}} for r, value in ((0, 0.435), (1, 0.437))]
    assert exact_series(evals) == {"kuhn": {"exploitability": [(0, 0.435), (1, 0.437)]}}
    assert plot_exact_rounds(evals).startswith(PNG_SIGNATURE)
    assert "| 1 | 0.437 | 0.500 |" in exact_tables(evals)
