"""Round-robin tournaments: every pair of players on every configured game, each pair x game one score card.

``run_tournament`` plays the pairs through an injected ``play`` callable and leaves out players that
cannot load or complete no game; ``arena.eval.scorecards`` stores the cards and
``arena.eval.leaderboard`` derives every leaderboard number from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.core.code import producing_code
from arena.core.seeds import SeedRangeLike, check_seed_ranges
from arena.eval.config import EvalConfig, GameEntry
from arena.eval.errors import PlayerLoadError, TournamentError
from arena.eval.scorecards import first_error, make_scorecard

# play(game_id, variant, spec_a, spec_b, seeds) -> one record per seed, spec_a in seat k % 2 for the k-th game.
PlayFn = Callable[[str, Mapping[str, Any], str, str, Sequence[int]], list[dict[str, Any]]]


@dataclass(frozen=True)
class TournamentResult:
    """The cards of every rated pair x game, and the players left out with the reason."""

    cards: list[dict[str, Any]]
    excluded: dict[str, str]


def _completed_games(cards: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for card in cards:
        done = card["summary"]["games"] - card["summary"]["errored"]
        for player in card["players"]:
            counts[player["spec"]] = counts.get(player["spec"], 0) + done
    return counts


def _check_players(players: Sequence[str]) -> None:
    if len(set(players)) != len(players):
        raise TournamentError(f"players listed twice: {sorted({p for p in players if players.count(p) > 1})}")
    if len(players) < 2 or not all(isinstance(p, str) and p for p in players):
        raise TournamentError(f"a tournament needs at least two player specs (non-empty strings), got {players!r}")


def _without(cards: Iterable[dict[str, Any]], excluded: Mapping[str, str]) -> list[dict[str, Any]]:
    return [card for card in cards if not any(p["spec"] in excluded for p in card["players"])]


def pairings(config: EvalConfig, players: Sequence[str]) -> list[tuple[str, str, GameEntry]]:
    """Every pair on every game, in the order a round robin plays them: player i is p0 against later players."""
    return [(spec_a, spec_b, game) for i, spec_a in enumerate(players) for spec_b in players[i + 1 :]
            for game in config.games]


def _play_pairs(config: EvalConfig, players: Sequence[str], play: PlayFn, code: Mapping[str, str],
                excluded: dict[str, str]) -> list[dict[str, Any]]:
    """Every pairing, in order; a PlayerLoadError excludes its player (into ``excluded``)."""
    seeds = list(config.seeds)
    cards: list[dict[str, Any]] = []
    for spec_a, spec_b, game in pairings(config, players):
        if spec_a in excluded or spec_b in excluded:
            continue
        try:
            records = play(game.game_id, dict(game.variant), spec_a, spec_b, seeds)
        except PlayerLoadError as error:
            if error.spec not in (spec_a, spec_b):
                raise TournamentError(
                    f"play raised PlayerLoadError for {error.spec!r} while playing {spec_a!r} vs {spec_b!r}"
                ) from error
            excluded[error.spec] = f"failed to load or play: {error.reason}"
            continue
        cards.append(make_scorecard(config, game, spec_a, spec_b, records, code=code))
    return cards


def run_tournament(
    config: EvalConfig,
    players: Sequence[str],
    play: PlayFn,
    *,
    reserved_seeds: Iterable[SeedRangeLike] = (),
    code: Mapping[str, str] | None = None,
) -> TournamentResult:
    """Round robin: every pair on every game on the held-out seeds, seats swapped by ``play``.

    A player whose ``play`` raises ``PlayerLoadError``, or that completes no game without error, is
    excluded: its cards are dropped (it is never scored on a subset of the table) and the reason is
    returned. Pairs are played in the order the players are listed; player i is p0 against later players.
    Every card records ``code`` (default: ``producing_code()``, this process's entry script and closure).
    """
    players = list(players)
    _check_players(players)
    check_seed_ranges(config.seeds, reserved_seeds)
    excluded: dict[str, str] = {}
    cards = _play_pairs(config, players, play, code if code is not None else producing_code(), excluded)
    cards = _without(cards, excluded)
    completed = _completed_games(cards)
    for spec in players:
        if spec not in excluded and completed.get(spec, 0) == 0:
            excluded[spec] = f"no game completed without error (first error: {first_error(cards, spec)})"
    cards = _without(cards, excluded)
    return TournamentResult(cards=cards, excluded=dict(sorted(excluded.items())))
