"""What every benchmark figure shares: result rows, paired timing helpers, the base model, and the Markdown table."""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
KUHN_EVAL_SEED = 9_000_000  # held-out evaluation seeds (params.yaml eval.seeds)


# ----------------------------------------------------------------------------------------------- results


@dataclass
class Row:
    """One line of the table. ``ratio`` is always "times faster than the reference" (> 1: ours is faster)."""

    figure: str
    name: str
    unit: str
    ours: float | None
    reference: float | None
    ours_label: str
    reference_label: str
    ratio: float | None = None
    target: str | None = None
    passed: bool | None = None
    note: str = ""
    peak_rss_mib: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def throughput_row(figure: str, name: str, unit: str, ours: float, reference: float, labels: tuple[str, str],
                   min_ratio: float | None, note: str = "", ratio: float | None = None, **details: Any) -> Row:
    """A higher-is-better figure: ratio = ours / reference (or the paired ``ratio``), passing at ``min_ratio``."""
    ratio = ours / reference if ratio is None else ratio
    return Row(figure, name, unit, ours, reference, labels[0], labels[1], ratio,
               None if min_ratio is None else f">= {min_ratio:g}x",
               None if min_ratio is None else ratio >= min_ratio, note, details=details)


def latency_row(figure: str, name: str, unit: str, ours: float | None, reference: float | None,
                labels: tuple[str, str], max_value: float, note: str = "", **details: Any) -> Row:
    """A lower-is-better figure with an absolute target: ratio = reference / ours, passing at or under the target."""
    ratio = reference / ours if ours and reference else None
    passed = None if ours is None else ours <= max_value
    return Row(figure, name, unit, ours, reference, labels[0], labels[1], ratio, f"<= {max_value:g} {unit}",
               passed, note, details=details)


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the table."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- timing


def interleaved(candidates: dict[str, Callable[[], float | None]], reps: int) -> dict[str, list[float]]:
    """Run each candidate once per repetition, in turn; each returns its own measured seconds (None: time it here)."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(reps):
        for name, fn in candidates.items():
            start = time.perf_counter()
            measured = fn()
            times[name].append(measured if measured is not None else time.perf_counter() - start)
    return times


def discarding(fn: Callable[[], object]) -> Callable[[], None]:
    """A candidate that ``interleaved`` times itself: runs ``fn`` and drops its result."""

    def run() -> None:
        fn()

    return run


def paired_speedup(ours_s: Sequence[float], reference_s: Sequence[float], ours_work: float = 1.0,
                   reference_work: float = 1.0) -> float:
    """Median over repetitions of (ours_work / ours_s[i]) / (reference_work / reference_s[i]): adjacent samples only."""
    return statistics.median((ours_work / o) / (reference_work / r) for o, r in zip(ours_s, reference_s, strict=True))


def calibrated_calls(fn: Callable[[], object], budget_s: float) -> int:
    """How many calls of ``fn`` fill about ``budget_s`` (after one warm-up call), at least one."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(budget_s / once))


def repeated(fn: Callable[[], object], calls: int) -> Callable[[], float]:
    """A candidate that calls ``fn`` ``calls`` times and returns the seconds per call."""

    def run() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls

    return run


# ----------------------------------------------------------------------------------------------- model


@contextlib.contextmanager
def base_model() -> Iterator[tuple[Path, str]]:
    """The pipeline's base model if it is built, else the embedded default built (offline) into a temp dir."""
    built = ROOT / "artifacts" / "models" / "base"
    if (built / "config.json").exists():
        yield built, "artifacts/models/base"
        return
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        build_base(BaseConfig(), Path(tmp) / "base")
        yield Path(tmp) / "base", "embedded default (BaseConfig(), built for this run)"


# ----------------------------------------------------------------------------------------------- table


NOTES_HEADING = "## Notes"


def write_keeping_notes(path: Path, generated: str) -> None:
    """Write a results file's generated part, keeping the hand-written section from its ``## Notes`` heading on.

    A rerun replaces the tables; the notes (dated, written by whoever ran it) stay until a person edits them.
    """
    old = path.read_text() if path.exists() else ""
    start = old.find("\n" + NOTES_HEADING + "\n")
    notes = old[start + 1:] if start >= 0 else ""
    atomic_write_text(path, generated.rstrip("\n") + "\n" + ("\n" + notes if notes else ""))


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def render_table(rows: Sequence[dict[str, Any]]) -> str:
    """The figures as a Markdown table (pastes straight into docs/benchmarks.md)."""
    lines = ["| figure | ours | reference | ratio | target | pass/fail | peak RSS |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        unit = row["unit"]
        ours = f"{_fmt(row['ours'])} {unit} ({row['ours_label']})" if row["ours"] is not None else row["note"]
        reference = f"{_fmt(row['reference'])} {unit} ({row['reference_label']})" if row["reference"] else "-"
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
        verdict = {True: "pass", False: "**FAIL**", None: "-" if row["target"] is None else "skipped"}[row["passed"]]
        rss = f"{row['peak_rss_mib']:.0f} MiB" if row["peak_rss_mib"] is not None else "-"
        lines.append(f"| {row['name']} | {ours} | {reference} | {ratio} | {row['target'] or 'context'} | {verdict} "
                     f"| {rss} |")
    return "\n".join(lines)
