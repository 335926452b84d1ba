"""`arena leaderboard` and `arena summary`: a build's results, read in a terminal (80 columns by default)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from arena.core.errors import ArenaError

ARCHIVES = (Path("artifacts/scores/baseline"), Path("artifacts/scores/final"))


@click.command()
@click.argument("archives", nargs=-1, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="print the leaderboard JSON instead of a table")
@click.option("--wide", is_flag=True, help="also show each player's full spec, pin, mu, sigma and games")
@click.option("--rebuild", is_flag=True, help="recompute from the score cards even when leaderboard.json is current")
@click.option("--versus", metavar="SPEC", help="print SPEC's results against each opponent as a markdown table")
def leaderboard(archives, as_json, wide, rebuild, versus) -> None:
    """Rank players from score-card ARCHIVES (default: artifacts/scores/baseline and .../final).

    Reads artifacts/scores/leaderboard.json when it was built from exactly these cards; otherwise (or with
    --rebuild) rebuilds the ratings from the cards, each verified.
    """
    from rich.console import Console

    from arena.report.board import leaderboard_for
    from arena.report.table import render_table, unrated_lines

    archives = archives or tuple(str(p) for p in ARCHIVES if p.is_dir())
    if not archives:
        raise ArenaError("no score-card archive found; run `dvc repro` first or pass archive directories")
    if rebuild:
        from arena.report.publish import leaderboard_from

        board = leaderboard_from(archives)
    else:
        board = leaderboard_for(archives)
    if as_json:
        click.echo(json.dumps(board, indent=2, sort_keys=True))
        return
    if versus:
        from arena.report.table import versus_markdown

        try:
            click.echo(versus_markdown(board, versus), nl=False)
        except ValueError as error:
            raise ArenaError(f"--versus {versus}: {error}") from None
        return
    console = Console()
    console.print(render_table(board, wide=wide))
    for line in unrated_lines(board):
        console.print(line, highlight=False)


@click.command()
@click.option("--evals", default="artifacts/evals", show_default=True, type=click.Path(),
              help="the per-round eval files (r<N>.json)")
@click.option("--leaderboard", "board_file", default="artifacts/scores/leaderboard.json", show_default=True,
              type=click.Path(), help="the tournament's leaderboard.json (skipped when absent)")
@click.option("--width", default=80, show_default=True, type=int, help="wrap the text at this many columns")
def summary(evals, board_file, width) -> None:
    """What the build learned: each game's exact curve first -> last (flagging a last round worse than an
    earlier one) and the published model against the stock model and the oracle."""
    from arena.report.summary import load_evals, summary_text

    rounds = load_evals(evals) if Path(evals).is_dir() else []
    if not rounds:
        raise ArenaError(f"no eval file r<N>.json in {evals}; build the rounds first (dvc repro)")
    path = Path(board_file)
    board = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    click.echo(summary_text(rounds, board, width))
