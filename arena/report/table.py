"""Terminal tables (rich): the leaderboard ranking and a match summary, and the number formats the report shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

PIN_PREFIX = 12


def number(value: float | None, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, or "-" when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def interval(win_rate: Mapping[str, float | None]) -> str:
    """A win rate's 95% interval as ``[low, high]``, or "-" when there is no rate."""
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
            number(row["mu"]),
            number(row["sigma"]),
            number(row["conservative"]),
            str(row["games"]),
            number(row["win_rate"]["rate"], 3),
            interval(row["win_rate"]),
        )
    if leaderboard.get("unrated"):
        table.caption = "unrated: " + "; ".join(f"{u['player']} ({u['reason']})" for u in leaderboard["unrated"])
    return table


def render_match(summary: Mapping[str, Any], p0: str, p1: str) -> Table:
    """A match summary (``arena play``) as a rich Table, one row per player."""
    table = Table(title=f"{summary['games']} games ({summary['errored']} errored), "
                        f"{summary.get('games_per_sec', 0):.1f} games/s")
    columns = ["player", "wins", "mean reward", "invalid moves"]
    chips = summary.get("mean_chips_per_round")
    if chips:
        columns.append("chips/round")
    trades = summary.get("trades")
    if trades:
        columns.append("value gain")
    for column in columns:
        table.add_column(column)
    for key, spec in (("p0", p0), ("p1", p1)):
        row = [spec, str(summary["wins"][key]), number(summary["mean_reward"][key], 3),
               str(summary["invalid_moves"][key])]
        if chips:
            row.append(number(chips[key], 3))
        if trades:
            row.append(number(trades["mean_value_gain"][key], 1))
        table.add_row(*row)
    rate = summary["p0_win_rate"]
    table.caption = f"draws {summary['wins']['draws']}; {p0} win rate {number(rate['rate'], 3)} {interval(rate)}"
    if trades:
        table.caption += (f"; {trades['accepted']} trades, Pareto-improving share "
                          f"{number(trades['pareto_share'], 3)}")
    return table
