"""Terminal tables (rich): the leaderboard ranking and a match summary, and the number formats the report shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from arena.report.summary import player_name

PIN_PREFIX = 12


def number(value: float | None, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, or "-" when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def interval(win_rate: Mapping[str, float | None]) -> str:
    """A win rate's 95% interval as ``[low, high]``, or "-" when there is no rate."""
    if win_rate["rate"] is None:
        return "-"
    return f"[{win_rate['low']:.2f}, {win_rate['high']:.2f}]"


def render_table(leaderboard: Mapping[str, Any], wide: bool = False) -> Table:
    """The ranking as a rich Table (``arena leaderboard``): rank, player (``round N`` for a round's snapshot),
    conservative rating, win rate and its interval; ``wide`` adds the full spec, pin prefix, mu, sigma and games."""
    table = Table(title=f"arena leaderboard (eval {leaderboard['eval_config_hash'][:PIN_PREFIX]})")
    columns = [("#", "right"), ("player", "left")]
    columns += [("spec", "left"), ("pin", "left"), ("mu", "right"), ("sigma", "right")] if wide else []
    columns += [("rating", "right"), *([("games", "right")] if wide else []), ("win rate", "right"), ("95% CI", "left")]
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=True)
    for row in leaderboard["ranking"]:
        extra = [row["player"], row["pin_digest"][:PIN_PREFIX], number(row["mu"]), number(row["sigma"])] if wide else []
        table.add_row(str(row["rank"]), player_name(row["player"]), *extra, number(row["conservative"]),
                      *([str(row["games"])] if wide else []), number(row["win_rate"]["rate"], 3),
                      interval(row["win_rate"]))
    table.caption = "rating: TrueSkill mu - 3 sigma, higher is better"
    return table


def _chips_against(pairs: list[Mapping[str, Any]], player: str, opponent: str) -> float | None:
    """``player``'s mean chips a game (a hand's worth in Kuhn and Leduc) against ``opponent`` over their pairs' cards,
    weighted by games; None when a card between them has no chip count (a game without chips)."""
    chips, games = 0.0, 0
    for pair in pairs:
        if {pair["p0"], pair["p1"]} != {player, opponent}:
            continue
        if pair.get("mean_chips_per_round") is None:
            return None
        chips += pair["games"] * pair["mean_chips_per_round"]["p0" if pair["p0"] == player else "p1"]
        games += pair["games"]
    return chips / games if games else None


def versus_markdown(leaderboard: Mapping[str, Any], player: str) -> str:
    """A markdown table of ``player`` against each opponent in the leaderboard (its head-to-head row: games, wins,
    losses, win rate and 95% interval, and its mean chips a game where the game counts chips), under a line giving
    its rank, TrueSkill mu +- sigma and conservative rating."""
    ranked = {row["player"]: row for row in leaderboard["ranking"]}
    if player not in ranked:
        raise ValueError(f"player {player!r} is not in the leaderboard's ranking ({', '.join(ranked)})")
    row = ranked[player]
    order = leaderboard["head_to_head"]["players"]
    cells = leaderboard["head_to_head"]["overall"][order.index(player)]
    rows = [(opponent, cell, _chips_against(leaderboard["pairs"], player, opponent))
            for opponent, cell in zip(order, cells, strict=True) if cell is not None]
    with_chips = all(chips is not None for _, _, chips in rows)
    lines = [f"{player_name(player)}: rank {row['rank']} of {len(ranked)}, TrueSkill mu {number(row['mu'])} "
             f"+- {number(row['sigma'])} (conservative {number(row['conservative'])}), win rate "
             f"{number(row['win_rate']['rate'], 3)} {interval(row['win_rate'])} over {row['games']} games", "",
             "| opponent | games | wins | losses | win rate | 95% interval |" + (" chips a game |" * with_chips),
             "|---|---:|---:|---:|---:|---|" + ("---:|" * with_chips)]
    for opponent, cell, chips in rows:
        lines.append(f"| {player_name(opponent)} | {cell['games']} | {cell['wins']} | {cell['losses']} | "
                     f"{number(cell['win_rate']['rate'], 3)} | {interval(cell['win_rate'])} |"
                     + (f" {chips:+.3f} |" if with_chips else ""))
    return "\n".join(lines) + "\n"


def unrated_lines(leaderboard: Mapping[str, Any]) -> list[str]:
    """One line per player the leaderboard left unrated, with its reason (printed under the table)."""
    return [f"unrated: {player_name(u['player'])} ({u['reason']})" for u in leaderboard.get("unrated", [])]


def render_match(summary: Mapping[str, Any], p0: str, p1: str) -> Table:
    """A match summary (``arena play``) as a rich Table, one row per player; for chip games (Kuhn, Leduc) the
    chips a hand lead, and the caption gives p0's chips with their 95% interval before its win rate."""
    table = Table(title=f"{summary['games']} games ({summary['errored']} errored), "
                        f"{summary.get('games_per_sec', 0):.1f} games/s")
    chips = summary.get("mean_chips_per_round")
    columns = [*(["chips/hand"] if chips else []), "wins", "mean reward", "invalid moves"]
    trades = summary.get("trades")
    if trades:
        columns.append("value gain")
    table.add_column("player")
    for column in columns:
        table.add_column(column, justify="right")
    for key, spec in (("p0", p0), ("p1", p1)):
        row = [player_name(spec), *([number(chips[key], 3)] if chips else []), str(summary["wins"][key]),
               number(summary["mean_reward"][key], 3), str(summary["invalid_moves"][key])]
        if trades:
            row.append(number(trades["mean_value_gain"][key], 1))
        table.add_row(*row)
    rate = summary["p0_win_rate"]
    won = f"win rate {number(rate['rate'], 3)} {interval(rate)}, draws {summary['wins']['draws']}"
    lead = summary.get("p0_chips_per_hand")
    if lead is not None:
        table.caption = (f"{player_name(p0)}: {lead['mean']:+.3f} chips a hand [{lead['low']:+.3f}, "
                         f"{lead['high']:+.3f}] (95%, over deals); {won}")
    else:
        table.caption = f"{player_name(p0)}: {won}"
    if trades:
        table.caption += (f"; {trades['accepted']} trades, Pareto-improving share "
                          f"{number(trades['pareto_share'], 3)}")
    splits = summary.get("splits")
    if splits:
        money = splits["mean_money"]
        table.caption += (f"; money ${number(money['p0'], 1)} vs ${number(money['p1'], 1)}"
                          f", offers accepted {number(splits['accepted_share'], 3)}, optimal moves "
                          f"{number(splits['optimal_share']['p0'], 3)} vs {number(splits['optimal_share']['p1'], 3)}")
    return table
