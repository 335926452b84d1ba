"""The CLI's --view default: full for a model with a chat template of its own, compact for arena's seeded ones."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import click

VIEWS = ("compact", "full")
VIEW_HELP = ("the MLX players' view [default: full for a model with a chat template of its own (a pretrained chat "
             "model), compact for arena's seeded models (embedded, standin), which are trained on it]")
view_option = click.option("--view", default=None, type=click.Choice(VIEWS), help=VIEW_HELP)


def seeded_templates() -> tuple[str, ...]:
    """The chat templates arena's seeded models carry (their compact prompts are what they are trained on)."""
    from arena.train.basemodel import CHATML_TEMPLATE
    from arena.train.standin import QWEN3_TEMPLATE

    return CHATML_TEMPLATE, QWEN3_TEMPLATE


def chat_template(model_dir: str | Path) -> str | None:
    """The model directory's chat template (tokenizer_config.json's, or chat_template.jinja), if any."""
    path = Path(model_dir).expanduser()
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    config = path / "tokenizer_config.json"
    return json.loads(config.read_text()).get("chat_template") if config.is_file() else None


def is_chat_model(model_dir: str | Path) -> bool:
    """Whether the model has a chat template that is not one of arena's seeded models'."""
    template = chat_template(model_dir)
    return bool(template) and template not in seeded_templates()


def resolve_view(view: str | None, model_dirs: Iterable[str | Path]) -> str:
    """``view`` when given; else full if any of the models is a chat model (said on stderr), else compact."""
    if view is not None:
        return view
    chat = [str(d) for d in model_dirs if is_chat_model(d)]
    if not chat:
        return "compact"
    click.echo(f"[arena] view: full ({chat[0]} has a chat template of its own; --view compact for the compact view)",
               err=True)
    return "full"


def mlx_dirs(*specs: str) -> list[str]:
    """The model directories of the ``mlx:PATH`` specs among ``specs``."""
    return [spec[len("mlx:"):] for spec in specs if spec.startswith("mlx:")]
