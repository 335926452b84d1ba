"""Deterministic offline PNG plots: the head-to-head heatmap and the per-round curves (with their input checks)."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from arena.core.errors import ArenaError
from arena.report.summary import player_name

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ROUND_REQUIRED = ("round", "player", "win_rate", "low", "high", "mu")
ROUND_OPTIONAL = ("sigma", "exploitability")


class ReportError(ArenaError):
    """Report input (leaderboard, per-round history, images) is malformed."""


def _png(fig: Figure) -> bytes:
    """PNG bytes without the Software/date metadata, so the same figure always gives the same bytes."""
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer, metadata={"Software": None})
    return buffer.getvalue()


def short_label(label: str, width: int = 32) -> str:
    """Long player specs (model paths) shortened in the middle for axis labels."""
    if len(label) <= width:
        return label
    keep = (width - 3) // 2
    return f"{label[:keep]}...{label[-keep:]}"


# --------------------------------------------------------------------------------------------- head to head


def _matrix(leaderboard: Mapping[str, Any], game: str | None) -> tuple[list[list[Any]], str]:
    """One game's head-to-head matrix (``None``: the overall one) and its title."""
    head = leaderboard["head_to_head"]
    if game is None:
        return head["overall"], "head to head, all games"
    if game in head["by_game"]:
        return head["by_game"][game], f"head to head, {game}"
    raise ReportError(f"no head-to-head matrix for game {game!r}; choose one of {sorted(head['by_game'])}")


def _annotate_cells(ax: Axes, matrix: Sequence[Sequence[Mapping[str, Any] | None]]) -> None:
    """Each played cell's win rate and game count, written on the heatmap."""
    for i, row in enumerate(matrix):
        for j, cell in enumerate(row):
            if cell is not None and cell["win_rate"]["rate"] is not None:
                rate = cell["win_rate"]["rate"]
                # White text on the saturated ends of the colour map, black on the pale middle.
                colour = "white" if abs(rate - 0.5) > 0.3 else "black"
                ax.text(j, i, f"{rate:.2f}\nn={cell['games']}", ha="center", va="center", fontsize=8, color=colour)


def plot_head_to_head(leaderboard: Mapping[str, Any], game: str | None = None) -> bytes:
    """PNG heatmap of the head-to-head matrix: cell (row, column) is row's win rate (draws half) vs column.

    ``game`` picks one game's matrix (a label from ``leaderboard["games"]``); ``None`` the overall one.
    """
    matrix, title = _matrix(leaderboard, game)
    players = leaderboard["head_to_head"]["players"]
    size = len(players)
    values = [
        [math.nan if cell is None or cell["win_rate"]["rate"] is None else cell["win_rate"]["rate"] for cell in row]
        for row in matrix
    ]
    with matplotlib.style.context("default"):
        side = 2.5 + 0.6 * size
        fig = Figure(figsize=(side + 1.5, side), dpi=100)
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")
        image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0)
        _annotate_cells(ax, matrix)
        labels = [short_label(player_name(p)) for p in players]
        ax.set_xticks(range(size), labels, rotation=40, ha="right", fontsize=8)
        ax.set_yticks(range(size), labels, fontsize=8)
        ax.set_xlabel("opponent")
        ax.set_ylabel("player")
        ax.set_title(title)
        fig.colorbar(image, ax=ax, label="win rate (draws = 1/2)")
        fig.tight_layout()
        return _png(fig)


# --------------------------------------------------------------------------------------------- rounds


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


def _check_round_row(index: int, row: Mapping[str, Any]) -> None:
    """A ReportError naming ``history[index]`` unless its keys, round, numbers and interval are well formed."""
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
        _check_round_row(index, row)
        key = (str(row["player"]), row["round"])
        if key in rows:
            raise ReportError(f"history has two rows for player {key[0]!r} in round {key[1]}; keep one")
        rows[key] = {"sigma": None, "exploitability": None, **row}
    return [rows[key] for key in sorted(rows)]


def _plot_player(axes: Sequence[Axes], player: str, mine: Sequence[Mapping[str, Any]],
                 with_exploitability: bool) -> None:
    """One player's curves: win rate with its interval, mu with +-sigma, and exploitability where known."""
    rounds = [row["round"] for row in mine]
    line = axes[0].plot(rounds, [row["win_rate"] for row in mine], marker="o", label=short_label(player))[0]
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
            _plot_player(axes, player, [row for row in rows if row["player"] == player], with_exploitability)
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
