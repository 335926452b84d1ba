"""LSP's per-round PNG curves: held-out solver accuracy per arm (Wilson bands), the challenger's difficulty and mix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from arena.report.plots import ReportError, _png


def _series(evals: Sequence[Mapping[str, Any]], key: str) -> tuple[list[int], list[float], list[float], list[float]]:
    rows = sorted(evals, key=lambda e: e["round"])
    bench = [e["benchmark"][key] for e in rows]
    return [e["round"] for e in rows], [b["accuracy"] for b in bench], [b["low"] for b in bench], \
        [b["high"] for b in bench]


def _proposal_series(evals: Sequence[Mapping[str, Any]], pick) -> tuple[list[int], list[float]]:
    rows = sorted((e for e in evals if e.get("proposals")), key=lambda e: e["round"])
    points = [(e["round"], pick(e["proposals"])) for e in rows]
    points = [(r, v) for r, v in points if v is not None]
    return [r for r, _ in points], [v for _, v in points]


def _nim_share(proposals: Mapping[str, Any]) -> float:
    kinds = proposals["features"].get("kind", {})
    return kinds.get("nim", 0) / max(sum(kinds.values()), 1)


def plot_lsp_rounds(arms: Mapping[str, Sequence[Mapping[str, Any]]]) -> bytes:
    """One PNG: per arm (its eval@r files, one per round), held-out accuracy with its 95% Wilson band; the
    solver's success on the arm's own proposals (the challenger's difficulty); the valid share and Nim share."""
    if not arms or not all(arms.values()):
        raise ReportError("plot_lsp_rounds needs at least one arm with at least one round's evaluation")
    figure = Figure(figsize=(13, 3.8))
    accuracy, difficulty, mix = figure.subplots(1, 3)
    for name, evals in arms.items():
        rounds, rate, low, high = _series(evals, "all")
        (line,) = accuracy.plot(rounds, rate, marker="o", label=name)
        accuracy.fill_between(rounds, low, high, color=line.get_color(), alpha=0.15)
        r, success = _proposal_series(evals, lambda p: p["solver_success"])
        if r:
            difficulty.plot(r, success, marker="o", color=line.get_color(), label=name)
        r, valid = _proposal_series(evals, lambda p: p["valid_fraction"])
        if r:
            mix.plot(r, valid, marker="o", color=line.get_color(), label=f"{name}: valid")
            r, nim = _proposal_series(evals, _nim_share)
            mix.plot(r, nim, marker="x", linestyle="--", color=line.get_color(), label=f"{name}: nim share")
    accuracy.set(title="held-out solver accuracy (95% Wilson)", xlabel="round", ylabel="accuracy")
    difficulty.set(title="solver success on its own proposals", xlabel="round", ylabel="mean reward", ylim=(0, 1))
    mix.set(title="proposals: valid share, Nim share", xlabel="round", ylabel="fraction", ylim=(0, 1.02))
    for ax in (accuracy, difficulty, mix):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    figure.tight_layout()
    return _png(figure)
