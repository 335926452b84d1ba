"""Each game's exact measures over rounds, from eval@r files: flat series, a PNG panel per game, markdown tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from arena.report.plots import ReportError, _png
from arena.report.summary import measure_note

# Bookkeeping beside the measures (how many configurations a Nim mass averages over, how many reasonings a thinking
# player's estimate samples), not a measure itself.
_NOT_MEASURES = ("configurations", "estimated_from_reasonings")


def _flat(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Nested measures as dotted keys (``loss_vs_minimax.seat0``), as ``dvc metrics show`` names them."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if key in _NOT_MEASURES or value is None or isinstance(value, (list, tuple)):
            continue  # a list is an estimate's interval ([low, high]): the curve is its point estimate
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = float(value)
    return out


def exact_series(evals: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per game label, per measure, the (round, value) points of every eval@r file that has it, by round."""
    series: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for evaluation in sorted(evals, key=lambda e: e["round"]):
        for game, metrics in (evaluation.get("exact") or {}).items():
            for key, value in _flat(metrics).items():
                series.setdefault(game, {}).setdefault(key, []).append((evaluation["round"], value))
    return series


def plot_exact_rounds(evals: Sequence[Mapping[str, Any]], title: str = "") -> bytes:
    """One PNG: a panel per game with a curve per exact measure over rounds."""
    series = exact_series(evals)
    if not series:
        raise ReportError("no eval@r file has exact measures (eval.games or selfplay games with exact theory)")
    figure = Figure(figsize=(4.6 * len(series), 3.6))
    for ax, (game, measures) in zip(figure.subplots(1, len(series), squeeze=False)[0], series.items(), strict=True):
        notes = {measure_note(key) for key in measures}
        for key, points in measures.items():
            label = key if len(notes) == 1 else f"{key} ({measure_note(key)})"
            ax.plot([r for r, _ in points], [v for _, v in points], marker="o", label=label)
        ax.set(title=game, xlabel="round", ylabel=notes.pop() if len(notes) == 1 else "exact measure")
        ax.set_xticks(sorted({r for points in measures.values() for r, _ in points}))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return _png(figure)


def _win_rates(evaluation: Mapping[str, Any], game: str) -> dict[str, float]:
    prefix = f"{game}_vs_"
    return {key[len(prefix):]: row["win_rate"] for key, row in evaluation.items()
            if key.startswith(prefix) and isinstance(row, Mapping)}


def exact_tables(evals: Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown: a table per game, one row per round (its exact measures, win rates, and wall and CPU minutes if
    timed, as studies/games.py records them)."""
    rows = sorted(evals, key=lambda e: e["round"])
    games = list(dict.fromkeys(key.split("_vs_")[0] for e in rows for key in e if "_vs_" in key))
    series = exact_series(rows)
    timed = all("seconds" in e and "cpu_seconds" in e for e in rows)
    lines: list[str] = []
    for game in games:
        measures = list(series.get(game, {}))
        opponents = list(_win_rates(rows[0], game))
        header = ["round", *(["wall min", "CPU min"] if timed else []), *measures,
                  *(f"win rate vs {o}" for o in opponents)]
        lines += [f"**{game}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for evaluation in rows:
            values = _flat((evaluation.get("exact") or {}).get(game, {}))
            rates = _win_rates(evaluation, game)
            minutes = [f"{evaluation[key] / 60:.1f}" for key in ("seconds", "cpu_seconds")] if timed else []
            cells = [str(evaluation["round"]), *minutes,
                     *(f"{values[m]:.3f}" if m in values else "-" for m in measures),
                     *(f"{rates[o]:.3f}" if o in rates else "-" for o in opponents)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines
