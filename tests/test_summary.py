"""What a build says it learned: the line per round, `arena summary`'s text, and the leaderboard's fast path."""

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from arena.cli import main
from arena.report.board import archive_digests, leaderboard_for, published_leaderboard
from arena.report.summary import curve_facts, player_name, round_headline, round_line, summary_text

ROOT = Path(__file__).resolve().parents[1]


def _eval(n, kuhn, leduc, chips):
    return {"round": n, "snapshot": f"mlx:artifacts/snapshots/r{n}",
            "exact": {"kuhn[rounds=5]": {"exploitability": kuhn}, "leduc": {"exploitability": leduc}},
            "kuhn[rounds=5]_vs_oracle": {"win_rate": 0.5, "mean_reward": chips * 5, "exact_chips_per_hand": chips},
            "kuhn[rounds=5]_vs_random": {"win_rate": 0.6, "mean_reward": 0.6, "exact_chips_per_hand": 0.15},
            "leduc_vs_oracle": {"win_rate": 0.46, "mean_reward": -0.17}}


EVALS = [_eval(0, 0.349, 1.893, -0.139), _eval(1, 0.2, 0.607, -0.05), _eval(2, 0.017, 1.357, -0.001)]


def test_player_names_are_short():
    assert player_name("mlx:artifacts/snapshots/r8") == "round 8"
    assert player_name("mlx:/abs/path/artifacts/snapshots/r12/") == "round 12"
    assert player_name("mlx:artifacts/models/base") == "base"
    assert player_name("oracle") == "oracle" and player_name("mlx:my/model") == "mlx:my/model"


def test_round_line_gives_each_games_exact_measure_chips_against_the_oracle_and_time():
    line = round_line(EVALS[2], 125.4)
    assert line == ("round 2 done in 2m05s: kuhn[rounds=5] exploitability 0.017, -0.001 chips a hand vs oracle "
                    "(exact); leduc exploitability 1.357, -0.170 chips a game vs oracle")


def test_a_last_round_worse_than_an_earlier_best_is_flagged():
    assert curve_facts("exploitability", [(0, 1.893), (1, 0.607), (2, 1.357)])["regressed"]
    assert not curve_facts("exploitability", [(0, 0.349), (1, 0.2), (2, 0.017)])["regressed"]
    assert curve_facts("winning_move_mass", [(0, 0.2), (1, 0.9), (2, 0.5)])["regressed"]  # higher is better


def _board():
    pair = {"game": "kuhn[rounds=5]", "p0_win_rate": {"rate": 0.6, "low": 0.55, "high": 0.65},
            "mean_chips_per_round": {"p0": 0.25, "p1": -0.25}}
    return {"games": ["kuhn[rounds=5]"],
            "ranking": [{"player": p} for p in ("oracle", "mlx:artifacts/snapshots/r2", "mlx:artifacts/models/base")],
            "pairs": [{**pair, "p0": "mlx:artifacts/models/base", "p1": "mlx:artifacts/snapshots/r2",
                       "p0_win_rate": {"rate": 0.4, "low": 0.35, "high": 0.45},
                       "mean_chips_per_round": {"p0": -0.25, "p1": 0.25}},
                      {**pair, "p0": "mlx:artifacts/snapshots/r2", "p1": "oracle"}]}


def test_summary_reads_in_80_columns_curves_first_then_the_published_model():
    text = summary_text(EVALS, _board())
    assert max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())
    assert "kuhn[rounds=5] exploitability (lower is better, 0 = Nash): round 0 0.349 -> round 2 0.017" in flat
    assert "leduc exploitability (lower is better, 0 = Nash): round 0 1.893 -> round 2 1.357; WORSE" in flat
    assert "round 1 (0.607 -> 1.357)" in flat
    # The published model (the last round) against the stock model, oriented its way round.
    assert "round 2 vs base: +0.250 chips a hand, wins 0.600 [0.550, 0.650]" in flat
    assert "round 0 -0.139, round 2 -0.001" in flat
    assert flat.index("exploitability") < flat.index("Tournament")


def test_arena_summary_on_the_committed_default_build():
    result = CliRunner().invoke(main, ["summary", "--evals", str(ROOT / "artifacts/evals"),
                                       "--leaderboard", str(ROOT / "artifacts/scores/leaderboard.json")])
    assert result.exit_code == 0, result.output
    assert "kuhn[rounds=5] exploitability" in result.output and "round 8" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_arena_summary_without_evals_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["summary", "--evals", str(tmp_path)])
    assert result.exit_code == 2 and result.output.startswith("error: no eval file r<N>.json in")


def test_the_published_leaderboard_is_used_only_when_it_lists_the_archives_cards(tmp_path):
    digests = ["a" * 64, "b" * 64]
    archive = tmp_path / "final"
    archive.mkdir()
    for digest in digests:
        (archive / f"kuhn-{digest[:24]}.card.json").write_text("{}")
    published = tmp_path / "leaderboard.json"
    published.write_text(json.dumps({"cards": digests, "ranking": []}))
    assert archive_digests([archive]) == {d[:24] for d in digests}
    assert published_leaderboard([archive], published) == {"cards": digests, "ranking": []}
    assert leaderboard_for([archive], published)["cards"] == digests  # no card is read: they are not real cards
    (archive / f"kuhn-{'c' * 24}.card.json").write_text("{}")  # a card the published one lacks: out of date
    assert published_leaderboard([archive], published) is None
    published.write_text("not json")
    assert published_leaderboard([archive], published) is None


def test_a_rounds_headline_metrics_are_two_short_numbers_a_game():
    assert round_headline(EVALS[2]) == {"kuhn": {"exact": 0.017, "oracle": -0.001},
                                        "leduc": {"exact": 1.357, "oracle": -0.17}}
    assert round_headline({"round": 3, "loop": "lsp", "solved": 0.5}) == {"solved": 0.5}


def test_dvc_metrics_are_only_the_per_round_headline_files():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    metrics = [next(iter(entry)) if isinstance(entry, dict) else entry
               for stage in stages.values() for entry in (stage.get("do", stage).get("metrics") or [])]
    assert metrics == ["artifacts/metrics/r0.json", "artifacts/metrics/r${item.n}.json"]


def test_a_leaderboard_from_verified_cards_is_the_same_leaderboard():
    from tourney_fakes import ScriptedPlay

    from arena.eval.config import EvalConfig
    from arena.eval.leaderboard import build_leaderboard
    from arena.eval.tournament import run_tournament

    config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [1000, 1020]})
    cards = run_tournament(config, ["oracle", "first", "random"],
                           ScriptedPlay({"oracle": 3.0, "first": 2.0, "random": 1.0})).cards
    board = build_leaderboard(cards)
    assert build_leaderboard(cards, verified=True) == board
    # One game: its ratings are the overall ranking's.
    assert [(r["player"], r["mu"]) for r in board["ratings_by_game"]["kuhn"]] == \
        [(r["player"], r["mu"]) for r in board["ranking"]]


def test_a_shared_progress_bar_advances_a_game_at_a_time_and_stays_open():
    import io

    from tqdm import tqdm

    from arena.play.match import duplicate_schedule, play_match
    from arena.players.scripted import make_scripted

    schedule = list(duplicate_schedule(range(10), 20))
    bar = tqdm(total=40, file=io.StringIO(), disable=False)
    for _ in range(2):  # two matches under one bar, as a round's evaluation plays them
        play_match("kuhn", (make_scripted("random"), make_scripted("oracle")), schedule, bar=bar)
    assert bar.n == 40 and not bar.disable
    bar.close()
