"""`arena replay` and `arena check-artifacts`: the CLI's checks of shards, artifacts and caches (arena/cli.py is at
the size limit)."""

from __future__ import annotations

import sys

import click


@click.command()
@click.argument("shards", nargs=-1, required=True, type=click.Path())
def replay(shards) -> None:
    """Re-play every game in each SHARD (games.jsonl or its directory) and check its transcript digest."""
    from arena.play.records import errored_count, read_shard, verify_records

    failed = 0
    for shard in shards:
        records = read_shard(shard)
        problems = verify_records(records)
        for problem in problems:
            click.echo(f"MISMATCH {shard}: {problem}")
        failed += len(problems)
        errored = errored_count(records)
        note = f" ({errored} errored, not replayable)" if errored else ""
        click.echo(f"{shard}: {len(records) - errored - len(problems)}/{len(records)} games verified{note}")
    sys.exit(1 if failed else 0)


@click.command("check-artifacts")
@click.option("--artifacts", "artifacts_dir", default="artifacts", show_default=True, type=click.Path())
@click.option("--dvc-cache", default=".dvc/cache", show_default=True, type=click.Path())
@click.option("--repair", is_flag=True, help="delete corrupt DVC cache objects so `dvc repro` rebuilds them")
def check_artifacts(artifacts_dir: str, dvc_cache: str, repair: bool) -> None:
    """Check artifacts against their meta.json digests, score cards against their own, DVC objects against md5s."""
    from arena.core.integrity import verify_artifacts, verify_dvc_cache
    from arena.eval.scorecards import archive_problems

    problems = (verify_artifacts(artifacts_dir, dvc_cache) + archive_problems(artifacts_dir)
                + verify_dvc_cache(dvc_cache, repair=repair))
    for problem in problems:
        click.echo(problem)
    click.echo(f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)
