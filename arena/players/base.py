"""The one interface every player shares: an observation (with its legal actions) in, an action out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.core.hashing import digest_config
from arena.games.base import Observation


@dataclass(frozen=True)
class Decision:
    """A player's answer: the action text, and when known its log-probability and served model id.

    ``error`` is set when the player could not act (endpoint down, model failure); the match runner
    records such a game as errored, counted for neither side. ``reasoning`` (and its tokens) is what a thinking
    player wrote before it chose; it goes into the game record and its reasoning digest.
    """

    action: str
    logprob: float | None = None
    model_id: str | None = None
    error: str | None = None
    reasoning: str | None = None  # a thinking player's reasoning before the move (arena.players.thinking)
    reasoning_tokens: tuple[int, ...] | None = None


class Player(ABC):
    """Maps an observation to a decision. Batched players override ``act_batch``."""

    spec: str
    # Whether it can write a free-text move, as a game that lists no legal actions needs (textarena:ENV_ID).
    writes_text: bool = False

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


def reasoning_digest(decisions: Sequence[dict[str, Any]]) -> str | None:
    """The digest of a game record's reasoning (each decision's seat, reasoning tokens and text), None when no
    decision reasoned (a record without reasoning has no digest, so its bytes are as before)."""
    rows = [[d.get("player"), d.get("reasoning_tokens"), d.get("reasoning")] for d in decisions]
    return digest_config({"reasoning": rows}) if any(r[2] is not None for r in rows) else None
