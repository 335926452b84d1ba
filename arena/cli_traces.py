"""`arena import-traces`: the CLI over arena.eval.imported (its own module: arena/cli.py is at the size limit)."""

from __future__ import annotations

import click


@click.command("import-traces")
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(),
              help="score-card archive to write: a new or empty directory, or an earlier import-traces output "
              "(replaced whole); anything else is refused")
@click.option("--params", default="params.yaml", show_default=True, type=click.Path(),
              help="params file whose eval: section the cards are measured under (its games and seeds)")
def import_traces(traces: tuple[str, ...], out: str, params: str) -> None:
    """Replay every game of verifiers TRACES (run dirs or traces.jsonl files); write pinned score cards to --out
    and leaderboard.json (TrueSkill ratings) beside them. A game that does not replay to its digest is rejected."""
    from arena.eval.imported import import_traces as run

    board = run(traces, out, params=params)
    click.echo(f"{out}: {len(board['cards'])} score card(s), every game replayed; ranking:")
    for row in board["ranking"]:
        click.echo(f"  {row['rank']}. {row['player']}  mu {row['mu']:.2f}  sigma {row['sigma']:.2f}  "
                   f"games {row['games']}")
