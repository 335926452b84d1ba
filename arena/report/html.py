"""The self-contained HTML report: what was learned first (each game's exact curve, the published model against the
stock model and the oracle), then the ranking, a head-to-head per game, the pairs (collapsed) and the plots."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir, atomic_write_text, dump_json
from arena.report.gameplots import plot_exact_rounds
from arena.report.lspplots import plot_lsp_rounds
from arena.report.plots import PNG_SIGNATURE, ReportError, plot_head_to_head, plot_rounds, short_label
from arena.report.summary import curve_facts, curve_sentence, curves, player_name, published_sentences
from arena.report.table import PIN_PREFIX, interval, number
from arena.report.thinkplots import plot_reasoning_rounds

_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
td { white-space: nowrap; }
td.cell { text-align: center; }
th { background: #f0f0f0; }
td.name, th.name { text-align: left; font-family: monospace; }
figure { display: inline-block; margin: 1em; }
img { max-width: 100%; }
.muted { color: #777; }
.flag { color: #b00020; font-weight: bold; }
.learned li { margin: 0.3em 0; }
details { margin: 1em 0; }
summary { cursor: pointer; font-weight: bold; }
"""


def _cell_colour(rate: float | None) -> str:
    """Red (0) through white (1/2) to blue (1), as the heatmap; grey when there is no result."""
    if rate is None:
        return "#dddddd"
    if rate < 0.5:
        t = rate / 0.5
        red, green, blue = 255, round(160 + 95 * t), round(160 + 95 * t)
    else:
        t = (rate - 0.5) / 0.5
        red, green, blue = round(255 - 95 * t), round(255 - 55 * t), 255
    return f"#{red:02x}{green:02x}{blue:02x}"


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _ranking_html(rows: Sequence[Mapping[str, Any]], table_id: str) -> str:
    """A rating table, players by short name (``round N``); the pin column appears when the rows carry pins (the
    overall ranking), its full spec and digest in the name's and pin's tooltips."""
    with_pin = bool(rows) and "pin_digest" in rows[0]
    names = ["#", "player", *(["pin"] if with_pin else []), "rating", "mu", "sigma", "games", "W-D-L", "errored"]
    names += ["win rate", "95% CI"]
    header = "".join(
        f'<th class="name">{name}</th>' if name in ("player", "pin") else f"<th>{name}</th>" for name in names
    )
    body = []
    for row in rows:
        pin = row.get("pin_digest", "")
        cells = [
            f"<td>{row['rank']}</td>",
            f'<td class="name" title="{_esc(row["player"])}">{_esc(player_name(row["player"]))}</td>',
            *([f'<td class="name" title="{_esc(pin)}">{_esc(pin[:8])}</td>'] if with_pin else []),
            f"<td>{number(row['conservative'])}</td>",
            f"<td>{number(row['mu'])}</td>",
            f"<td>{number(row['sigma'])}</td>",
            f"<td>{row['games']}</td>",
            f"<td>{row['wins']}-{row['draws']}-{row['losses']}</td>",
            f"<td>{row['errored']}</td>",
            f"<td>{number(row['win_rate']['rate'], 3)}</td>",
            f"<td>{interval(row['win_rate'])}</td>",
        ]
        body.append(f'<tr class="player">{"".join(cells)}</tr>')
    return f'<table id="{_esc(table_id)}"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _column_name(spec: str) -> str:
    """A matrix column's narrow name: ``r8`` for round 8, else the short name."""
    name = player_name(spec)
    return f"r{name[6:]}" if name.startswith("round ") else short_label(name, 12)


def _matrix_html(players: Sequence[str], matrix: Sequence[Sequence[Mapping[str, Any] | None]], table_id: str) -> str:
    header = '<th class="name">player \\ opponent</th>' + "".join(
        f'<th class="name" title="{_esc(p)}">{_esc(_column_name(p))}</th>' for p in players
    )
    body = []
    for player, row in zip(players, matrix, strict=True):
        cells = []
        for cell in row:
            rate = None if cell is None else cell["win_rate"]["rate"]
            text = "" if cell is None else f'{number(rate, 2)}<br><span class="muted">n={cell["games"]}</span>'
            cells.append(f'<td class="cell" style="background:{_cell_colour(rate)}">{text}</td>')
        body.append(f'<tr><td class="name" title="{_esc(player)}">{_esc(player_name(player))}</td>'
                    f'{"".join(cells)}</tr>')
    return f'<table id="{_esc(table_id)}"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


_PAIR_COLUMNS = ("game", "p0", "p1", "games", "p0 wins", "p1 wins", "draws", "errored", "p0 win rate", "95% CI",
                 "reward p0", "reward p1", "chips/hand p0", "chips/hand p1", "card")


