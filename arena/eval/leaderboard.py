"""The leaderboard, derived entirely from score cards: TrueSkill ratings, head-to-head records and per-pair results.

Every number comes from the cards alone (and the tournaments' exclusions), so the archive is the single
source and the leaderboard is never edited by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trueskill

from arena.core.artifacts import atomic_write_json
from arena.core.hashing import canonical_json, digest_config
from arena.eval.config import EvalConfig
from arena.eval.errors import TournamentError
from arena.eval.ratings import Outcome, conservative, update_ratings
from arena.eval.scorecards import first_error, verify_card
from arena.games.variants import game_label
from arena.play.stats import game_score, wilson_interval

LEADERBOARD_SCHEMA = "arena.leaderboard/1"
# Leaderboard numbers are rounded to this many decimals: readable, and a last-bit difference in a
# libm function between machines almost never reaches the rendered value.
FLOAT_DECIMALS = 6

Pair = tuple[str, str]
RatedGame = tuple[str, Outcome, Mapping[str, Any]]


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, FLOAT_DECIMALS) + 0.0
    if isinstance(value, Mapping):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(item) for item in value]
    return value


def _single_config(cards: Sequence[Mapping[str, Any]]) -> EvalConfig:
    hashes: dict[str, int] = {}
    for card in cards:
        hashes[card["eval_config_hash"]] = hashes.get(card["eval_config_hash"], 0) + 1
    if len(hashes) != 1:
        listing = ", ".join(f"{h[:12]} ({n} cards)" for h, n in sorted(hashes.items()))
        raise TournamentError(f"the archive mixes evaluation configs {listing}; build one leaderboard per eval config")
    return EvalConfig.from_dict(cards[0]["eval_config"])


def _unique_cards(cards: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    by_digest = {card["digest"]: card for card in cards}
    seen: dict[tuple[str, tuple[str, ...]], str] = {}
    for digest in sorted(by_digest):
        card = by_digest[digest]
        key = (game_label(card["game_id"], card["variant"]), tuple(sorted(p["spec"] for p in card["players"])))
        if key in seen:
            raise TournamentError(
                f"two different cards for {key[1]} on {key[0]}: {seen[key][:12]} and {digest[:12]}; "
                f"keep one archive per evaluation run"
            )
        seen[key] = digest
    return [by_digest[digest] for digest in sorted(by_digest)]


def _pins(cards: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    pins: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    for card in cards:
        for player in card["players"]:
            spec, pin = player["spec"], player["pin"]
            if spec in pins and canonical_json(pins[spec]) != canonical_json(pin):
                raise TournamentError(
                    f"player {spec!r} has different pins in cards {origin[spec][:12]} and {card['digest'][:12]}: "
                    f"the same spec names two different players; give them distinct specs"
                )
            pins.setdefault(spec, dict(pin))
            origin.setdefault(spec, card["digest"])
    return pins


@dataclass
class _Tally:
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    errored: int = 0

    def add(self, score: float) -> None:
        self.games += 1
        self.wins += score == 1.0
        self.draws += score == 0.5
        self.losses += score == 0.0

    def as_dict(self) -> dict[str, Any]:
        if self.games:
            rate, low, high = wilson_interval(self.wins + 0.5 * self.draws, self.games)
            win_rate: dict[str, float | None] = {"rate": rate, "low": low, "high": high}
        else:
            win_rate = {"rate": None, "low": None, "high": None}
        return {
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "errored": self.errored,
            "win_rate": win_rate,
        }


@dataclass
class _Tallies:
    """Each player's record: overall, per game, and against each opponent (overall and per game)."""

    totals: dict[str, _Tally]
    per_game: dict[str, dict[str, _Tally]]
    head: dict[Pair, _Tally] = field(default_factory=dict)
    head_by_game: dict[str, dict[Pair, _Tally]] = field(default_factory=dict)

    @classmethod
    def start(cls, players: Iterable[str], game_order: Sequence[str]) -> _Tallies:
        return cls({spec: _Tally() for spec in players}, {label: {} for label in game_order}, {},
                   {label: {} for label in game_order})

    def add_errored(self, label: str, me: str, other: str, errored: int) -> None:
        self.head.setdefault((me, other), _Tally()).errored += errored
        self.head_by_game[label].setdefault((me, other), _Tally()).errored += errored
        self.per_game[label].setdefault(me, _Tally()).errored += errored
        self.totals[me].errored += errored

    def add_score(self, label: str, me: str, other: str, score: float) -> None:
        for tally in (self.totals[me], self.per_game[label][me], self.head[(me, other)],
                      self.head_by_game[label][(me, other)]):
            tally.add(score)


