"""Score cards: one pair on one game, pinned to both players and the code that played it; made, verified, archived.

A card is self-describing: its eval config, seeds, both players' pins, the producing code (entry script
and import-closure digest), the summary and every outcome, plus a digest over all of it. An archive
directory holds cards as ``<game_id>-<digest prefix>.card.json`` and the excluded players.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir, dump_json
from arena.core.code import producing_code
from arena.core.hashing import canonical_json, digest_config
from arena.core.seeds import format_range
from arena.eval.config import EvalConfig, GameEntry
from arena.eval.errors import TournamentError
from arena.games.variants import game_label
from arena.play.stats import seat_assignments, summarize_outcomes
from arena.players.specs import odd_characters

SCORECARD_SCHEMA = "arena.scorecard/1"
CARD_SUFFIX = ".card.json"
EXCLUDED_FILE = "excluded.json"
CODE_KEYS = ("entry", "code_digest")

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


def _player_entry(records: Sequence[Mapping[str, Any]], seats: Sequence[int], spec: str) -> dict[str, Any]:
    """A card's entry for one player: its spec and pin; for a frontier player also the model ids its server answered
    as (``served_models``) and whether any differs from the one requested (``served_model_differs``)."""
    pin = _pin_for(records, seats, spec)
    entry: dict[str, Any] = {"spec": spec, "pin": pin}
    if pin.get("kind") == "frontier":
        served = sorted({str(decision["model_id"]) for record, seat in zip(records, seats, strict=True)
                         for decision in record.get("decisions") or ()
                         if isinstance(decision, Mapping) and decision.get("player") == seat
                         and decision.get("model_id") is not None})
        entry["served_models"] = served
        entry["served_model_differs"] = any(model != pin.get("model") for model in served)
    return entry


def make_scorecard(
    config: EvalConfig,
    game: GameEntry,
    spec_a: str,
    spec_b: str,
    records: Sequence[Mapping[str, Any]],
    *,
    code: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The score card of one pair on one game: both pins, the conditions, the code, the summary and every outcome.

    ``code`` is the entry script and its import closure's digest (default: ``producing_code()``, this process's).
    """
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
            _player_entry(records, [s[0] for s in seats], spec_a),
            _player_entry(records, [s[1] for s in seats], spec_b),
        ],
        "code": _checked_code(code if code is not None else producing_code(), "make_scorecard"),
        "summary": summarize_outcomes(game.game_id, outcomes, spec_a, spec_b),
        "outcomes": outcomes,
    }
    card["digest"] = card_digest(card)
    return card


def _checked_code(code: Any, source: str) -> dict[str, str]:
    """``code`` when it is {entry, code_digest} with string values, else a TournamentError naming the problem."""
    if not isinstance(code, Mapping) or sorted(code) != sorted(CODE_KEYS) \
            or not all(isinstance(code[key], str) and code[key] for key in CODE_KEYS):
        raise TournamentError(
            f"{source}: code {code!r} must be {{'entry': script path, 'code_digest': digest}} "
            f"as arena.core.code.producing_code() returns"
        )
    return dict(code)


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


# Each key a card must hold and the JSON type of its value (``code`` is optional: older cards lack it).
_CARD_SHAPE: dict[str, type] = {
    "schema": str, "digest": str, "game_id": str, "variant": dict, "eval_config": dict, "eval_config_hash": str,
    "seeds": dict, "players": list, "summary": dict, "outcomes": list,
}


def _card_shape_problem(card: Any) -> str | None:
    """What is wrong with a card's shape (a non-object, a missing key, a value of the wrong type), else None."""
    if not isinstance(card, Mapping):
        return f"holds a JSON {type(card).__name__}, not a card object"
    missing = [key for key in _CARD_SHAPE if key not in card]
    if missing:
        return f"lacks the key(s) {', '.join(missing)}"
    for key, kind in _CARD_SHAPE.items():
        if not isinstance(card[key], kind):
            return f"{key} is a {type(card[key]).__name__}, not a {kind.__name__}"
    players = card["players"]
    if len(players) != 2 or not all(isinstance(p, Mapping) and isinstance(p.get("spec"), str)
                                    and isinstance(p.get("pin"), Mapping) for p in players):
        return "players is not two {spec: string, pin: object} entries"
    odd = [player["spec"] for player in players if odd_characters(player["spec"])]
    if odd:
        return f"player spec {ascii(odd[0])} holds control, format or invisible characters"
    if not all(isinstance(outcome, Mapping) for outcome in card["outcomes"]):
        return "outcomes holds a value that is not an object"
    return None


