"""Round-robin tournaments: score cards pinned to both players, TrueSkill ratings, and the leaderboard built from them.

Flow: ``run_tournament`` plays every pair of players on every configured game (through an injected
``play`` callable) and turns each pair x game into a score card; ``write_scorecards`` stores cards in
an archive directory; ``load_archive`` reads and verifies them; ``build_leaderboard`` derives every
number on the leaderboard (ratings, head-to-head, per-pair results) from the cards alone, so the
archive is the single source and the leaderboard is never edited by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trueskill

from arena.core.artifacts import atomic_dir, atomic_write_json, dump_json
from arena.core.errors import ArenaError
from arena.core.hashing import canonical_json, digest_config
from arena.core.seeds import SeedRangeLike, check_seed_ranges, format_range
from arena.eval.config import EvalConfig, GameEntry
from arena.games.variants import game_label
from arena.play.stats import game_score, seat_assignments, summarize_outcomes, wilson_interval

SCORECARD_SCHEMA = "arena.scorecard/1"
LEADERBOARD_SCHEMA = "arena.leaderboard/1"
CARD_SUFFIX = ".card.json"
EXCLUDED_FILE = "excluded.json"
# Leaderboard numbers are rounded to this many decimals: readable, and a last-bit difference in a
# libm function between machines almost never reaches the rendered value.
FLOAT_DECIMALS = 6

# play(game_id, variant, spec_a, spec_b, seeds) -> one record per seed, spec_a in seat k % 2 for the k-th game.
PlayFn = Callable[[str, Mapping[str, Any], str, str, Sequence[int]], list[dict[str, Any]]]


class TournamentError(ArenaError):
    """A tournament or score-card archive cannot be used as given (bad players, records, or cards)."""


class PlayerLoadError(ArenaError):
    """Raised by a ``play`` callable when one player cannot be loaded or cannot play at all (names the spec)."""

    def __init__(self, spec: str, reason: str) -> None:
        super().__init__(f"player {spec!r} failed to load: {reason}")
        self.spec = spec
        self.reason = reason


# --------------------------------------------------------------------------------------------- config


# --------------------------------------------------------------------------------------------- ratings


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


# --------------------------------------------------------------------------------------------- score cards

_OUTCOME_KEYS = (
    "seed",
    "players",
    "rewards",
    "round_rewards",
    "invalid_moves",
    "errored",
    "error",
    "transcript_digest",
)


def card_digest(card: Mapping[str, Any]) -> str:
    """Digest of a card's content without its own ``digest`` field."""
    return digest_config({key: value for key, value in card.items() if key != "digest"})


def _pin_for(records: Sequence[Mapping[str, Any]], seats: Sequence[int], spec: str) -> dict[str, Any]:
    """The player's pin, identical in every completed game; errored games may lack one (endpoint down)."""
    pins = []
    for record, seat in zip(records, seats, strict=True):
        pin_list = record.get("pins")
        pin = pin_list[seat] if isinstance(pin_list, Sequence) and len(pin_list) == 2 else None
        if isinstance(pin, Mapping):
            pins.append((bool(record.get("errored")), dict(pin)))
        elif not record.get("errored"):
            raise TournamentError(f"record seed {record.get('seed')!r} has no pin dict for seat {seat}: {pin_list!r}")
    completed = [pin for errored, pin in pins if not errored]
    distinct = sorted({canonical_json(pin) for pin in completed})
    if len(distinct) > 1:
        raise TournamentError(
            f"player {spec!r} changed pin within one match ({len(distinct)} distinct pins, e.g. {distinct[:2]}); "
            f"a score must be pinned to one model/code version"
        )
    # A match with no completed game scores nobody (its players are excluded); keep whatever pin it reported.
    return completed[0] if completed else (pins[0][1] if pins else {})


