"""Leaderboard presentation: the terminal table, deterministic offline plots, and a self-contained HTML report."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.style
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from rich.table import Table

from arena.core.artifacts import atomic_dir, atomic_write_text, dump_json
from arena.core.errors import ArenaError

PIN_PREFIX = 12
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ROUND_REQUIRED = ("round", "player", "win_rate", "low", "high", "mu")
ROUND_OPTIONAL = ("sigma", "exploitability")


class ReportError(ArenaError):
    """Report input (leaderboard, per-round history, images) is malformed."""


# --------------------------------------------------------------------------------------------- terminal


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(win_rate: Mapping[str, float | None]) -> str:
    if win_rate["rate"] is None:
        return "-"
    return f"[{win_rate['low']:.2f}, {win_rate['high']:.2f}]"


def render_table(leaderboard: Mapping[str, Any]) -> Table:
    """The ranking as a rich Table (``arena leaderboard``): rank, player, pin prefix, ratings, games, win rate."""
    table = Table(title=f"arena leaderboard (eval {leaderboard['eval_config_hash'][:PIN_PREFIX]})")
    for header, justify in (
        ("#", "right"),
        ("player", "left"),
        ("pin", "left"),
        ("mu", "right"),
        ("sigma", "right"),
        ("mu-3sigma", "right"),
        ("games", "right"),
        ("win rate", "right"),
        ("95% CI", "left"),
    ):
        table.add_column(header, justify=justify)
    table.columns[1].no_wrap = True
    for row in leaderboard["ranking"]:
        table.add_row(
            str(row["rank"]),
            row["player"],
            row["pin_digest"][:PIN_PREFIX],
            _number(row["mu"]),
            _number(row["sigma"]),
            _number(row["conservative"]),
            str(row["games"]),
            _number(row["win_rate"]["rate"], 3),
            _interval(row["win_rate"]),
        )
    if leaderboard.get("unrated"):
        table.caption = "unrated: " + "; ".join(f"{u['player']} ({u['reason']})" for u in leaderboard["unrated"])
    return table


# --------------------------------------------------------------------------------------------- plots


def _png(fig: Figure) -> bytes:
    """PNG bytes without the Software/date metadata, so the same figure always gives the same bytes."""
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer, metadata={"Software": None})
    return buffer.getvalue()


def _short(label: str, width: int = 32) -> str:
    """Long player specs (model paths) shortened in the middle for axis labels."""
    if len(label) <= width:
        return label
    keep = (width - 3) // 2
    return f"{label[:keep]}...{label[-keep:]}"


def plot_head_to_head(leaderboard: Mapping[str, Any], game: str | None = None) -> bytes:
    """PNG heatmap of the head-to-head matrix: cell (row, column) is row's win rate (draws half) vs column.

    ``game`` picks one game's matrix (a label from ``leaderboard["games"]``); ``None`` the overall one.
    """
    head = leaderboard["head_to_head"]
    if game is None:
        matrix, title = head["overall"], "head to head, all games"
    elif game in head["by_game"]:
        matrix, title = head["by_game"][game], f"head to head, {game}"
    else:
        raise ReportError(f"no head-to-head matrix for game {game!r}; choose one of {sorted(head['by_game'])}")
    players = head["players"]
    size = len(players)
    values = [
        [math.nan if cell is None or cell["win_rate"]["rate"] is None else cell["win_rate"]["rate"] for cell in row]
        for row in matrix
    ]
    with matplotlib.style.context("default"):
        side = 2.5 + 1.1 * size
        fig = Figure(figsize=(side + 1.5, side), dpi=100)
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")
        image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0)
        for i, row in enumerate(matrix):
            for j, cell in enumerate(row):
                if cell is not None and cell["win_rate"]["rate"] is not None:
                    rate = cell["win_rate"]["rate"]
                    # White text on the saturated ends of the colour map, black on the pale middle.
                    colour = "white" if abs(rate - 0.5) > 0.3 else "black"
                    ax.text(j, i, f"{rate:.2f}\nn={cell['games']}", ha="center", va="center", fontsize=8, color=colour)
        labels = [_short(p) for p in players]
        ax.set_xticks(range(size), labels, rotation=40, ha="right", fontsize=8)
        ax.set_yticks(range(size), labels, fontsize=8)
        ax.set_xlabel("opponent")
        ax.set_ylabel("player")
        ax.set_title(title)
        fig.colorbar(image, ax=ax, label="win rate (draws = 1/2)")
        fig.tight_layout()
        return _png(fig)


def round_rows(
    round_index: int, leaderboard: Mapping[str, Any], exploitability: Mapping[str, float] | None = None
) -> list[dict[str, Any]]:
    """One pipeline round's rows for ``plot_rounds``, taken from that round's leaderboard ranking.

    ``exploitability`` maps player specs to their exact exploitability where known (Kuhn policies).
    """
    known = dict(exploitability or {})
    return [
        {
            "round": round_index,
            "player": row["player"],
            "win_rate": row["win_rate"]["rate"],
            "low": row["win_rate"]["low"],
            "high": row["win_rate"]["high"],
            "mu": row["mu"],
            "sigma": row["sigma"],
            "exploitability": known.get(row["player"]),
        }
        for row in leaderboard["ranking"]
    ]


def validate_rounds(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Check the per-round evaluation history and return it sorted by (player, round).

    Shape: a list of rows, one per (round, player)::

        {"round": 0, "player": "mlx:artifacts/snapshots/r0",  # int >= 0, any label
         "win_rate": 0.61, "low": 0.54, "high": 0.67,          # win rate (draws 1/2) and its 95% interval
         "mu": 27.1,                                           # TrueSkill mu that round
         "sigma": 0.9,                                         # optional: TrueSkill sigma (band around mu)
         "exploitability": 0.21}                               # optional, null where not computed (non-Kuhn)
    """
    if not history:
        raise ReportError("the per-round history is empty; give at least one {round, player, ...} row")
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for index, row in enumerate(history):
        missing = [key for key in ROUND_REQUIRED if key not in row]
        unknown = sorted(set(row) - set(ROUND_REQUIRED) - set(ROUND_OPTIONAL))
        if missing or unknown:
            raise ReportError(
                f"history[{index}] has missing keys {missing} / unknown keys {unknown}; "
                f"rows need {list(ROUND_REQUIRED)} and may have {list(ROUND_OPTIONAL)}"
            )
        if isinstance(row["round"], bool) or not isinstance(row["round"], int) or row["round"] < 0:
            raise ReportError(f"history[{index}].round = {row['round']!r} must be an integer >= 0")
        for key in ("win_rate", "low", "high", "mu", "sigma", "exploitability"):
            value = row.get(key)
            optional = key in ROUND_OPTIONAL
            if (value is None and optional) or (
                isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            ):
                continue
            raise ReportError(f"history[{index}].{key} = {value!r} must be a finite number{' or null' * optional}")
        if not 0 <= row["low"] <= row["win_rate"] <= row["high"] <= 1:
            raise ReportError(
                f"history[{index}] needs 0 <= low <= win_rate <= high <= 1, got "
                f"{row['low']!r}, {row['win_rate']!r}, {row['high']!r}"
            )
        key = (str(row["player"]), row["round"])
        if key in rows:
            raise ReportError(f"history has two rows for player {key[0]!r} in round {key[1]}; keep one")
        rows[key] = {"sigma": None, "exploitability": None, **row}
    return [rows[key] for key in sorted(rows)]