def _tally(cards: Sequence[Mapping[str, Any]], games: Sequence[RatedGame], players: Iterable[str],
           game_order: Sequence[str]) -> _Tallies:
    """Errored games from each card's summary (for both sides), then every rated game from both sides."""
    tallies = _Tallies.start(players, game_order)
    for card in cards:
        label = game_label(card["game_id"], card["variant"])
        a, b = (player["spec"] for player in card["players"])
        for me, other in ((a, b), (b, a)):
            tallies.add_errored(label, me, other, card["summary"]["errored"])
    for label, outcome, _ in games:
        tallies.add_score(label, outcome.player_a, outcome.player_b, outcome.score_a)
        tallies.add_score(label, outcome.player_b, outcome.player_a, 1.0 - outcome.score_a)
    return tallies


def _rated_games(cards: Sequence[Mapping[str, Any]], game_order: Sequence[str]) -> list[RatedGame]:
    """Completed games as (game label, outcome seat0 vs seat1), in rating order: seed, game, seats, card."""
    keyed = []
    for card in cards:
        label = game_label(card["game_id"], card["variant"])
        for index, row in enumerate(card["outcomes"]):
            if row.get("errored"):
                continue
            outcome = Outcome(row["players"][0], row["players"][1], game_score(row["rewards"], 0))
            sort_key = (row["seed"], game_order.index(label), tuple(row["players"]), card["digest"], index)
            keyed.append((sort_key, label, outcome, card))
    keyed.sort(key=lambda item: item[0])
    return [(label, outcome, card) for _, label, outcome, card in keyed]


def _rating_rows(ratings: Mapping[str, trueskill.Rating], tallies: Mapping[str, _Tally]) -> list[dict[str, Any]]:
    rows = [
        {
            "player": spec,
            "mu": rating.mu,
            "sigma": rating.sigma,
            "conservative": conservative(rating),
            **tallies[spec].as_dict(),
        }
        for spec, rating in ratings.items()
    ]
    rows.sort(key=lambda row: (-row["conservative"], row["player"]))
    return [{"rank": rank, **row} for rank, row in enumerate(rows, start=1)]


