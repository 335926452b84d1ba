"""`eval arena-kuhn`: arena's kuhn game as a verifiers environment (the game logic is arena's)."""

from typing import Literal

import verifiers.v1 as vf
from arena_vf import ArenaChatHarness, ArenaGameConfig, ArenaGameEnv, ArenaGameTask, ArenaGameTaskset


class KuhnConfig(ArenaGameConfig):
    """``--env.taskset.variant`` and ``--env.taskset.seed-start`` as for every arena game; the game is fixed."""

    game: Literal["kuhn"] = "kuhn"


class KuhnTaskset(ArenaGameTaskset, vf.Taskset[ArenaGameTask, KuhnConfig]):
    """Task k: kuhn on seed ``seed_start + k``, role ``player_a`` in seat ``k % 2``."""


__all__ = ["ArenaChatHarness", "ArenaGameEnv", "KuhnConfig", "KuhnTaskset"]
