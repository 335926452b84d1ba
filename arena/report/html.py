"""The self-contained HTML report (ranking, head-to-head matrices, pairs, inline plots) and its directory."""

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
from arena.report.table import PIN_PREFIX, interval, number

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
    """A rating table; the pin column appears when the rows carry pins (the overall ranking)."""
    with_pin = bool(rows) and "pin_digest" in rows[0]
    names = ["#", "player", *(["pin"] if with_pin else []), "mu", "sigma", "mu-3sigma", "games", "W-D-L", "errored"]
    names += ["win rate", "95% CI"]
    header = "".join(
        f'<th class="name">{name}</th>' if name in ("player", "pin") else f"<th>{name}</th>" for name in names
    )
    body = []
    for row in rows:
        pin = row.get("pin_digest", "")
        cells = [
            f"<td>{row['rank']}</td>",
            f'<td class="name">{_esc(row["player"])}</td>',
            *([f'<td class="name" title="{_esc(pin)}">{_esc(pin[:PIN_PREFIX])}</td>'] if with_pin else []),
            f"<td>{number(row['mu'])}</td>",
            f"<td>{number(row['sigma'])}</td>",
            f"<td>{number(row['conservative'])}</td>",
            f"<td>{row['games']}</td>",
            f"<td>{row['wins']}-{row['draws']}-{row['losses']}</td>",
            f"<td>{row['errored']}</td>",
            f"<td>{number(row['win_rate']['rate'], 3)}</td>",
            f"<td>{interval(row['win_rate'])}</td>",
        ]
        body.append(f'<tr class="player">{"".join(cells)}</tr>')
    return f'<table id="{_esc(table_id)}"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _matrix_html(players: Sequence[str], matrix: Sequence[Sequence[Mapping[str, Any] | None]], table_id: str) -> str:
    header = '<th class="name">player \\ opponent</th>' + "".join(
        f'<th class="name">{_esc(short_label(p))}</th>' for p in players
    )
    body = []
    for player, row in zip(players, matrix, strict=True):
        cells = []
        for cell in row:
            rate = None if cell is None else cell["win_rate"]["rate"]
            text = "" if cell is None else f'{number(rate, 2)}<br><span class="muted">n={cell["games"]}</span>'
            cells.append(f'<td class="cell" style="background:{_cell_colour(rate)}">{text}</td>')
        body.append(f'<tr><td class="name">{_esc(short_label(player))}</td>{"".join(cells)}</tr>')
    return f'<table id="{_esc(table_id)}"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


_PAIR_COLUMNS = ("game", "p0", "p1", "games", "p0 wins", "p1 wins", "draws", "errored", "p0 win rate", "95% CI",
                 "mean reward p0", "mean reward p1", "chips/round p0", "chips/round p1", "card")


