"""The unit of distributed play: seats, matches, tasks of whole cohorts, the players one process built, one task played.

Shared by the in-process path (``distributed.py``) and the Ray actors (``rayexec.py``), so neither imports the other
for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from arena.core.errors import ArenaError
from arena.play.match import Slot, play_match
from arena.players.base import Player
from arena.players.build import PlayerConfigs

# Games one lockstep cohort holds: play_match's default concurrency, and the unit a task is made of.
COHORT = 64
ADDRESS_ENV = "ARENA_RAY_ADDRESS"


@dataclass(frozen=True)
class Seat:
    """How any process builds a player: its spec and the configs it is made with (picklable, hashable)."""

    spec: str
    configs: PlayerConfigs = field(default_factory=PlayerConfigs)


@dataclass(frozen=True)
class Match:
    """One match to play: a game, its two seats (equal seats are one player, as in self-play), its schedule."""

    game_id: str
    seats: tuple[Seat, Seat]
    schedule: tuple[Slot, ...]
    variant: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Task:
    """Whole cohorts of one match: its schedule's slots ``start`` to ``start + len(slots)``.

    ``cwd`` is the directory the specs' relative model paths are relative to (the driver's), wherever it runs.
    """

    match: int
    start: int
    game_id: str
    seats: tuple[Seat, Seat]
    slots: tuple[Slot, ...]
    variant: Mapping[str, Any] | None = None
    cwd: str = "."


@dataclass(frozen=True)
class LoadFailure:
    """A seat's player could not be built (missing model, unreachable endpoint): the reason, not a traceback."""

    spec: str
    reason: str


class PlayerPool:
    """The players one process has built, one per seat; a seat that failed to build fails again without retrying."""

    def __init__(self) -> None:
        self._players: dict[Seat, Player | LoadFailure] = {}

    def get(self, seat: Seat) -> Player | LoadFailure:
        if seat not in self._players:
            try:
                self._players[seat] = seat.configs.make(seat.spec)
            except ArenaError as error:
                self._players[seat] = LoadFailure(seat.spec, str(error))
        return self._players[seat]

    def add(self, seat: Seat, player: Player) -> None:
        """Play ``seat`` with a player built elsewhere (a policy being trained, whose weights are not on disk)."""
        self._players[seat] = player

    def player(self, seat: Seat) -> Player:
        """The seat's player, or the ArenaError its build raised."""
        got = self.get(seat)
        if isinstance(got, LoadFailure):
            raise ArenaError(got.reason)
        return got


def play_task(pool: PlayerPool, task: Task, bar: tqdm | None = None) -> list[dict[str, Any]] | LoadFailure:
    """A task's records (its cohorts, in order), or the first of its seats that failed to build; ``bar`` (if
    any) advances a game at a time."""
    players = tuple(pool.get(seat) for seat in task.seats)
    failed = [p for p in players if isinstance(p, LoadFailure)]
    if failed:
        if bar is not None:
            bar.update(len(task.slots))
        return failed[0]
    return play_match(task.game_id, players, task.slots, variant=task.variant, concurrency=COHORT, progress=False,
                      bar=bar)