def _pairs_html(leaderboard: Mapping[str, Any]) -> str:
    header = "".join(f"<th>{name}</th>" for name in _PAIR_COLUMNS)
    body = []
    for pair in leaderboard["pairs"]:
        chips = pair.get("mean_chips_per_round") or {"p0": None, "p1": None}
        cells = [
            f'<td class="name">{_esc(pair["game"])}</td>',
            f'<td class="name" title="{_esc(pair["p0"])}">{_esc(player_name(pair["p0"]))}</td>',
            f'<td class="name" title="{_esc(pair["p1"])}">{_esc(player_name(pair["p1"]))}</td>',
            f"<td>{pair['games']}</td>",
            f"<td>{pair['wins']['p0']}</td>",
            f"<td>{pair['wins']['p1']}</td>",
            f"<td>{pair['wins']['draws']}</td>",
            f"<td>{pair['errored']}</td>",
            f"<td>{number(pair['p0_win_rate']['rate'], 3)}</td>",
            f"<td>{interval(pair['p0_win_rate'])}</td>",
            f"<td>{number(pair['mean_reward']['p0'], 3)}</td>",
            f"<td>{number(pair['mean_reward']['p1'], 3)}</td>",
            f"<td>{number(chips['p0'], 3)}</td>",
            f"<td>{number(chips['p1'], 3)}</td>",
            f'<td class="name" title="{_esc(pair["card"])}">{_esc(pair["card"][:8])}</td>',
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    table = f'<table id="pairs"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return (f'<details id="pairs-details"><summary>Pairs: every pairing\'s result ({len(leaderboard["pairs"])} '
            f"score cards)</summary>{table}</details>")


def _image_html(title: str, data: bytes) -> str:
    if data.startswith(PNG_SIGNATURE):
        encoded = base64.b64encode(data).decode("ascii")
        inner = f'<img alt="{_esc(title)}" src="data:image/png;base64,{encoded}">'
    elif data.lstrip().startswith((b"<svg", b"<?xml")):
        inner = data.decode("utf-8").split("?>", 1)[-1] if data.lstrip().startswith(b"<?xml") else data.decode("utf-8")
    else:
        raise ReportError(f"image {title!r} is neither PNG nor SVG; render plots with plot_head_to_head/plot_rounds")
    return f"<figure>{inner}<figcaption>{_esc(title)}</figcaption></figure>"


def _learned_sections(leaderboard: Mapping[str, Any], evals: Sequence[Mapping[str, Any]],
                      exact_png: bytes | None) -> list[str]:
    """The headline: each game's exact curve in a sentence (a last round worse than an earlier best flagged), its
    plot, and the published model against the stock model and the oracle."""
    items = []
    for game, (key, points) in curves(evals).items():
        sentence = _esc(curve_sentence(game, key, points))
        flag = curve_facts(key, points)["regressed"]
        items.append(f'<li{" class=flag" if flag else ""}>{sentence}</li>')
    items += [f"<li>{_esc(line)}</li>" for line in published_sentences(leaderboard, evals)]
    if not items:
        return []
    sections = ["<h1>What the build learned</h1>", f'<ul class="learned" id="learned">{"".join(items)}</ul>']
    if exact_png is not None:
        sections.append(_image_html("each game's exact measure over rounds", exact_png))
    sections.append(
        "<p>The exact measures are computed from the model's policy over the whole game tree, not from sampled "
        "games. The ranking below counts wins (draws half), not chips: a game's winner is who holds more chips "
        "at its end, so a player can win often and still lose chips, and a near-even player such as "
        "<code>random</code> can rank above weaker rounds. Chips against the oracle are the game's measure.</p>")
    return sections


def _ranking_sections(leaderboard: Mapping[str, Any]) -> list[str]:
    """What was evaluated, the overall ranking and the unrated players."""
    config = leaderboard["eval_config"]
    sections = [
        "<h2>Ranking</h2>",
        f"<p>evaluation config <code>{_esc(leaderboard['eval_config_hash'][:PIN_PREFIX])}</code>: games "
        f"{_esc(', '.join(leaderboard['games']))}; seeds [{config['seeds']['start']}, {config['seeds']['stop']}); "
        f"{len(leaderboard['cards'])} score cards. Ranked by rating = TrueSkill mu - 3 sigma over every game; "
        "draws count as half a win.</p>",
        _ranking_html(leaderboard["ranking"], "ranking"),
    ]
    if leaderboard.get("unrated"):
        items = "".join(
            f"<li><code>{_esc(u['player'])}</code>: {_esc(u['reason'])}</li>" for u in leaderboard["unrated"]
        )
        sections.append(f'<h2>Unrated</h2><ul id="unrated">{items}</ul>')
    return sections


