"""Tests for arena.report: the rich table, deterministic PNG plots, self-contained HTML in headless Chromium."""

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console
from tourney_fakes import ScriptedPlay

from arena.core.artifacts import dump_json
from arena.core.hashing import digest_bytes
from arena.eval.config import EvalConfig
from arena.eval.leaderboard import build_leaderboard
from arena.eval.tournament import run_tournament
from arena.report.html import build_html, write_report
from arena.report.plots import PNG_SIGNATURE, ReportError, plot_head_to_head, plot_rounds, round_rows, validate_rounds
from arena.report.summary import player_name
from arena.report.table import render_table, unrated_lines

STRENGTH = {"oracle": 3.0, "first": 2.0, "random": 1.0, "mlx:artifacts/snapshots/r2": 2.5}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def leaderboard():
    config = EvalConfig.from_dict({"games": ["kuhn", "tictactoe"], "seeds": [1000, 1030]})
    play = ScriptedPlay(STRENGTH, upsets={("oracle", "first"): 8}, fail_load={"openai:gone@http://127.0.0.1:9": "down"})
    result = run_tournament(config, [*STRENGTH, "openai:gone@http://127.0.0.1:9"], play)
    return build_leaderboard(result.cards, excluded=result.excluded)


def _history(leaderboard):
    rows = []
    for round_index in range(3):
        for row in round_rows(round_index, leaderboard, {"oracle": 0.0, "random": 0.4583}):
            rows.append({**row, "mu": row["mu"] + round_index})
    return rows


def test_render_table_lists_the_ranking_in_80_columns_with_short_names(leaderboard):
    table = render_table(leaderboard)
    assert [column.header for column in table.columns] == ["#", "player", "rating", "win rate", "95% CI"]
    assert table.row_count == len(leaderboard["ranking"]) == 4
    console = Console(record=True, width=80)
    console.print(table)
    text = console.export_text()
    assert "\u2026" not in text and max(len(line) for line in text.splitlines()) <= 80
    names = ["round 2" if row["player"].endswith("snapshots/r2") else row["player"] for row in leaderboard["ranking"]]
    positions = [text.index(name) for name in names]
    assert positions == sorted(positions)
    assert "mlx:artifacts" not in text
    assert unrated_lines(leaderboard) == ["unrated: openai:gone@http://127.0.0.1:9 (failed to load or play: down)"]


def test_render_table_wide_adds_spec_pin_mu_sigma_and_games(leaderboard):
    table = render_table(leaderboard, wide=True)
    assert [column.header for column in table.columns] == [
        "#", "player", "spec", "pin", "mu", "sigma", "rating", "games", "win rate", "95% CI"]
    console = Console(record=True, width=200)
    console.print(table)
    text = console.export_text()
    assert leaderboard["ranking"][0]["pin_digest"][:12] in text and "mlx:artifacts/snapshots/r2" in text


def test_plots_are_byte_identical_across_renders_and_processes(leaderboard, tmp_path):
    head = plot_head_to_head(leaderboard)
    assert head.startswith(PNG_SIGNATURE)
    assert plot_head_to_head(leaderboard) == head
    assert plot_head_to_head(leaderboard, game="kuhn") != head
    rounds = plot_rounds(_history(leaderboard))
    assert rounds.startswith(PNG_SIGNATURE) and plot_rounds(_history(leaderboard)) == rounds
    # A fresh interpreter (fresh font cache, fresh matplotlib state) renders the same bytes.
    (tmp_path / "lb.json").write_text(dump_json(leaderboard))
    script = (
        "import json, sys; from arena.report.plots import plot_head_to_head; "
        "from arena.core.hashing import digest_bytes; "
        "print(digest_bytes(plot_head_to_head(json.load(open(sys.argv[1])))))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "lb.json")], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == digest_bytes(head)


def test_png_carries_no_software_or_date_metadata(leaderboard):
    head = plot_head_to_head(leaderboard)
    assert b"Software" not in head and b"matplotlib" not in head.lower()
    assert b"tIME" not in head


def test_unknown_game_matrix_is_refused(leaderboard):
    with pytest.raises(ReportError, match="no head-to-head matrix for game 'chess'"):
        plot_head_to_head(leaderboard, game="chess")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"round": 0, "player": "a", "win_rate": 0.5, "low": 0.4}, "missing keys"),
        ({"round": 0, "player": "a", "win_rate": 0.5, "low": 0.4, "high": 0.6, "mu": 25, "elo": 1}, "unknown keys"),
        ({"round": -1, "player": "a", "win_rate": 0.5, "low": 0.4, "high": 0.6, "mu": 25}, "integer >= 0"),
        ({"round": 0, "player": "a", "win_rate": 0.7, "low": 0.4, "high": 0.6, "mu": 25}, "low <= win_rate <= high"),
        ({"round": 0, "player": "a", "win_rate": None, "low": 0.4, "high": 0.6, "mu": 25}, "finite number"),
    ],
)
def test_round_history_is_validated(row, message):
    with pytest.raises(ReportError, match=message):
        validate_rounds([row])