def make_scorecard(
    config: EvalConfig, game: GameEntry, spec_a: str, spec_b: str, records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The score card of one pair on one game: both pins, the conditions, the summary and every outcome."""
    _check_records(records, game, spec_a, spec_b, config.seeds)
    seats = seat_assignments(records, spec_a, spec_b)
    outcomes = [{key: record.get(key) for key in _OUTCOME_KEYS} for record in records]
    card: dict[str, Any] = {
        "schema": SCORECARD_SCHEMA,
        "game_id": game.game_id,
        "variant": dict(game.variant),
        "eval_config": config.to_dict(),
        "eval_config_hash": config.digest(),
        "seeds": {"start": config.seeds.start, "stop": config.seeds.stop},
        "players": [
            {"spec": spec_a, "pin": _pin_for(records, [s[0] for s in seats], spec_a)},
            {"spec": spec_b, "pin": _pin_for(records, [s[1] for s in seats], spec_b)},
        ],
        "summary": summarize_outcomes(game.game_id, outcomes, spec_a, spec_b),
        "outcomes": outcomes,
    }
    card["digest"] = card_digest(card)
    return card


def _check_records(
    records: Sequence[Mapping[str, Any]], game: GameEntry, spec_a: str, spec_b: str, seeds: range
) -> None:
    where = f"{spec_a!r} vs {spec_b!r} on {game.label}"
    if spec_a == spec_b:
        raise TournamentError(f"a score card needs two different players, got {spec_a!r} twice")
    if len(records) != len(seeds):
        raise TournamentError(
            f"play returned {len(records)} records for {len(seeds)} seeds ({where}); expected one per seed"
        )
    got_seeds = [record.get("seed") for record in records]
    if not all(isinstance(seed, int) for seed in got_seeds) or sorted(got_seeds) != list(seeds):
        raise TournamentError(f"play returned seeds other than the evaluation seeds {format_range(seeds)} ({where})")
    if not all(isinstance(r.get("players"), Sequence) and len(r["players"]) == 2 for r in records):
        raise TournamentError(f"play returned a record without a two-seat players list ({where})")
    # Seats must alternate so neither player keeps the first-mover advantage: A opens in half the games.
    a_first = sum(record["players"][0] == spec_a for record in records)
    if abs(2 * a_first - len(records)) > 1:
        raise TournamentError(
            f"{spec_a!r} sat in seat 0 in {a_first} of {len(records)} games ({where}); seats must swap every game"
        )
    # Only the game id is checked: a runner may record the variant with its defaults filled in.
    wrong = sorted({str(record.get("game_id")) for record in records} - {game.game_id})
    if wrong:
        raise TournamentError(f"play returned records for game(s) {wrong} when {where} was asked for")


def verify_card(card: Mapping[str, Any], source: str = "card") -> None:
    """Raise when a card is malformed, its digest is stale, or its summary does not follow from its outcomes."""
    if card.get("schema") != SCORECARD_SCHEMA:
        raise TournamentError(f"{source}: schema {card.get('schema')!r} is not {SCORECARD_SCHEMA!r}")
    if card.get("digest") != card_digest(card):
        raise TournamentError(f"{source}: digest does not match its content (edited by hand?); regenerate the card")
    config = EvalConfig.from_dict(card["eval_config"])
    if config.to_dict() != card["eval_config"] or config.digest() != card["eval_config_hash"]:
        raise TournamentError(f"{source}: eval_config_hash does not match its eval_config")
    if game_label(card["game_id"], card["variant"]) not in [game.label for game in config.games]:
        raise TournamentError(f"{source}: game {card['game_id']!r} {card['variant']} is not in its eval config")
    if card["seeds"] != config.to_dict()["seeds"]:
        raise TournamentError(f"{source}: seeds {card['seeds']} differ from its eval config's")
    specs = [player["spec"] for player in card["players"]]
    if card["summary"] != summarize_outcomes(card["game_id"], card["outcomes"], *specs):
        raise TournamentError(f"{source}: summary does not follow from its outcomes; regenerate the card")


def write_scorecards(
    directory: str | Path, cards: Sequence[Mapping[str, Any]], *, excluded: Mapping[str, str] | None = None
) -> list[Path]:
    """Write the cards (and the excluded players with reasons) as one archive directory, atomically.

    Files are named ``<game_id>-<digest prefix>.card.json``; the whole directory is replaced, so a
    rerun never leaves cards from an earlier run behind.
    """
    directory = Path(directory)
    names: dict[str, str] = {}
    for card in cards:
        verify_card(card)
        name = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', card['game_id'])}-{card['digest'][:24]}{CARD_SUFFIX}"
        if name in names:
            raise TournamentError(f"card {card['digest']} is listed twice; write each card once")
        names[name] = dump_json(card)
    with atomic_dir(directory) as tmp:
        for name, text in sorted(names.items()):
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / EXCLUDED_FILE).write_text(dump_json(dict(excluded or {})), encoding="utf-8")
    return [directory / name for name in sorted(names)]


def load_archive(dirs: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every card under the archive directories, verified, duplicates (same digest) kept once, sorted by digest."""
    cards: dict[str, dict[str, Any]] = {}
    for directory in dirs:
        directory = Path(directory)
        if not directory.is_dir():
            raise TournamentError(f"score-card archive {directory} is not a directory; run the tournament first")
        for path in sorted(directory.glob(f"*{CARD_SUFFIX}")):
            card = json.loads(path.read_text(encoding="utf-8"))
            verify_card(card, str(path))
            cards[card["digest"]] = card
    return [cards[digest] for digest in sorted(cards)]


def load_excluded(dirs: Iterable[str | Path]) -> dict[str, str]:
    """Players the archived tournaments left out, with their reasons (reasons from several dirs are joined)."""
    reasons: dict[str, set[str]] = {}
    for directory in dirs:
        path = Path(directory) / EXCLUDED_FILE
        if path.exists():
            for spec, reason in json.loads(path.read_text(encoding="utf-8")).items():
                reasons.setdefault(spec, set()).add(reason)
    return {spec: "; ".join(sorted(found)) for spec, found in sorted(reasons.items())}


# --------------------------------------------------------------------------------------------- tournament


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


def _first_error(cards: Iterable[Mapping[str, Any]], spec: str) -> str:
    for card in cards:
        if spec in (player["spec"] for player in card["players"]):
            for outcome in card["outcomes"]:
                if outcome.get("error"):
                    return str(outcome["error"])
    return "no error message"


def run_tournament(
    config: EvalConfig, players: Sequence[str], play: PlayFn, *, reserved_seeds: Iterable[SeedRangeLike] = ()
) -> TournamentResult:
    """Round robin: every pair on every game on the held-out seeds, seats swapped by ``play``.

    A player whose ``play`` raises ``PlayerLoadError``, or that completes no game without error, is
    excluded: its cards are dropped (it is never scored on a subset of the table) and the reason is
    returned. Pairs are played in the order the players are listed; player i is p0 against later players.
    """
    players = list(players)
    if len(set(players)) != len(players):
        raise TournamentError(f"players listed twice: {sorted({p for p in players if players.count(p) > 1})}")
    if len(players) < 2 or not all(isinstance(p, str) and p for p in players):
        raise TournamentError(f"a tournament needs at least two player specs (non-empty strings), got {players!r}")
    check_seed_ranges(config.seeds, reserved_seeds)
    seeds = list(config.seeds)
    excluded: dict[str, str] = {}
    cards: list[dict[str, Any]] = []
    for i, spec_a in enumerate(players):
        for spec_b in players[i + 1 :]:
            for game in config.games:
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
                cards.append(make_scorecard(config, game, spec_a, spec_b, records))
    cards = [card for card in cards if not any(p["spec"] in excluded for p in card["players"])]
    completed = _completed_games(cards)
    for spec in players:
        if spec not in excluded and completed.get(spec, 0) == 0:
            excluded[spec] = f"no game completed without error (first error: {_first_error(cards, spec)})"
    cards = [card for card in cards if not any(p["spec"] in excluded for p in card["players"])]
    return TournamentResult(cards=cards, excluded=dict(sorted(excluded.items())))


# --------------------------------------------------------------------------------------------- leaderboard


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


def _rated_games(
    cards: Sequence[Mapping[str, Any]], game_order: Sequence[str]
) -> list[tuple[str, Outcome, Mapping[str, Any]]]:
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


def _matrix(order: Sequence[str], cells: Mapping[tuple[str, str], _Tally]) -> list[list[dict[str, Any] | None]]:
    return [[cells[(row, col)].as_dict() if (row, col) in cells else None for col in order] for row in order]


def build_leaderboard(
    cards: Sequence[Mapping[str, Any]], *, excluded: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The leaderboard, derived entirely from score cards (and the tournaments' exclusions).

    Shape: ``schema``, ``eval_config`` and ``eval_config_hash``, ``games`` (labels in config order),
    ``cards`` (digests), ``ranking`` (rank, player, pin, pin_digest, mu, sigma, conservative = mu - 3
    sigma, games, wins, draws, losses, errored, win_rate {rate, low, high}; sorted by conservative),
    ``ratings_by_game`` {label: rows like ranking without pins}, ``head_to_head`` {players (ranking
    order), overall, by_game {label}: matrices whose cell [i][j] is player i's record against
    player j, or null}, ``pairs`` (each card's summary, by game then players) and ``unrated``
    [{player, reason}].
    TrueSkill processes completed games ordered by (seed, game, seats); errored games are skipped.
    """
    if not cards:
        raise TournamentError("the score-card archive is empty: run a tournament before building a leaderboard")
    for card in cards:
        verify_card(card, f"card {card.get('digest', '?')[:12]}")
    config = _single_config(cards)
    cards = _unique_cards(cards)
    pins = _pins(cards)
    env = config.trueskill_env()
    game_order = [game.label for game in config.games]

    totals: dict[str, _Tally] = {spec: _Tally() for spec in pins}
    per_game: dict[str, dict[str, _Tally]] = {label: {} for label in game_order}
    head: dict[tuple[str, str], _Tally] = {}
    head_by_game: dict[str, dict[tuple[str, str], _Tally]] = {label: {} for label in game_order}
    for card in cards:
        label = game_label(card["game_id"], card["variant"])
        a, b = (player["spec"] for player in card["players"])
        for row_spec, col_spec in ((a, b), (b, a)):
            head.setdefault((row_spec, col_spec), _Tally()).errored += card["summary"]["errored"]
            head_by_game[label].setdefault((row_spec, col_spec), _Tally()).errored += card["summary"]["errored"]
            per_game[label].setdefault(row_spec, _Tally()).errored += card["summary"]["errored"]
            totals[row_spec].errored += card["summary"]["errored"]

    games = _rated_games(cards, game_order)
    overall = update_ratings({}, (outcome for _, outcome, _ in games), env=env)
    by_game_ratings = {
        label: update_ratings({}, (o for g, o, _ in games if g == label), env=env) for label in game_order
    }
    for label, outcome, _ in games:
        for me, other, score in (
            (outcome.player_a, outcome.player_b, outcome.score_a),
            (outcome.player_b, outcome.player_a, 1.0 - outcome.score_a),
        ):
            totals[me].add(score)
            per_game[label][me].add(score)
            head[(me, other)].add(score)
            head_by_game[label][(me, other)].add(score)

    excluded = dict(excluded or {})
    unrated = {
        spec: f"no game completed without error (first error: {_first_error(cards, spec)})"
        for spec in pins
        if spec not in overall
    }
    unrated.update({spec: reason for spec, reason in excluded.items() if spec not in overall})
    if not overall:
        raise TournamentError(f"no player completed a game without error; unrated: {unrated}")

    ranking = _rating_rows(overall, totals)
    for row in ranking:
        row["pin"] = pins[row["player"]]
        row["pin_digest"] = digest_config(row["pin"])
    order = [row["player"] for row in ranking]
    return {
        "schema": LEADERBOARD_SCHEMA,
        "eval_config": config.to_dict(),
        "eval_config_hash": config.digest(),
        "games": game_order,
        "cards": [card["digest"] for card in cards],
        "ranking": [{**_rounded({k: v for k, v in row.items() if k != "pin"}), "pin": row["pin"]} for row in ranking],
        "ratings_by_game": {
            label: _rounded(_rating_rows(by_game_ratings[label], per_game[label])) for label in game_order
        },
        "head_to_head": {
            "players": order,
            "overall": _rounded(_matrix(order, head)),
            "by_game": {label: _rounded(_matrix(order, head_by_game[label])) for label in game_order},
        },
        "pairs": sorted(
            (_pair_row(card) for card in cards),
            key=lambda pair: (game_order.index(pair["game"]), pair["p0"], pair["p1"]),
        ),
        "unrated": [{"player": spec, "reason": reason} for spec, reason in sorted(unrated.items())],
    }


def _pair_row(card: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "game": game_label(card["game_id"], card["variant"]),
        "p0": card["players"][0]["spec"],
        "p1": card["players"][1]["spec"],
        "card": card["digest"],
        **_rounded(card["summary"]),
    }


def write_leaderboard(path: str | Path, leaderboard: Mapping[str, Any]) -> None:
    """Write ``leaderboard.json`` atomically as stable JSON (sorted keys, no timestamps)."""
    atomic_write_json(path, leaderboard)