def _game_sections(leaderboard: Mapping[str, Any]) -> list[str]:
    """A head-to-head matrix per game (one game: its matrix is the overall one, shown once); with several games
    each game's own ratings, collapsed."""
    head = leaderboard["head_to_head"]
    games = leaderboard["games"]
    sections = ["<h2>Head to head (row's win rate against column)</h2>"]
    for index, game in enumerate(games):
        if len(games) > 1:
            sections.append(f"<h3>{_esc(game)}</h3>")
        table_id = "head-to-head" if index == 0 else f"head-to-head-{index}"
        sections.append(_matrix_html(head["players"], head["by_game"][game], table_id))
    if len(games) > 1:
        ratings = "".join(f"<h3>{_esc(game)}</h3>" + _ranking_html(leaderboard["ratings_by_game"][game],
                                                                      f"ratings-{index}")
                          for index, game in enumerate(games))
        sections.append(f"<details><summary>Ratings by game</summary>{ratings}</details>")
    return sections


def _plot_sections(images: Mapping[str, bytes | str | Path]) -> list[str]:
    """The images, inline, under one heading (nothing when there are none)."""
    if not images:
        return []
    sections = ["<h2>Plots</h2>"]
    for title in images:
        value = images[title]
        data = value if isinstance(value, bytes) else Path(value).read_bytes()
        sections.append(_image_html(title, data))
    return sections


def build_html(leaderboard: Mapping[str, Any], images: Mapping[str, bytes | str | Path], out_dir: str | Path,
               evals: Sequence[Mapping[str, Any]] = (), exact_png: bytes | None = None) -> Path:
    """Write ``out_dir/index.html``: what was learned (from ``evals``, the eval@r files, with ``exact_png`` their
    exact curves), the ranking, a head-to-head per game, the pairs (collapsed) and the images, all inline.

    ``images`` maps a caption to PNG/SVG bytes or a file path. The page loads nothing from anywhere:
    styles are inline and images are base64 data URIs (PNG) or inline SVG, so it renders offline.
    """
    learned = _learned_sections(leaderboard, evals, exact_png) or ["<h1>arena leaderboard</h1>"]
    sections = [*learned, *_ranking_sections(leaderboard),
                *_game_sections(leaderboard), "<h2>Pairs</h2>", _pairs_html(leaderboard), *_plot_sections(images)]
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>arena: what the build learned</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
    path = Path(out_dir) / "index.html"
    atomic_write_text(path, page)
    return path


def write_report(
    leaderboard: Mapping[str, Any], out_dir: str | Path, *, rounds: Sequence[Mapping[str, Any]] | None = None,
    lsp_rounds: Sequence[Mapping[str, Any]] | None = None, exact_rounds: Sequence[Mapping[str, Any]] | None = None,
    reasoning_rounds: Sequence[Mapping[str, Any]] | None = None,
) -> list[Path]:
    """Write the whole report directory atomically: leaderboard.json, the PNG plots and index.html.

    ``lsp_rounds`` (loop: lsp's eval@r files) adds the held-out puzzle accuracy and the challenger's curves;
    ``exact_rounds`` (eval@r files with exact measures) a panel per game with a curve per exact measure;
    ``reasoning_rounds`` (a thinking run's eval@r files) its reasoning length and disagreement over rounds.
    """
    images = {"head to head, all games": plot_head_to_head(leaderboard)}
    files = {"head_to_head.png": images["head to head, all games"]}
    exact_png = None
    if rounds:
        images["win rate and rating over pipeline rounds"] = files["rounds.png"] = plot_rounds(rounds)
    if lsp_rounds:
        images["LSP: held-out puzzle accuracy, the challenger's difficulty and proposals"] = \
            files["lsp_rounds.png"] = plot_lsp_rounds({"snapshots": lsp_rounds})
    if exact_rounds:
        exact_png = files["exact_rounds.png"] = plot_exact_rounds(exact_rounds)
    if reasoning_rounds:
        images["reasoning length and disagreement over rounds"] = files["reasoning_rounds.png"] = \
            plot_reasoning_rounds(reasoning_rounds)
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        (tmp / "leaderboard.json").write_text(dump_json(leaderboard), encoding="utf-8")
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        build_html(leaderboard, images, tmp, evals=exact_rounds or (), exact_png=exact_png)
    return sorted(out_dir / name for name in ["leaderboard.json", "index.html", *files])