def _ranking(ratings: Mapping[str, trueskill.Rating], totals: Mapping[str, _Tally],
             pins: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The overall rows (rounded) with each player's pin and the pin's digest."""
    rows = []
    for row in _rating_rows(ratings, totals):
        pin = pins[row["player"]]
        rows.append({**_rounded({**row, "pin_digest": digest_config(pin)}), "pin": pin})
    return rows


def _matrix(order: Sequence[str], cells: Mapping[Pair, _Tally]) -> list[list[dict[str, Any] | None]]:
    return [[cells[(row, col)].as_dict() if (row, col) in cells else None for col in order] for row in order]


def _head_to_head(order: Sequence[str], tallies: _Tallies, game_order: Sequence[str]) -> dict[str, Any]:
    return {
        "players": list(order),
        "overall": _rounded(_matrix(order, tallies.head)),
        "by_game": {label: _rounded(_matrix(order, tallies.head_by_game[label])) for label in game_order},
    }


def _unrated(cards: Sequence[Mapping[str, Any]], pins: Iterable[str], rated: Mapping[str, Any],
             excluded: Mapping[str, str]) -> dict[str, str]:
    """Players in the cards without a rating (no completed game), and the excluded ones, with reasons."""
    unrated = {
        spec: f"no game completed without error (first error: {first_error(cards, spec)})"
        for spec in pins
        if spec not in rated
    }
    unrated.update({spec: reason for spec, reason in excluded.items() if spec not in rated})
    return unrated


def _pair_row(card: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "game": game_label(card["game_id"], card["variant"]),
        "p0": card["players"][0]["spec"],
        "p1": card["players"][1]["spec"],
        "card": card["digest"],
        **_rounded(card["summary"]),
    }


def _pairs(cards: Sequence[Mapping[str, Any]], game_order: Sequence[str]) -> list[dict[str, Any]]:
    return sorted((_pair_row(card) for card in cards),
                  key=lambda pair: (game_order.index(pair["game"]), pair["p0"], pair["p1"]))


def _checked(cards: Sequence[Mapping[str, Any]], verified: bool) -> tuple[EvalConfig, list[Mapping[str, Any]]]:
    """The archive's one eval config and its cards (each verified unless ``verified`` says the caller did,
    duplicates kept once, sorted by digest)."""
    if not cards:
        raise TournamentError("the score-card archive is empty: run a tournament before building a leaderboard")
    for card in () if verified else cards:
        verify_card(card, f"card {card.get('digest', '?')[:12]}")
    return _single_config(cards), _unique_cards(cards)


def build_leaderboard(
    cards: Sequence[Mapping[str, Any]], *, excluded: Mapping[str, str] | None = None, verified: bool = False
) -> dict[str, Any]:
    """The leaderboard, derived entirely from score cards (and the tournaments' exclusions).

    Shape: ``schema``, ``eval_config`` and ``eval_config_hash``, ``games`` (labels in config order),
    ``cards`` (digests), ``ranking`` (rank, player, pin, pin_digest, mu, sigma, conservative = mu - 3
    sigma, games, wins, draws, losses, errored, win_rate {rate, low, high}; sorted by conservative),
    ``ratings_by_game`` {label: rows like ranking without pins}, ``head_to_head`` {players (ranking
    order), overall, by_game {label}: matrices whose cell [i][j] is player i's record against
    player j, or null}, ``pairs`` (each card's summary, by game then players) and ``unrated``
    [{player, reason}].
    TrueSkill processes completed games ordered by (seed, game, seats); errored games are skipped. ``verified``:
    the caller verified every card already (``load_archive`` does), so they are not verified twice.
    """
    config, cards = _checked(cards, verified)
    pins = _pins(cards)
    env = config.trueskill_env()
    game_order = [game.label for game in config.games]
    games = _rated_games(cards, game_order)
    overall = update_ratings({}, (outcome for _, outcome, _ in games), env=env)
    unrated = _unrated(cards, pins, overall, dict(excluded or {}))
    if not overall:
        raise TournamentError(f"no player completed a game without error; unrated: {unrated}")
    tallies = _tally(cards, games, pins, game_order)
    ranking = _ranking(overall, tallies.totals, pins)
    # One game: its ratings are the overall ones (the same outcomes in the same order), not computed twice.
    by_game = {label: overall if len(game_order) == 1 else update_ratings({}, (o for g, o, _ in games if g == label),
                                                                          env=env) for label in game_order}
    return {
        "schema": LEADERBOARD_SCHEMA,
        "eval_config": config.to_dict(),
        "eval_config_hash": config.digest(),
        "games": game_order,
        "cards": [card["digest"] for card in cards],
        "ranking": ranking,
        "ratings_by_game": {label: _rounded(_rating_rows(by_game[label], tallies.per_game[label]))
                            for label in game_order},
        "head_to_head": _head_to_head([row["player"] for row in ranking], tallies, game_order),
        "pairs": _pairs(cards, game_order),
        "unrated": [{"player": spec, "reason": reason} for spec, reason in sorted(unrated.items())],
    }


def write_leaderboard(path: str | Path, leaderboard: Mapping[str, Any]) -> None:
    """Write ``leaderboard.json`` atomically as stable JSON (sorted keys, no timestamps)."""
    atomic_write_json(path, leaderboard)