def plot_rounds(history: Sequence[Mapping[str, Any]]) -> bytes:
    """PNG of win rate (with its interval), TrueSkill mu (with +-sigma) and, where given, exploitability per round."""
    rows = validate_rounds(history)
    players = sorted({row["player"] for row in rows})
    with_exploitability = any(row["exploitability"] is not None for row in rows)
    panels = 3 if with_exploitability else 2
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(7.0, 2.6 * panels), dpi=100)
        axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
        for player in players:
            mine = [row for row in rows if row["player"] == player]
            rounds = [row["round"] for row in mine]
            line = axes[0].plot(rounds, [row["win_rate"] for row in mine], marker="o", label=_short(player))[0]
            axes[0].fill_between(
                rounds, [row["low"] for row in mine], [row["high"] for row in mine], color=line.get_color(), alpha=0.2
            )
            axes[1].plot(rounds, [row["mu"] for row in mine], marker="o", color=line.get_color())
            banded = [row for row in mine if row["sigma"] is not None]
            if banded:
                axes[1].fill_between(
                    [row["round"] for row in banded],
                    [row["mu"] - row["sigma"] for row in banded],
                    [row["mu"] + row["sigma"] for row in banded],
                    color=line.get_color(),
                    alpha=0.2,
                )
            if with_exploitability:
                known = [row for row in mine if row["exploitability"] is not None]
                axes[2].plot(
                    [row["round"] for row in known],
                    [row["exploitability"] for row in known],
                    marker="o",
                    color=line.get_color(),
                )
        axes[0].set_ylabel("win rate")
        axes[0].set_ylim(0.0, 1.0)
        axes[0].legend(fontsize=8, loc="best")
        axes[1].set_ylabel("TrueSkill mu")
        if with_exploitability:
            axes[2].set_ylabel("exploitability")
        axes[-1].set_xlabel("pipeline round")
        axes[-1].set_xticks(sorted({row["round"] for row in rows}))
        fig.tight_layout()
        return _png(fig)


