"""Errors of tournaments and score-card archives: unusable players, records or cards, and players that fail to load."""

from __future__ import annotations

from arena.core.errors import ArenaError


class TournamentError(ArenaError):
    """A tournament or score-card archive cannot be used as given (bad players, records, or cards)."""


class PlayerLoadError(ArenaError):
    """Raised by a ``play`` callable when one player cannot be loaded or cannot play at all (names the spec)."""

    def __init__(self, spec: str, reason: str) -> None:
        super().__init__(f"player {spec!r} failed to load: {reason}")
        self.spec = spec
        self.reason = reason
