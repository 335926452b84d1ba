"""A thinking run's reasoning over rounds, from eval@r files: its length (mean and spread) and disagreement rate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from arena.report.plots import ReportError, _png
from arena.report.summary import REASONING_KEYS

_LABELS = {"reasoning": "round eval games", "rollout_reasoning": "round rollouts"}


def reasoning_series(evals: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, float, float, float | None]]]:
    """Per source (the round eval's games, the rollouts), (round, tokens mean, tokens sd, last-named-differs rate)
    of every eval@r file that has it, by round."""
    series: dict[str, list[tuple[int, float, float, float | None]]] = {}
    for evaluation in sorted(evals, key=lambda e: e["round"]):
        for key, _ in REASONING_KEYS:
            stats = evaluation.get(key) or {}
            if "reasoning_tokens_mean" in stats:
                series.setdefault(key, []).append((evaluation["round"], stats["reasoning_tokens_mean"],
                                                   stats["reasoning_tokens_std"], stats.get("last_named_differs_rate")))
    return series


def has_reasoning(evaluation: Mapping[str, Any]) -> bool:
    """Whether an eval@r file carries a thinking round's reasoning statistics."""
    return any("reasoning_tokens_mean" in (evaluation.get(key) or {}) for key, _ in REASONING_KEYS)


def plot_reasoning_rounds(evals: Sequence[Mapping[str, Any]]) -> bytes:
    """One PNG, two panels: reasoning tokens per decision (mean, the band one standard deviation either side) and
    how often the reasoning's last named move differs from the move played (rounds where it names one)."""
    series = reasoning_series(evals)
    if not series:
        raise ReportError("no eval@r file has reasoning statistics (selfplay.think or roundeval.think)")
    figure = Figure(figsize=(9.2, 3.6))
    length, differs = figure.subplots(1, 2)
    for key, points in series.items():
        rounds = [p[0] for p in points]
        means, sds = [p[1] for p in points], [p[2] for p in points]
        line = length.plot(rounds, means, marker="o", label=_LABELS[key])[0]
        length.fill_between(rounds, [m - s for m, s in zip(means, sds, strict=True)],
                            [m + s for m, s in zip(means, sds, strict=True)], color=line.get_color(), alpha=0.2)
        named = [(r, d) for r, _, _, d in points if d is not None]
        differs.plot([r for r, _ in named], [d for _, d in named], marker="o", label=_LABELS[key])
    length.set(title="reasoning length", xlabel="round", ylabel="tokens per decision (mean +- sd)")
    differs.set(title="last named move differs from the move played", xlabel="round", ylabel="rate",
                ylim=(-0.02, 1.02))
    for ax in (length, differs):
        ax.set_xticks(sorted({p[0] for points in series.values() for p in points}))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    figure.tight_layout()
    return _png(figure)