# --------------------------------------------------------------------------------------------- HTML

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
            f"<td>{_number(row['mu'])}</td>",
            f"<td>{_number(row['sigma'])}</td>",
            f"<td>{_number(row['conservative'])}</td>",
            f"<td>{row['games']}</td>",
            f"<td>{row['wins']}-{row['draws']}-{row['losses']}</td>",
            f"<td>{row['errored']}</td>",
            f"<td>{_number(row['win_rate']['rate'], 3)}</td>",
            f"<td>{_interval(row['win_rate'])}</td>",
        ]
        body.append(f'<tr class="player">{"".join(cells)}</tr>')
    return f'<table id="{_esc(table_id)}"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _matrix_html(players: Sequence[str], matrix: Sequence[Sequence[Mapping[str, Any] | None]], table_id: str) -> str:
    header = '<th class="name">player \\ opponent</th>' + "".join(
        f'<th class="name">{_esc(_short(p))}</th>' for p in players
    )
    body = []
    for player, row in zip(players, matrix, strict=True):
        cells = []
        for cell in row:
            rate = None if cell is None else cell["win_rate"]["rate"]
            text = "" if cell is None else f'{_number(rate, 2)}<br><span class="muted">n={cell["games"]}</span>'
            cells.append(f'<td class="cell" style="background:{_cell_colour(rate)}">{text}</td>')
        body.append(f'<tr><td class="name">{_esc(_short(player))}</td>{"".join(cells)}</tr>')
    return f'<table id="{_esc(table_id)}"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _pairs_html(leaderboard: Mapping[str, Any]) -> str:
    header = "".join(
        f"<th>{name}</th>"
        for name in (
            "game",
            "p0",
            "p1",
            "games",
            "p0 wins",
            "p1 wins",
            "draws",
            "errored",
            "p0 win rate",
            "95% CI",
            "mean reward p0",
            "mean reward p1",
            "chips/round p0",
            "chips/round p1",
            "card",
        )
    )
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
            f"<td>{_number(pair['p0_win_rate']['rate'], 3)}</td>",
            f"<td>{_interval(pair['p0_win_rate'])}</td>",
            f"<td>{_number(pair['mean_reward']['p0'], 3)}</td>",
            f"<td>{_number(pair['mean_reward']['p1'], 3)}</td>",
            f"<td>{_number(chips['p0'], 3)}</td>",
            f"<td>{_number(chips['p1'], 3)}</td>",
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


def build_html(leaderboard: Mapping[str, Any], images: Mapping[str, bytes | str | Path], out_dir: str | Path) -> Path:
    """Write ``out_dir/index.html``: ranking, head-to-head matrices, pair results and the images, all inline.

    ``images`` maps a caption to PNG/SVG bytes or a file path. The page loads nothing from anywhere:
    styles are inline and images are base64 data URIs (PNG) or inline SVG, so it renders offline.
    """
    config = leaderboard["eval_config"]
    head = leaderboard["head_to_head"]
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
    sections.append("<h2>Head to head (row's win rate against column)</h2><h3>All games</h3>")
    sections.append(_matrix_html(head["players"], head["overall"], "head-to-head"))
    for index, game in enumerate(leaderboard["games"]):
        sections.append(f"<h3>{_esc(game)}</h3>")
        sections.append(_matrix_html(head["players"], head["by_game"][game], f"head-to-head-{index}"))
    sections.append("<h2>Ratings by game</h2>")
    for index, game in enumerate(leaderboard["games"]):
        sections.append(f"<h3>{_esc(game)}</h3>")
        sections.append(_ranking_html(leaderboard["ratings_by_game"][game], f"ratings-{index}"))
    sections.append("<h2>Pairs</h2>")
    sections.append(_pairs_html(leaderboard))
    if images:
        sections.append("<h2>Plots</h2>")
        for title in images:
            value = images[title]
            data = value if isinstance(value, bytes) else Path(value).read_bytes()
            sections.append(_image_html(title, data))
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>arena leaderboard</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
    path = Path(out_dir) / "index.html"
    atomic_write_text(path, page)
    return path


def write_report(
    leaderboard: Mapping[str, Any], out_dir: str | Path, *, rounds: Sequence[Mapping[str, Any]] | None = None
) -> list[Path]:
    """Write the whole report directory atomically: leaderboard.json, the PNG plots and index.html."""
    images = {"head to head, all games": plot_head_to_head(leaderboard)}
    files = {"head_to_head.png": images["head to head, all games"]}
    if rounds:
        images["win rate and rating over pipeline rounds"] = files["rounds.png"] = plot_rounds(rounds)
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        (tmp / "leaderboard.json").write_text(dump_json(leaderboard), encoding="utf-8")
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        build_html(leaderboard, images, tmp)
    return sorted(out_dir / name for name in ["leaderboard.json", "index.html", *files])


def render_match(summary: Mapping[str, Any], p0: str, p1: str) -> Table:
    """A match summary (``arena play``) as a rich Table, one row per player."""
    table = Table(title=f"{summary['games']} games ({summary['errored']} errored), "
                        f"{summary.get('games_per_sec', 0):.1f} games/s")
    columns = ["player", "wins", "mean reward", "invalid moves"]
    chips = summary.get("mean_chips_per_round")
    if chips:
        columns.append("chips/round")
    for column in columns:
        table.add_column(column)
    for key, spec in (("p0", p0), ("p1", p1)):
        row = [spec, str(summary["wins"][key]), _number(summary["mean_reward"][key], 3),
               str(summary["invalid_moves"][key])]
        if chips:
            row.append(_number(chips[key], 3))
        table.add_row(*row)
    rate = summary["p0_win_rate"]
    table.caption = f"draws {summary['wins']['draws']}; {p0} win rate {_number(rate['rate'], 3)} {_interval(rate)}"
    return table
