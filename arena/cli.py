"""The `arena` command line: a click group over the same functions the DVC stages call."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

import arena
from arena.cli_checks import check_artifacts, replay
from arena.cli_results import leaderboard, summary
from arena.cli_traces import import_traces
from arena.cli_view import mlx_dirs, resolve_view, view_option
from arena.core.blas import ensure_fast_blas
from arena.core.errors import ArenaError, disk_full, is_disk_full

if TYPE_CHECKING:
    from arena.players.config import FrontierConfig


class _Group(click.Group):
    """Print user errors (ArenaError) as one clear line with exit status 2, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ArenaError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)
        except OSError as error:
            if not is_disk_full(error):
                raise
            click.echo(f"error: {disk_full(error)}", err=True)
            sys.exit(2)


# The chat template's thinking switch (Qwen3's enable_thinking) for MLX players; templates without one ignore it.
_thinking = click.option("--thinking/--no-thinking", default=False, show_default=True,
                         help="MLX players' enable_thinking (chat templates with a thinking switch)")


@click.group(cls=_Group, commands=[import_traces, replay, check_artifacts, leaderboard, summary],
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(arena.__version__, prog_name="arena")
def main() -> None:
    """arena: post-train small local models by self-play in games, as a reproducible DVC build."""
    # Every command imports its logic lazily, after this: OpenBLAS must be loaded before anything imports mlx.
    ensure_fast_blas()


@main.command()
@click.argument("path", type=click.Path())
def pin(path: str) -> None:
    """Print the pin (model hash x quant x config hash + versions) of the model directory PATH as JSON."""
    from arena.core.pins import model_pin

    click.echo(json.dumps(model_pin(path), indent=2, sort_keys=True))


@main.command()
@click.option("--params", default="params.yaml", show_default=True, help="params file with a base: section")
@click.option("--out", default="artifacts/models/base", show_default=True, help="output model directory")
def base(params: str, out: str) -> None:
    """Build the base model (embedded tiny model, or a local/hub one) as the `base` stage does."""
    from arena.core.config import load_section
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    meta = build_base(load_section(BaseConfig, "base", params), out)
    click.echo(json.dumps(meta["pin"], indent=2, sort_keys=True))


def _variant(pairs: tuple[str, ...]) -> dict:
    """Parse ``--variant key=value`` options; values are YAML scalars or lists (``piles=[3,4,5]``)."""
    import yaml

    variant = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ArenaError(f"--variant {pair!r} must look like key=value")
        variant[key] = yaml.safe_load(value)
    return variant


def _frontier_config(params: str | None) -> FrontierConfig:
    """``params``' frontier: section (default: ./params.yaml when it exists), else FrontierConfig's defaults."""
    from pathlib import Path

    from arena.core.config import PARAMS_FILE, load_params
    from arena.players.build import load_frontier_config

    if params is None and not Path(PARAMS_FILE).exists():
        return load_frontier_config({})
    return load_frontier_config(load_params(params or PARAMS_FILE))


@main.command()
@click.argument("game")
@click.option("--p0", required=True, help="first player spec (random, first, oracle, staller, spammer, mlx:PATH, ...)")
@click.option("--p1", required=True, help="second player spec")
@click.option("--games", default=100, show_default=True, type=int, help="games to play (seats swap every game)")
@click.option("--seed", default=0, show_default=True, type=int, help="first deal seed; each deal is played twice")
@click.option("--variant", multiple=True, help="game variant key=value (repeatable)")
@click.option("--temperature", default=1.0, show_default=True, type=float, help="MLX players' sampling temperature")
@view_option
@_thinking
@click.option("--think", "think_tokens", default=0, show_default=True, type=int,
              help="MLX players reason up to N tokens before each move (docs/thinking.md; 0: no reasoning)")
@click.option("--params", type=click.Path(dir_okay=False),
              help="params file whose frontier: section configures openai: players [default: params.yaml if present]")
@click.option("--concurrency", default=64, show_default=True, type=int, help="games played in lockstep")
@click.option("--max-batch-tokens", type=int, default=None,
              help="MLX players' tokens a scoring pass may hold, and the keys and values kept across turns "
                   "(player.max_batch_tokens; the player prints the memory this bounds) [default: 65536]")
@click.option("--store-tokens", type=int, default=None,
              help="MLX players' keys and values kept across turns, in tokens over all games (player.store_tokens; "
                   "docs/memory.md) [default: --max-batch-tokens]")
@click.option("--store-dtype", default=None, help="what they are kept in: pass (exact) or model (the weights' "
              "float dtype: half the bytes for a float16 model on the CPU; player.store_dtype) [default: pass]")
@click.option("--out", type=click.Path(), help="also write the game records as a JSONL shard here")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
def play(game, p0, p1, games, seed, variant, temperature, view, thinking, think_tokens, params, concurrency,
         max_batch_tokens, store_tokens, store_dtype, out, as_json) -> None:
    """Play GAMES games of GAME between two players and print the score.

    MLX players sample with --view and --temperature; frontier players (openai:MODEL@BASE_URL) are called
    with the frontier: section of --params.
    """
    from arena.games.registry import get_spec
    from arena.play.match import duplicate_schedule, timed_match
    from arena.play.records import write_shard
    from arena.play.stats import all_errored, chips_interval, errored_line, summarize_match
    from arena.players.build import PlayerConfigs
    from arena.players.config import MLXPlayerConfig, think_config

    get_spec(game)
    if games < 1:
        raise ArenaError(f"--games {games} must be >= 1")
    view = resolve_view(view, mlx_dirs(p0, p1))
    think = think_config("--think", {"max_tokens": think_tokens}) if think_tokens else None
    given = {"max_batch_tokens": max_batch_tokens, "store_tokens": store_tokens, "store_dtype": store_dtype}
    budget = {key: value for key, value in given.items() if value is not None}
    mlx_config = MLXPlayerConfig(view=view, temperature=temperature, enable_thinking=thinking, think=think, **budget)
    configs = PlayerConfigs(mlx_config, _frontier_config(params))
    players = (configs.make(p0), configs.make(p1))
    if players[0].spec == players[1].spec:
        raise ArenaError(f"--p0 and --p1 are both {p0!r}: give two different specs (e.g. mlx:PATH vs random)")
    schedule = duplicate_schedule(range(seed, seed + (games + 1) // 2), games)
    records, rate = timed_match(game, players, schedule, variant=_variant(variant), concurrency=concurrency)
    if out:
        write_shard(out, records)
    if line := errored_line(records, f"{game} ({players[0].spec} vs {players[1].spec})"):  # before the summary
        click.echo(line, err=True)
    summary = {**summarize_match(records, players[0].spec, players[1].spec), "games_per_sec": round(rate, 2)}
    if summary.get("mean_chips_per_round"):  # a chip game: its measure is chips, not wins
        summary["p0_chips_per_hand"] = chips_interval(records, players[0].spec)
    if as_json:
        click.echo(json.dumps(summary, sort_keys=True))
    else:
        from rich.console import Console

        from arena.report.table import render_match

        Console().print(render_match(summary, players[0].spec, players[1].spec))
    sys.exit(1 if all_errored(records) else 0)  # every game errored: nothing was measured


@main.command()
@click.argument("game")
@click.option("--model", "model_dir", required=True, type=click.Path(), help="an mlx-lm model directory")
@view_option
@click.option("--seed", default=0, show_default=True, type=int, help="deal seed of the game shown")
@click.option("--variant", multiple=True, help="game variant key=value (repeatable)")
@_thinking
def prompt(game, model_dir, view, seed, variant, thinking) -> None:
    """Print the prompt MODEL_DIR is shown at GAME's first move (its own chat template; only the tokenizer is loaded)
    and the token counts of it and of each legal action as scored (full view: the reply through end of turn)."""
    from arena.players.mlx import load_tokenizer
    from arena.players.prompts import first_observation, prompt_report

    observation = first_observation(game, seed, _variant(variant))
    click.echo(prompt_report(load_tokenizer(model_dir), observation, resolve_view(view, [model_dir]), thinking))


@main.command()
@click.argument("games", nargs=-1)
@click.option("--games-per-check", type=int, help="games per check (default: the probe section's default)")
@click.option("--kuhn-games-per-check", type=int, help="games per Kuhn check (judged in chips, so more)")
@click.option("--seed", type=int, help="first deal seed of the audit")
def probe(games, games_per_check, kuhn_games_per_check, seed) -> None:
    """Reward audit: prove degenerate policies cannot score in GAMES (default: all); exit 1 on any violation."""
    from arena.play.config import ProbeConfig
    from arena.play.probe import print_checks, run_probe

    # Only what was given overrides ProbeConfig, so its defaults live in one place.
    given = {"games": tuple(games) or None, "games_per_check": games_per_check,
             "kuhn_games_per_check": kuhn_games_per_check, "seed": seed}
    config = ProbeConfig(**{key: value for key, value in given.items() if value is not None})
    checks = run_probe(config, progress=True)
    print_checks(checks)
    sys.exit(0 if all(c.passed for c in checks) else 1)


@main.command("kuhn-policy")
@click.argument("model_dir", type=click.Path())
@click.option("--temperature", default=1.0, show_default=True, type=float)
@view_option
@_thinking
@click.option("--json", "as_json", is_flag=True, help="print JSON only (info set -> P(bet or call))")
def kuhn_policy(model_dir, temperature, view, thinking, as_json) -> None:
    """Print MODEL_DIR's probability of betting/calling at each of Kuhn's 12 information sets."""
    from arena.games.kuhn_theory import exploitability
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.players.policy import model_policy

    config = MLXPlayerConfig(view=resolve_view(view, [model_dir]), temperature=temperature, enable_thinking=thinking)
    policy = model_policy(MLXPlayer(model_dir, config))
    click.echo(json.dumps(policy, indent=2))
    if not as_json:
        click.echo(f"exploitability: {exploitability(policy):.4f}", err=True)


@main.command("policy")
@click.argument("model_dir", type=click.Path())
@click.option("--game", default="kuhn", show_default=True, type=click.Choice(["kuhn", "leduc"]),
              help="a game with exact theory")
@click.option("--temperature", default=1.0, show_default=True, type=float)
@view_option
@_thinking
@click.option("--json", "as_json", is_flag=True, help="print the table as JSON (what `arena exploitability` reads)")
def policy(model_dir, game, temperature, view, thinking, as_json) -> None:
    """Print MODEL_DIR's exact policy at every information state of GAME; its exploitability goes to stderr.

    Kuhn: info set -> P(bet or call), 12 keys. Leduc: OpenSpiel info-state string -> {fold, call, raise:
    probability} over the legal actions, 936 keys. One batched scoring pass over real observations.
    """
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.players.policy import exact_policy

    config = MLXPlayerConfig(view=resolve_view(view, [model_dir]), temperature=temperature, enable_thinking=thinking)
    table = exact_policy(MLXPlayer(model_dir, config), game)
    if as_json:
        click.echo(json.dumps(table, indent=2))
    else:
        for key, value in table.items():
            shown = " ".join(f"{name}={p:.4f}" for name, p in value.items()) if isinstance(value, dict) else (
                f"P(bet or call)={value:.4f}")
            click.echo(f"{key}  {shown}")
    click.echo(f"exploitability: {_theory(game).exploitability(table):.4f}", err=True)


@main.command("exact")
@click.argument("model_dir", type=click.Path())
@click.option("--game", required=True, type=click.Choice(["kuhn", "leduc", "tictactoe", "nim"]))
@click.option("--variant", multiple=True, help="game variant key=value (repeatable), e.g. piles=[3,4,5]")
@view_option
@_thinking
def exact(model_dir, game, variant, view, thinking) -> None:
    """Print MODEL_DIR's exact skill measures on GAME as JSON, as each round's evaluation records them.

    Kuhn and Leduc: exploitability. TicTacToe: mass on minimax-optimal moves over all 4,520 positions and the
    exact chance of losing to minimax from each seat. Nim: winning-move mass on seen and held-out piles.
    """
    from arena.eval.exact import exact_metrics
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    config = MLXPlayerConfig(view=resolve_view(view, [model_dir]), enable_thinking=thinking)
    metrics = exact_metrics(MLXPlayer(model_dir, config), game, _variant(variant))
    metrics.pop("policy", None)
    click.echo(json.dumps(metrics, indent=2, sort_keys=True))


def _theory(game: str):
    """The exact-theory module of a game (kuhn or leduc)."""
    from arena.games import kuhn_theory, leduc_theory

    return {"kuhn": kuhn_theory, "leduc": leduc_theory}[game]


@main.command("exploitability")
@click.argument("policy_file", type=click.Path())
@click.option("--game", default="kuhn", show_default=True, type=click.Choice(["kuhn", "leduc"]),
              help="kuhn: info set -> P(bet or call); leduc: OpenSpiel info state -> {action: probability}")
def exploitability_command(policy_file, game) -> None:
    """Exact exploitability (NashConv/2) of a policy JSON for GAME (as `arena policy --json` writes it)."""
    from arena.core.artifacts import dump_json

    theory = _theory(game)
    try:
        report = theory.exploitability_report(theory.load_policy(policy_file))
    except theory.PolicyError as error:
        raise ArenaError(str(error)) from error
    click.echo(dump_json(report), nl=False)


@main.command("repro-check")
@click.option("--repo", default=".", show_default=True, type=click.Path(exists=True, file_okay=False))
@click.option("--pipeline", default="dvc.yaml", show_default=True,
              help="the dvc.yaml to rebuild, relative to --repo (realmodel/dvc.yaml: the real-model pipeline)")
@click.option("--stage", "stages", multiple=True,
              help="rebuild only this stage of the pipeline and the ones upstream of it (repeatable; default: all)")
def repro_check(repo, pipeline, stages) -> None:
    """Rebuild a pipeline's stages (`dvc repro --force`); exit 1 unless its lock and committed scores are identical."""
    from arena.eval.reproduce import published_paths, reproduction_check

    result = reproduction_check(repo, pipeline=pipeline, stages=tuple(stages))
    if result.ok:
        locks = " and ".join(p for p in published_paths(pipeline) if p.endswith("dvc.lock"))
        which = f" (stages {', '.join(stages)} and those upstream)" if stages else ""
        click.echo(f"REPRODUCED {pipeline}{which}: {locks} and every committed result are byte-identical")
        return
    for problem in result.problems:
        click.echo(f"NOT REPRODUCED: {problem}")
    if result.diff:
        click.echo(result.diff[:20000])
    sys.exit(1)


@main.command("check-params")
@click.argument("path", default="params.yaml", type=click.Path())
def check_params(path: str) -> None:
    """Validate every params section and the seed plan across them; exit 2 on the first problem."""
    from arena.core.config import load_params
    from arena.pipeline.params import validate_all

    validate_all(load_params(path))
    click.echo(f"{path}: ok")


@main.command()
@click.argument("preset", type=click.Path())
@click.option("--params", default="params.yaml", show_default=True, type=click.Path(), help="the params it applies to")
def preset(preset: str, params: str) -> None:
    """Check PRESET (dotted-key overrides) on --params; print its flags: dvc exp run -n NAME $(arena preset FILE)"""
    from arena.core.config import load_params
    from arena.pipeline.presets import checked_flags

    click.echo(checked_flags(preset, load_params(params)))


@main.command()
@click.argument("scorecards", nargs=-1, required=True, type=click.Path())
@click.option("--repo", default=".", show_default=True, type=click.Path(exists=True, file_okay=False))
@click.option("--strict", is_flag=True, help="a different platform tuple is a mismatch, not an interval check")
@click.option("--no-fetch", is_flag=True, help="never fetch a missing model from the DVC remote")
@click.option("--model-dir", "model_dirs", multiple=True, type=click.Path(file_okay=False),
              help="a directory outside --repo whose models cards may name (also $ARENA_MODEL_DIRS)")
@click.option("--params", "params_file", default="params.yaml", show_default=True,
              help="the params file the cards' stage read, relative to --repo (realmodel/params.yaml)")
def verify(scorecards, repo, strict, no_fetch, model_dirs, params_file) -> None:
    """Re-derive each published SCORECARD from its pins: locate models by digest, check pins, re-play, compare."""
    from pathlib import Path

    from arena.eval.verify import verify_scorecard

    if not (Path(repo) / params_file).is_file():
        raise ArenaError(f"--params {params_file}: no such file in {repo}; name the params file the cards' "
                         "stage read (params.yaml, realmodel/params.yaml)")
    failed = 0
    for card in scorecards:
        result = verify_scorecard(card, repo=repo, strict=strict, fetch=not no_fetch, model_dirs=model_dirs,
                                  params_file=params_file)
        click.echo(result.report())
        failed += not result.ok
    sys.exit(1 if failed else 0)


@main.command()
@click.option("--files", is_flag=True, help="list each stage's files, not only their count")
def deps(files: bool) -> None:
    """Each stage script's code: its import closure and digest (what the `code` stage writes to artifacts/code)."""
    from arena.pipeline.deps import manifest, stage_scripts

    for script in stage_scripts():
        entry = manifest(script)
        rooms = sorted({path.split("/")[1] for path in entry["files"] if path.count("/") >= 2})
        click.echo(f"{script}: {len(entry['files'])} files, code digest {entry['code_digest'][:16]} "
                   f"({', '.join(rooms)})")
        if files:
            click.echo("".join(f"  {path}\n" for path in entry["files"]), nl=False)


if __name__ == "__main__":  # `python -m arena.cli ...` runs the same commands as the `arena` script
    main()
