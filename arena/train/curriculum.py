"""The automatic curriculum: a ladder of tasks (game variant x opponent strength), probed each round, kept in a band.

A task is one game variant against one ``eps-oracle:EPS`` opponent (EPS 1 plays uniformly at random, EPS 0 is
the oracle). Before each ReST round the current snapshot plays a small probe set of every task (training seeds,
never the held-out evaluation seeds) and the round trains on the tasks whose measured win rate lies in the band
``[band_low, band_high]``: too easy (mastered) and too hard tasks teach little. As the model masters a tier its
rate leaves the band from above and harder tiers take its place, so difficulty rises without a schedule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.core.config import ConfigError
from arena.core.seeds import SeedsConfig, curriculum_probe_seeds
from arena.games.variants import game_label
from arena.play.match import duplicate_schedule, play_match
from arena.play.stats import summarize_match
from arena.players.base import Player
from arena.players.scripted import make_scripted
from arena.players.specs import EPS_ORACLE
from arena.train.config import CurriculumConfig

CURRICULUM_FILE = "curriculum.json"
MASTERED, IN_BAND, TOO_HARD = "mastered", "in band", "too hard"


@dataclass(frozen=True)
class Task:
    """One rung of the ladder: a game variant against an opponent; ``tier`` is its position (0 = easiest)."""

    tier: int
    game: str
    variant: Mapping[str, Any]
    opponent: str

    @property
    def label(self) -> str:
        return f"{game_label(self.game, self.variant)} vs {self.opponent}"

    def as_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "game": self.game, "variant": dict(self.variant), "opponent": self.opponent,
                "label": self.label}


def ladder(config: CurriculumConfig, game: str) -> list[Task]:
    """Every task, variant-major (the listed variant order, then decreasing epsilon): tier 0 is the easiest."""
    from arena.games.registry import get_spec

    spec = get_spec(game)
    tasks = []
    for index, variant in enumerate(config.variants):
        try:
            full = spec.validate_variant(variant)
        except (ValueError, TypeError) as error:
            raise ConfigError(f"curriculum.variants[{index}] = {variant!r} is invalid for {game}: {error}") from None
        for epsilon in config.epsilons:
            tasks.append(Task(len(tasks), game, full, f"{EPS_ORACLE}{epsilon!r}"))
    return tasks


# ----------------------------------------------------------------------------------------------- band logic (pure)


def band_status(rate: float, low: float, high: float) -> str:
    """``mastered`` above the band, ``too hard`` below it, ``in band`` inside (limits included)."""
    if rate > high:
        return MASTERED
    if rate < low:
        return TOO_HARD
    return IN_BAND


def choose_tasks(rates: Sequence[float], low: float, high: float, max_tasks: int) -> list[int]:
    """The tiers to train on: up to ``max_tasks`` tasks nearest the band, in ladder order.

    Tasks are ranked by their distance outside ``[low, high]`` (0 inside), then by distance from the band's
    centre (a win rate near 1/2 gives the most balanced wins and losses), then harder first. So in-band
    tasks always win; when everything is mastered the least-mastered (hardest) tasks are chosen, and when
    everything is too hard the most winnable (easiest) ones.
    """
    if not rates:
        raise ValueError("choose_tasks needs at least one task's win rate")
    if max_tasks < 1:
        raise ValueError(f"max_tasks = {max_tasks} must be >= 1")
    centre = (low + high) / 2.0

    def rank(tier: int) -> tuple[float, float, int]:
        rate = rates[tier]
        return (max(low - rate, rate - high, 0.0), abs(rate - centre), -tier)

    return sorted(sorted(range(len(rates)), key=rank)[:max_tasks])


def easier_task(rates: Sequence[float], tried: Sequence[int]) -> int | None:
    """The untried task with the highest measured win rate (ties: the lower tier), or None if all were tried."""
    untried = [tier for tier in range(len(rates)) if tier not in set(tried)]
    if not untried:
        return None
    return max(untried, key=lambda tier: (rates[tier], -tier))


# ----------------------------------------------------------------------------------------------- probing


def probe_seeds(seeds: SeedsConfig, config: CurriculumConfig) -> range:
    """The probe deals: a fixed block of training seeds, each played from both seats."""
    return curriculum_probe_seeds(seeds, config.probe_games)


def probe(learner: Player, tasks: Sequence[Task], seeds: SeedsConfig, config: CurriculumConfig,
          progress: bool = False) -> list[dict[str, Any]]:
    """The learner's win rate (draws count half, Wilson 95% interval) on the probe set of every task."""
    schedule = duplicate_schedule(probe_seeds(seeds, config), config.probe_games)
    results = []
    for task in tasks:
        opponent = make_scripted(task.opponent)
        records = play_match(task.game, (learner, opponent), schedule, variant=task.variant, progress=progress)
        rate = summarize_match(records, learner.spec, opponent.spec)["p0_win_rate"]
        results.append({**task.as_dict(), "win_rate": rate["rate"], "low": rate["low"], "high": rate["high"],
                        "games": len(records)})
    return results


def plan_round(learner: Player, game: str, seeds: SeedsConfig, config: CurriculumConfig,
               progress: bool = False) -> tuple[list[Task], dict[str, Any]]:
    """Probe every task and choose the round's tiers; return them and the curriculum record (curriculum.json)."""
    tasks = ladder(config, game)
    probed = probe(learner, tasks, seeds, config, progress=progress)
    rates = [0.0 if row["win_rate"] is None else row["win_rate"] for row in probed]
    for row, rate in zip(probed, rates, strict=True):
        row["status"] = band_status(rate, config.band_low, config.band_high)
    chosen = choose_tasks(rates, config.band_low, config.band_high, config.max_tasks)
    record = {
        "band": [config.band_low, config.band_high],
        "probe_seeds": [probe_seeds(seeds, config).start, probe_seeds(seeds, config).stop],
        "tasks": probed,
        "chosen": chosen,
        "chosen_labels": [tasks[tier].label for tier in chosen],
    }
    return [tasks[tier] for tier in chosen], record
