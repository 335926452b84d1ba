"""The `arena` command line: a click group over the same functions the DVC stages call."""

from __future__ import annotations

import json
import sys

import click

import arena  # noqa: F401 -- loads OpenBLAS before anything imports mlx
from arena.errors import ArenaError


class _Group(click.Group):
    """Print user errors (ArenaError) as one clear line with exit status 2, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ArenaError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(arena.__version__, prog_name="arena")
def main() -> None:
    """arena: post-train small local models by self-play in games, as a reproducible DVC build."""


@main.command()
@click.argument("path", type=click.Path())
def pin(path: str) -> None:
    """Print the pin (model hash x quant x config hash + versions) of the model directory PATH as JSON."""
    from arena.pins import model_pin

    click.echo(json.dumps(model_pin(path), indent=2, sort_keys=True))


@main.command()
@click.option("--params", default="params.yaml", show_default=True, help="params file with a base: section")
@click.option("--out", default="artifacts/models/base", show_default=True, help="output model directory")
def base(params: str, out: str) -> None:
    """Build the base model (embedded tiny model, or a local/hub one) as the `base` stage does."""
    from arena.basemodel import BaseConfig, build_base
    from arena.config import load_section

    meta = build_base(load_section(BaseConfig, "base", params), out)
    click.echo(json.dumps(meta["pin"], indent=2, sort_keys=True))
