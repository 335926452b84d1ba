"""TrueSkill ratings: one rated game (Outcome), sequential updates, and the conservative ranking key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import trueskill

from arena.eval.errors import TournamentError


@dataclass(frozen=True)
class Outcome:
    """One completed game for rating: ``score_a`` is 1 (a won), 0.5 (draw) or 0 (b won)."""

    player_a: str
    player_b: str
    score_a: float

    def __post_init__(self) -> None:
        if self.player_a == self.player_b:
            raise TournamentError(f"a rated game needs two different players, got {self.player_a!r} twice")
        if self.score_a not in (0.0, 0.5, 1.0):
            raise TournamentError(f"score_a must be 1, 0.5 or 0, got {self.score_a!r}")


def update_ratings(
    ratings: Mapping[str, trueskill.Rating], outcomes: Iterable[Outcome], *, env: trueskill.TrueSkill
) -> dict[str, trueskill.Rating]:
    """New ratings after applying ``outcomes`` one at a time, in the order given (pure: the input is unchanged).

    Players missing from ``ratings`` start at the environment's prior. Callers fix the order: TrueSkill
    updates are sequential, so the same games in another order give (slightly) different ratings.
    """
    updated = dict(ratings)
    for outcome in outcomes:
        rating_a = updated.get(outcome.player_a, env.create_rating())
        rating_b = updated.get(outcome.player_b, env.create_rating())
        ranks = {1.0: [0, 1], 0.5: [0, 0], 0.0: [1, 0]}[outcome.score_a]
        (new_a,), (new_b,) = env.rate([(rating_a,), (rating_b,)], ranks=ranks)
        updated[outcome.player_a], updated[outcome.player_b] = new_a, new_b
    return updated


def conservative(rating: trueskill.Rating) -> float:
    """mu - 3 sigma: the ranking key (a player is ranked high only once the rating is also certain)."""
    return rating.mu - 3 * rating.sigma
