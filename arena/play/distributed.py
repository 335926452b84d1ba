"""Matches split into cohort-aligned tasks, played in this process or on Ray actors, merged in schedule order.

``play_match`` plays a schedule in cohorts of ``COHORT`` games, each from a clean player state, so a task
of whole cohorts gives the same records wherever and in whatever grouping it runs. Placement is read from
the environment (``ARENA_RAY_ADDRESS``), never from params: it cannot change a result, so it is in no pin.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from arena.core.errors import ArenaError
from arena.play.tasks import (
    ADDRESS_ENV,
    COHORT,
    LoadFailure,
    Match,
    PlayerPool,
    Seat,
    Task,
    play_task,
)

__all__ = ["ADDRESS_ENV", "COHORT", "LoadFailure", "Match", "PlayerPool", "Seat", "Task", "merge", "play_all",
           "play_here", "play_matches", "play_task", "ray_address", "split"]

# Tasks per worker when a run is split: enough to even out uneven tasks, few enough to keep overhead small.
TASKS_PER_WORKER = 4


def split(matches: Sequence[Match], workers: int) -> list[Task]:
    """Every match cut at cohort boundaries into tasks of equal whole cohorts, about TASKS_PER_WORKER a worker."""
    cohorts = sum(math.ceil(len(m.schedule) / COHORT) for m in matches)
    size = COHORT * max(1, math.ceil(cohorts / (TASKS_PER_WORKER * max(workers, 1))))
    cwd = os.getcwd()
    return [Task(i, start, m.game_id, m.seats, m.schedule[start : start + size], m.variant, cwd)
            for i, m in enumerate(matches) for start in range(0, len(m.schedule), size)]


def merge(matches: Sequence[Match], tasks: Sequence[Task],
          results: Sequence[list[dict[str, Any]] | LoadFailure]) -> list[list[dict[str, Any]] | LoadFailure]:
    """Per match, its tasks' records in schedule order (or its first load failure): placement never enters."""
    merged: list[list[dict[str, Any]] | LoadFailure] = [[] for _ in matches]
    for task, result in sorted(zip(tasks, results, strict=True), key=lambda pair: (pair[0].match, pair[0].start)):
        done = merged[task.match]
        if isinstance(result, LoadFailure) and not isinstance(done, LoadFailure):
            merged[task.match] = result
        elif not isinstance(done, LoadFailure):
            done.extend(result)
    return merged


def ray_address() -> str | None:
    """Where tasks run: ``$ARENA_RAY_ADDRESS`` (``local``, ``auto`` or a cluster's address), None for this process."""
    return os.environ.get(ADDRESS_ENV, "").strip() or None


def play_here(matches: Sequence[Match], pool: PlayerPool,
              label: str = "games") -> list[list[dict[str, Any]] | LoadFailure]:
    """Every match's records in schedule order, played in this process by ``pool``'s players, under one progress
    bar on stderr named ``label`` (shown only on a terminal)."""
    tasks = split(matches, 1)
    with tqdm(total=sum(len(task.slots) for task in tasks), desc=label, unit="game", file=sys.stderr,
              disable=None, leave=False) as bar:
        return merge(matches, tasks, [play_task(pool, task, bar) for task in tasks])


def play_all(matches: Sequence[Match], pool: PlayerPool | None = None,
             label: str = "games") -> list[list[dict[str, Any]] | LoadFailure]:
    """Every match's records in schedule order, or its load failure; on Ray when ``$ARENA_RAY_ADDRESS`` is set.

    ``pool`` holds players this process already built (used by the in-process path only).
    """
    address = ray_address()
    if address is None:
        return play_here(matches, pool or PlayerPool(), label)
    from arena.play.rayexec import ray_workers

    workers = ray_workers(address)
    tasks = split(matches, workers.size)
    return merge(matches, tasks, workers.run(tasks))


def play_matches(matches: Sequence[Match], pool: PlayerPool | None = None,
                 label: str = "games") -> list[list[dict[str, Any]]]:
    """``play_all``, with a seat that failed to build raised as the ArenaError it gave."""
    played = play_all(matches, pool, label)
    failed = next((result for result in played if isinstance(result, LoadFailure)), None)
    if failed is not None:
        raise ArenaError(failed.reason)
    return [result for result in played if not isinstance(result, LoadFailure)]
