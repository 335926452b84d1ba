"""What the studies share: a study's markdown table, and full-width NeuRD run on a game's exact table (no network)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_text


def emit_table(rows: Sequence[str], title: str, settings: Any, out: Path | None) -> None:
    """Print a study's markdown rows; with ``out``, also write them under a heading of ``title`` and the study's
    ``settings`` (its argparse namespace)."""
    print("\n".join(rows))
    if out:
        named = {key: str(value) for key, value in vars(settings).items()}
        atomic_write_text(out, f"# {title} ({named})\n\n" + "\n".join(rows) + "\n")


def uniform_logp(game: str) -> list[Any]:
    """Per information state of ``game`` (``arena.train.selfplay.fullwidth.info_states``), the uniform log-policy."""
    import numpy as np

    from arena.train.selfplay.fullwidth import info_states

    return [np.full(len(cols), -np.log(len(cols))) for cols in info_states(game).columns]


def exact_table_rounds(game: str, start: Sequence[Any], lr: float, config: Any, rounds: int,
                       iterations: int) -> list[list[Any]]:
    """Full-width NeuRD on ``game``'s exact table, no network: from the per-state log-policy ``start``, each
    iteration replaces the policy by the pipeline's own targets (``full_width_targets`` under the TrainConfig
    ``config``), the magnet moving to the policy at each round's start; the policy at each round's end."""
    from arena.train.selfplay.fullwidth import full_width_targets

    current, ends = list(start), []
    for step in range(rounds * iterations):
        if step % iterations == 0:
            magnet = current
        current = [target for target, _ in full_width_targets(game, current, magnet, lr, config)]
        if (step + 1) % iterations == 0:
            ends.append(current)
    return ends