def _pairs_html(leaderboard: Mapping[str, Any]) -> str:
    header = "".join(f"<th>{name}</th>" for name in _PAIR_COLUMNS)
    body = []
    for pair in leaderboard["pairs"]:
        chips = pair.get("mean_chips_per_round") or {"p0": None, "p1": None}
        cells = [
            f'<td class="name">{_esc(pair["game"])}</td>',
            f'<td class="name">{_esc(pair["p0"])}</td>',
            f'<td class="name">{_esc(pair["p1"])}</td>',
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
            f'<td class="name">{_esc(pair["card"][:PIN_PREFIX])}</td>',
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table id="pairs"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _image_html(title: str, data: bytes) -> str:
    if data.startswith(PNG_SIGNATURE):
        encoded = base64.b64encode(data).decode("ascii")
        inner = f'<img alt="{_esc(title)}" src="data:image/png;base64,{encoded}">'
    elif data.lstrip().startswith((b"<svg", b"<?xml")):
        inner = data.decode("utf-8").split("?>", 1)[-1] if data.lstrip().startswith(b"<?xml") else data.decode("utf-8")
    else:
        raise ReportError(f"image {title!r} is neither PNG nor SVG; render plots with plot_head_to_head/plot_rounds")
    return f"<figure>{inner}<figcaption>{_esc(title)}</figcaption></figure>"


def _ranking_sections(leaderboard: Mapping[str, Any]) -> list[str]:
    """The title, what was evaluated, the overall ranking and the unrated players."""
    config = leaderboard["eval_config"]
    sections = [
        "<h1>arena leaderboard</h1>",
        f"<p>evaluation config <code>{_esc(leaderboard['eval_config_hash'][:PIN_PREFIX])}</code>: games "
        f"{_esc(', '.join(leaderboard['games']))}; seeds [{config['seeds']['start']}, {config['seeds']['stop']}); "
        f"{len(leaderboard['cards'])} score cards. Ranked by TrueSkill mu - 3 sigma; draws count as half a win.</p>",
        "<h2>Ranking</h2>",
        _ranking_html(leaderboard["ranking"], "ranking"),
    ]
    if leaderboard.get("unrated"):
        items = "".join(
            f"<li><code>{_esc(u['player'])}</code>: {_esc(u['reason'])}</li>" for u in leaderboard["unrated"]
        )
        sections.append(f'<h2>Unrated</h2><ul id="unrated">{items}</ul>')
    return sections


def _game_sections(leaderboard: Mapping[str, Any]) -> list[str]:
    """The head-to-head matrices (all games, then each game) and each game's ratings."""
    head = leaderboard["head_to_head"]
    sections = ["<h2>Head to head (row's win rate against column)</h2><h3>All games</h3>",
                _matrix_html(head["players"], head["overall"], "head-to-head")]
    for index, game in enumerate(leaderboard["games"]):
        sections.append(f"<h3>{_esc(game)}</h3>")
        sections.append(_matrix_html(head["players"], head["by_game"][game], f"head-to-head-{index}"))
    sections.append("<h2>Ratings by game</h2>")
    for index, game in enumerate(leaderboard["games"]):
        sections.append(f"<h3>{_esc(game)}</h3>")
        sections.append(_ranking_html(leaderboard["ratings_by_game"][game], f"ratings-{index}"))
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


def build_html(leaderboard: Mapping[str, Any], images: Mapping[str, bytes | str | Path], out_dir: str | Path) -> Path:
    """Write ``out_dir/index.html``: ranking, head-to-head matrices, pair results and the images, all inline.

    ``images`` maps a caption to PNG/SVG bytes or a file path. The page loads nothing from anywhere:
    styles are inline and images are base64 data URIs (PNG) or inline SVG, so it renders offline.
    """
    sections = [*_ranking_sections(leaderboard), *_game_sections(leaderboard), "<h2>Pairs</h2>",
                _pairs_html(leaderboard), *_plot_sections(images)]
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>arena leaderboard</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
    path = Path(out_dir) / "index.html"
    atomic_write_text(path, page)
    return path


def write_report(
    leaderboard: Mapping[str, Any], out_dir: str | Path, *, rounds: Sequence[Mapping[str, Any]] | None = None,
    lsp_rounds: Sequence[Mapping[str, Any]] | None = None, exact_rounds: Sequence[Mapping[str, Any]] | None = None,
) -> list[Path]:
    """Write the whole report directory atomically: leaderboard.json, the PNG plots and index.html.

    ``lsp_rounds`` (loop: lsp's eval@r files) adds the held-out puzzle accuracy and the challenger's curves;
    ``exact_rounds`` (eval@r files with exact measures) a panel per game with a curve per exact measure.
    """
    images = {"head to head, all games": plot_head_to_head(leaderboard)}
    files = {"head_to_head.png": images["head to head, all games"]}
    if rounds:
        images["win rate and rating over pipeline rounds"] = files["rounds.png"] = plot_rounds(rounds)
    if lsp_rounds:
        images["LSP: held-out puzzle accuracy, the challenger's difficulty and proposals"] = \
            files["lsp_rounds.png"] = plot_lsp_rounds({"snapshots": lsp_rounds})
    if exact_rounds:
        images["each game's exact measures over rounds"] = files["exact_rounds.png"] = plot_exact_rounds(exact_rounds)
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        (tmp / "leaderboard.json").write_text(dump_json(leaderboard), encoding="utf-8")
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        build_html(leaderboard, images, tmp)
    return sorted(out_dir / name for name in ["leaderboard.json", "index.html", *files])