def test_round_history_rejects_duplicates_and_sorts():
    row = {"round": 1, "player": "a", "win_rate": 0.5, "low": 0.4, "high": 0.6, "mu": 25.0}
    with pytest.raises(ReportError, match="two rows for player 'a' in round 1"):
        validate_rounds([row, dict(row)])
    rows = validate_rounds([row, {**row, "round": 0}])
    assert [r["round"] for r in rows] == [0, 1]
    assert rows[0]["exploitability"] is None and rows[0]["sigma"] is None


class _Collector(HTMLParser):
    """Collects tags with attributes, and the text of rows inside table#ranking."""

    def __init__(self):
        super().__init__()
        self.tags = []
        self.ranking_rows = []
        self._table_stack = []
        self._row = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self._table_stack.append(attrs.get("id"))
        if (
            tag == "tr"
            and self._table_stack
            and self._table_stack[-1] == "ranking"
            and "player" in attrs.get("class", "")
        ):
            self._row = []

    def handle_endtag(self, tag):
        if tag == "table" and self._table_stack:
            self._table_stack.pop()
        if tag == "tr" and self._row is not None:
            self.ranking_rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._row is not None and data.strip():
            self._row.append(data.strip())


def _parse(text):
    collector = _Collector()
    collector.feed(text)
    return collector


def test_html_is_self_contained(leaderboard, tmp_path):
    images = {"head to head": plot_head_to_head(leaderboard), "rounds": plot_rounds(_history(leaderboard))}
    page = build_html(leaderboard, images, tmp_path).read_text()
    parsed = _parse(page)
    tags = [tag for tag, _ in parsed.tags]
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    for tag, attrs in parsed.tags:
        for name in ("src", "href"):
            if name in attrs:
                assert attrs[name].startswith("data:image/png;base64,"), (tag, name, attrs[name][:40])
    assert "url(" not in page and "@import" not in page
    assert sum(tag == "img" for tag in tags) == 2
    assert [row[1] for row in parsed.ranking_rows] == [player_name(row["player"]) for row in leaderboard["ranking"]]
    assert "openai:gone@http://127.0.0.1:9" in page  # listed as unrated, as text only
    assert build_html(leaderboard, images, tmp_path / "again").read_text() == page


def test_write_report_is_byte_identical(leaderboard, tmp_path):
    first = write_report(leaderboard, tmp_path / "a", rounds=_history(leaderboard))
    second = write_report(leaderboard, tmp_path / "b", rounds=_history(leaderboard))
    assert [p.name for p in first] == ["head_to_head.png", "index.html", "leaderboard.json", "rounds.png"]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second, strict=True))
    assert (tmp_path / "a" / "leaderboard.json").read_text() == dump_json(leaderboard)


def test_the_report_draws_each_games_exact_measures(leaderboard, tmp_path):
    evals = [{"round": n, "exact": {"kuhn[rounds=5]": {"exploitability": 0.35 - 0.05 * n},
                                    "leduc": {"exploitability": 1.9 - 0.1 * n}}} for n in range(3)]
    files = write_report(leaderboard, tmp_path / "r", exact_rounds=evals)
    assert "exact_rounds.png" in [p.name for p in files]
    page = (tmp_path / "r" / "index.html").read_text()
    assert "each game&#x27;s exact measure over rounds" in page


def test_the_report_plots_a_thinking_runs_reasoning(leaderboard, tmp_path):
    stats = [{"reasoning_tokens_mean": 20.0 + n, "reasoning_tokens_std": 4.0, "last_named_differs_rate": 0.5 - 0.1 * n,
              "names_a_move_rate": 0.3} for n in range(3)]
    evals = [{"round": n, "rollout_reasoning": stats[n], "reasoning": stats[n]} for n in range(3)]
    files = write_report(leaderboard, tmp_path / "r", reasoning_rounds=evals)
    assert "reasoning_rounds.png" in [p.name for p in files]
    assert "reasoning length and disagreement over rounds" in (tmp_path / "r" / "index.html").read_text()
    assert "reasoning_rounds.png" not in [p.name for p in write_report(leaderboard, tmp_path / "plain")]


