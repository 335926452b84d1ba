"""`eval arena-nim`: arena's nim game as a verifiers environment (the game logic is arena's)."""

from typing import Literal

import verifiers.v1 as vf
from arena_vf import ArenaChatHarness, ArenaGameConfig, ArenaGameEnv, ArenaGameTask, ArenaGameTaskset


class NimConfig(ArenaGameConfig):
    """``--env.taskset.variant`` and ``--env.taskset.seed-start`` as for every arena game; the game is fixed."""

    game: Literal["nim"] = "nim"


class NimTaskset(ArenaGameTaskset, vf.Taskset[ArenaGameTask, NimConfig]):
    """Task k: nim on seed ``seed_start + k``, role ``player_a`` in seat ``k % 2``."""


__all__ = ["ArenaChatHarness", "ArenaGameEnv", "NimConfig", "NimTaskset"]
