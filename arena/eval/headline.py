"""The headline table: each local model against an endpoint (and locally), over all games and the games it played
legally, from score cards (a win by the opponent's forfeit proves nothing, so those games are shown apart)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir, atomic_write_json, atomic_write_text
from arena.core.hashing import digest_dir
from arena.core.pins import write_meta
from arena.eval.scorecards import load_archive
from arena.games.variants import game_label
from arena.play.stats import mean_interval, wilson_interval


def _block(games: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Win rate (a draw half) with its Wilson interval and mean chips with a normal interval, over (mine, theirs)."""
    if not games:
        return {"games": 0}
    wins = sum(1.0 if mine > theirs else 0.5 if mine == theirs else 0.0 for mine, theirs in games)
    rate, low, high = wilson_interval(wins, len(games))
    chips, chips_low, chips_high = mean_interval([mine for mine, _ in games])
    return {"games": len(games), "win_rate": [round(rate, 4), round(low, 4), round(high, 4)],
            "chips": [round(chips, 4), round(chips_low, 4), round(chips_high, 4)]}


def card_row(card: Mapping[str, Any]) -> dict[str, Any]:
    """The card's first player against its second: over all played games, and over those the second played with
    no invalid move; the second's invalid moves and the games they were in; errored games counted apart."""
    first, second = (player["spec"] for player in card["players"])
    played, legal, invalid, invalid_games = [], [], 0, 0
    for outcome in card["outcomes"]:
        if outcome["errored"]:
            continue
        me, them = outcome["players"].index(first), outcome["players"].index(second)
        pair = (outcome["rewards"][me], outcome["rewards"][them])
        played.append(pair)
        invalid += outcome["invalid_moves"][them]
        invalid_games += outcome["invalid_moves"][them] > 0
        if outcome["invalid_moves"][them] == 0:
            legal.append(pair)
    return {"game": game_label(card["game_id"], card["variant"]), "player": first, "opponent": second,
            "all": _block(played), "opponent_legal": _block(legal), "opponent_invalid_moves": invalid,
            "opponent_invalid_games": invalid_games,
            "errored": sum(bool(o["errored"]) for o in card["outcomes"])}


def headline_rows(archives: Iterable[str | Path]) -> list[dict[str, Any]]:
    """One row per card, each labelled with its archive's name (the same endpoint spec is another opponent under
    another system prompt: realmodel's headline and headline-best), in archive order, then by game and players."""
    rows = []
    for archive in archives:
        own = [{"archive": Path(archive).name, **card_row(card)} for card in load_archive([archive])]
        rows.extend(sorted(own, key=lambda row: (row["game"], row["player"], row["opponent"])))
    return rows


def _cell(block: Mapping[str, Any], key: str, signed: bool = False) -> str:
    if not block["games"]:
        return "-"
    value, low, high = block[key]
    form = "{:+.3f}" if signed else "{:.3f}"
    return f"{form.format(value)} [{form.format(low)}, {form.format(high)}]"


def headline_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a markdown table."""
    lines = ["| archive | game | player | opponent | games | win rate [95%] | chips/game [95%] | opponent invalid "
             "moves (games) | games the opponent played legally | win rate there | chips there |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        every, legal = row["all"], row["opponent_legal"]
        lines.append(f"| {row['archive']} | {row['game']} | {row['player']} | {row['opponent']} | {every['games']} | "
                     f"{_cell(every, 'win_rate')} | {_cell(every, 'chips', True)} | {row['opponent_invalid_moves']} "
                     f"({row['opponent_invalid_games']}) | {legal['games']} | {_cell(legal, 'win_rate')} | "
                     f"{_cell(legal, 'chips', True)} |")
    return "\n".join(lines) + "\n"


def write_headline(archives: Sequence[str | Path], out_dir: str | Path) -> list[dict[str, Any]]:
    """``out_dir``/headline.json (the rows) and headline.md (the table), from the archives' cards, and its meta."""
    rows = headline_rows(archives)
    with atomic_dir(out_dir) as tmp:
        atomic_write_json(tmp / "headline.json", {"archives": [Path(a).as_posix() for a in archives], "rows": rows})
        atomic_write_text(tmp / "headline.md", headline_markdown(rows))
        write_meta(tmp, inputs={Path(a).as_posix(): digest_dir(a) for a in archives})
    return rows
