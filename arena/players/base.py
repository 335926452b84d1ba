"""The one interface every player shares: an observation (with its legal actions) in, an action out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.games.base import Observation


@dataclass(frozen=True)
class Decision:
    """A player's answer: the action text, and when known its log-probability and served model id.

    ``error`` is set when the player could not act (endpoint down, model failure); the match runner
    records such a game as errored, counted for neither side.
    """

    action: str
    logprob: float | None = None
    model_id: str | None = None
    error: str | None = None


class Player(ABC):
    """Maps an observation to a decision. Batched players override ``act_batch``."""

    spec: str

    @abstractmethod
    def act(self, observation: Observation) -> Decision:
        """Choose an action for one observation."""

    def act_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        """Choose actions for many observations (one forward pass for model players)."""
        return [self.act(observation) for observation in observations]

    def begin_match(self) -> None:
        """Called before a match's first move: a player that keeps state across a game's turns drops it here."""
        return None

    @abstractmethod
    def pin(self) -> dict[str, Any]:
        """What this player's results are pinned to (model/code digest, quant, config hash)."""