def verify_card(card: Mapping[str, Any], source: str = "card") -> None:
    """Raise a TournamentError naming ``source`` when a card is malformed, its digest is stale, or its summary
    does not follow from its outcomes.

    Cards written before cards recorded their code have no ``code`` field; they still verify.
    """
    problem = _card_shape_problem(card)
    if problem is not None:
        raise TournamentError(f"{source}: {problem}; regenerate the card")
    try:
        _verify_content(card, source)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        if isinstance(error, TournamentError):
            raise
        raise TournamentError(f"{source}: malformed card ({type(error).__name__}: {error}); "
                              "regenerate the card") from error


def _verify_content(card: Mapping[str, Any], source: str) -> None:
    if card["schema"] != SCORECARD_SCHEMA:
        raise TournamentError(f"{source}: schema {card['schema']!r} is not {SCORECARD_SCHEMA!r}")
    if card["digest"] != card_digest(card):
        raise TournamentError(f"{source}: digest does not match its content (edited by hand?); regenerate the card")
    config = EvalConfig.from_dict(card["eval_config"])
    if config.to_dict() != card["eval_config"] or config.digest() != card["eval_config_hash"]:
        raise TournamentError(f"{source}: eval_config_hash does not match its eval_config")
    if game_label(card["game_id"], card["variant"]) not in [game.label for game in config.games]:
        raise TournamentError(f"{source}: game {card['game_id']!r} {card['variant']} is not in its eval config")
    if card["seeds"] != config.to_dict()["seeds"]:
        raise TournamentError(f"{source}: seeds {card['seeds']} differ from its eval config's")
    if "code" in card:
        _checked_code(card["code"], source)
    specs = [player["spec"] for player in card["players"]]
    if card["summary"] != summarize_outcomes(card["game_id"], card["outcomes"], *specs):
        raise TournamentError(f"{source}: summary does not follow from its outcomes; regenerate the card")


def _read_json(path: Path, what: str, fix: str) -> Any:
    """``path``'s JSON, or a TournamentError naming the file, what it should be and the fix."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TournamentError(f"{path}: not {what} ({type(error).__name__}: {error}); {fix}") from error


def read_card(path: str | Path) -> dict[str, Any]:
    """The card at ``path``, verified; a TournamentError naming the file when it is unreadable or malformed."""
    path = Path(path)
    card = _read_json(path, "a readable JSON score card", "regenerate the card or remove it from the archive")
    verify_card(card, str(path))
    return card


def first_error(cards: Iterable[Mapping[str, Any]], spec: str) -> str:
    """The first error message in any game ``spec`` played in these cards (why it completed nothing)."""
    for card in cards:
        if spec in (player["spec"] for player in card["players"]):
            for outcome in card["outcomes"]:
                if outcome.get("error"):
                    return str(outcome["error"])
    return "no error message"


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
            card = read_card(path)
            cards[card["digest"]] = card
    return [cards[digest] for digest in sorted(cards)]


def load_excluded(dirs: Iterable[str | Path]) -> dict[str, str]:
    """Players the archived tournaments left out, with their reasons (reasons from several dirs are joined)."""
    reasons: dict[str, set[str]] = {}
    for directory in dirs:
        path = Path(directory) / EXCLUDED_FILE
        if path.exists():
            for spec, reason in read_excluded(path).items():
                reasons.setdefault(spec, set()).add(reason)
    return {spec: "; ".join(sorted(found)) for spec, found in sorted(reasons.items())}


def read_excluded(path: str | Path) -> dict[str, str]:
    """An archive's excluded.json (player spec -> reason); a TournamentError naming the file when malformed."""
    path = Path(path)
    excluded = _read_json(path, "readable JSON", "rerun the tournament that wrote it")
    if not isinstance(excluded, dict) or not all(isinstance(v, str) for v in excluded.values()):
        raise TournamentError(f"{path}: must map player specs to reasons (strings); rerun the tournament")
    return excluded


def archive_problems(root: str | Path) -> list[str]:
    """One line per malformed card or excluded.json in every score-card archive under ``root``.

    Archives carry no meta.json: each card holds its own digest over its content, which ``verify_card`` checks
    along with its shape and summary, so a truncated or edited card is found without one.
    """
    root = Path(root)
    paths = sorted(p for p in root.rglob(f"*{CARD_SUFFIX}") if p.is_file()) if root.is_dir() else []
    excluded = {p.parent / EXCLUDED_FILE for p in paths} | set(root.rglob(EXCLUDED_FILE) if root.is_dir() else [])
    problems = []
    for path in [*paths, *sorted(p for p in excluded if p.is_file())]:
        try:
            read_excluded(path) if path.name == EXCLUDED_FILE else read_card(path)
        except TournamentError as error:
            problems.append(str(error))
    return problems