def test_the_report_leads_with_what_was_learned_and_flags_a_worse_last_round(leaderboard, tmp_path):
    evals = [{"round": n, "exact": {"kuhn[rounds=5]": {"exploitability": 0.35 - 0.1 * n},
                                    "leduc": {"exploitability": [1.893, 0.607, 1.357][n]}}} for n in range(3)]
    write_report(leaderboard, tmp_path / "r", exact_rounds=evals)
    page = (tmp_path / "r" / "index.html").read_text()
    assert page.index("What the build learned") < page.index("exact measure over rounds") < page.index("Ranking")
    assert "kuhn[rounds=5] exploitability (lower is better, 0 = Nash): round 0 0.350 -&gt; round 2 0.150" in page
    assert "<li class=flag>leduc exploitability" in page and "WORSE than its best, round 1 (0.607 -&gt; 1.357)" in page
    # A head-to-head per game (no "All games" beside them), each game's ratings collapsed, the pairs collapsed.
    assert page.count("<table") == 6 and "All games" not in page  # ranking, 2 matrices, 2 ratings, pairs
    assert "<details><summary>Ratings by game</summary>" in page
    assert '<details id="pairs-details">' in page and "round 2" in page


def _chromium() -> str:
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found:
        return found
    message = "chromium is not installed (Debian: apt-get install -y --no-install-recommends chromium)"
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"{message}; CI must run the browser test")
    pytest.skip(message)


def test_report_renders_in_headless_chromium(leaderboard, tmp_path):
    chromium = _chromium()
    out = tmp_path / "report"
    write_report(leaderboard, out, rounds=_history(leaderboard))
    # Test-only probe: after the load event, record each image's decoded width on <body>, so the dumped DOM
    # shows whether Chromium actually decoded the inlined PNGs (0 or -1 would mean a broken image).
    probe = (
        "<script>window.addEventListener('load', () => document.body.setAttribute('data-image-widths', "
        "Array.from(document.images).map(i => i.complete ? i.naturalWidth : -1).join(',')));</script></body>"
    )
    page = out / "probe.html"
    page.write_text((out / "index.html").read_text().replace("</body>", probe))
    profile = tmp_path / "chromium-profile"
    result = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = _parse(result.stdout)
    body = next(attrs for tag, attrs in dom.tags if tag == "body")
    widths = [int(w) for w in body["data-image-widths"].split(",")]
    assert len(widths) == 2 and all(w > 100 for w in widths), widths
    assert [row[1] for row in dom.ranking_rows] == [player_name(row["player"]) for row in leaderboard["ranking"]]
    table_ids = {attrs.get("id") for tag, attrs in dom.tags if tag == "table"}
    assert {"ranking", "head-to-head", "pairs"} <= table_ids


def _default_report(out: Path) -> Path:
    """The report of the committed default build (its leaderboard.json and eval@r files, what the report stage
    reads from the score cards), written to ``out``."""
    from arena.report.publish import round_history
    from arena.report.summary import load_evals

    root = Path(__file__).resolve().parents[1] / "artifacts"
    board = json.loads((root / "scores" / "leaderboard.json").read_text())
    files = sorted((root / "evals").glob("r*.json"))
    write_report(board, out, rounds=round_history(files, board, "random"), exact_rounds=load_evals(root / "evals"))
    return out / "index.html"


def test_the_default_report_fits_a_1400_pixel_window_in_chromium(tmp_path):
    chromium = _chromium()
    index = _default_report(tmp_path / "report")
    probe = ("<script>window.addEventListener('load', () => document.body.setAttribute('data-widths', "
             "document.documentElement.scrollWidth + ',' + window.innerWidth));</script></body>")
    page = tmp_path / "report" / "probe.html"
    page.write_text(index.read_text().replace("</body>", probe))
    result = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1000",
         "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    body = next(attrs for tag, attrs in _parse(result.stdout).tags if tag == "body")
    page_width, window = (int(w) for w in body["data-widths"].split(","))
    assert window == 1400 and page_width <= window, f"the page is {page_width} px wide in a {window} px window"
    text = index.read_text()
    assert text.index("What the build learned") < text.index("<h2>Ranking")
    assert "mlx:artifacts/snapshots/r8</td>" not in text and ">round 8</td>" in text
