"""`eval arena-leduc`: arena's leduc game as a verifiers environment (the game logic is arena's)."""

from typing import Literal

import verifiers.v1 as vf
from arena_vf import ArenaChatHarness, ArenaGameConfig, ArenaGameEnv, ArenaGameTask, ArenaGameTaskset


class LeducConfig(ArenaGameConfig):
    """``--env.taskset.variant`` and ``--env.taskset.seed-start`` as for every arena game; the game is fixed."""

    game: Literal["leduc"] = "leduc"


class LeducTaskset(ArenaGameTaskset, vf.Taskset[ArenaGameTask, LeducConfig]):
    """Task k: leduc on seed ``seed_start + k``, role ``player_a`` in seat ``k % 2``."""


__all__ = ["ArenaChatHarness", "ArenaGameEnv", "LeducConfig", "LeducTaskset"]
