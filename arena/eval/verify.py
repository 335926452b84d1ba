"""`arena verify`: re-derive a published score card from its pins: find each model by digest, re-play, compare.

Flow: read and self-check the card; compare its producing code with the same entry script's closure
here (reported, never decisive); check the repository's ``eval`` section is the card's; for each
player, find the artifact its pin names (``arena.eval.locate``: the spec's path, else the DVC cache,
else the DVC remote) and rebuild the player with the player config params.yaml gives it (an endpoint's player
replays the replies recorded in ``frontier.replies``, calling nothing); compare every
pin field; re-play every game with the same seeds and seats (cards hold outcomes, not actions) and
compare transcript digests, rewards and the summary (``arena.eval.verdict``). Byte identity is only
promised on the same platform tuple (the pin's ``versions``: OS and arch, BLAS and its thread count,
library versions); when that differs, the re-derived win rate must lie in the card's own 95% Wilson
interval instead, and the result names the fields that differed.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from arena.core.config import as_dict, load_params, load_section
from arena.core.errors import ArenaError
from arena.core.hashing import digest_config
from arena.eval.codecheck import CodeCheck, compare_code
from arena.eval.config import EvalConfig, GameEntry, TournamentConfig
from arena.eval.errors import TournamentError
from arena.eval.imported import is_imported, rederive_card
from arena.eval.locate import MODEL_DIRS_ENV, allowed_model_dirs, locate_model, spec_path_problem
from arena.eval.scorecards import make_scorecard, verify_card
from arena.eval.verdict import (
    Difference,
    VerifyResult,
    compare_interval,
    compare_pins,
    compare_replay,
    note_code_difference,
)
from arena.games.variants import game_label
from arena.play.match import Slot, play_match
from arena.players.base import Player
from arena.players.build import load_frontier_config, make_player, section_mlx_config
from arena.players.config import MLXPlayerConfig
from arena.players.frontier import FrontierPlayer
from arena.players.mlx import MLXPlayer

_TOURNAMENT_KEYS = frozenset(f.name for f in fields(TournamentConfig))


# --------------------------------------------------------------------------------------------- players


def _config_candidates(params: Mapping[str, Any], spec: str, section: str | None) -> list[tuple[str, MLXPlayerConfig]]:
    """The player configs params.yaml gives ``spec``: ``section``, else each tournament-shaped section listing it."""
    if section is not None:
        names = [section]
    else:
        names = [name for name, value in params.items()
                 if isinstance(value, Mapping) and set(value) <= _TOURNAMENT_KEYS
                 and spec in [*(value.get("players") or []), *(value.get("frontier") or [])]]
    candidates = []
    for name in names:
        config = load_section(TournamentConfig, name, params)
        candidates.append((f"params.yaml {name}", section_mlx_config(config)))
    return candidates or [("MLXPlayerConfig defaults: no params.yaml section lists this player", MLXPlayerConfig())]


def _pick_config(candidates: Sequence[tuple[str, MLXPlayerConfig]], config_hash: str) -> tuple[str, MLXPlayerConfig]:
    for source, config in candidates:
        if digest_config(as_dict(config)) == config_hash:
            return source, config
    return candidates[0]


def _player_config_detail(source: str, config: MLXPlayerConfig) -> str:
    return f"{source}: {json.dumps(as_dict(config), sort_keys=True)}"


def _rebuild_player(index: int, entry: Mapping[str, Any], repo: Path, params: Mapping[str, Any],
                    section: str | None, scratch: Path, fetch: bool, allowed: Sequence[Path],
                    result: VerifyResult) -> tuple[Player | None, str]:
    """The player a card entry names, rebuilt from its pinned artifact; (None, "") after recording a difference."""
    spec, pin = entry["spec"], entry["pin"]
    who = f"players[{index}] {spec}"
    kind = pin.get("kind")
    if kind == "model":
        if not spec.startswith("mlx:"):
            result._fail(Difference(f"{who}: spec", "mlx:PATH", spec, "a model pin needs an mlx:PATH spec"))
            return None, ""
        refused = spec_path_problem(repo, spec[len("mlx:"):], allowed)
        if refused is not None:
            result._fail(Difference(f"{who}: spec", f"mlx:PATH in the project or ${MODEL_DIRS_ENV}", spec, refused))
            return None, ""
        located = locate_model(repo, spec[len("mlx:"):], pin["model_hash"], scratch, fetch=fetch)
        result.notes.extend(located.notes)
        if located.path is None:
            result._fail(Difference(f"{who}: pin.model_hash", pin["model_hash"],
                                    located.workspace_digest or "no such directory", located.detail))
            return None, ""
        source, config = _pick_config(_config_candidates(params, spec, section), pin.get("config_hash"))
        player: Player = MLXPlayer(located.path, config)
        player.spec = spec  # records name the card's spec, wherever the pinned copy was found
        return player, _player_config_detail(source, config)
    if kind == "scripted":
        return make_player(spec), "the scripted player's own settings"
    if kind == "frontier":
        return _replay_frontier(spec, repo, params)
    result._fail(Difference(f"{who}: pin.kind", kind, "not re-playable", "an unknown pin kind"))
    return None, ""


def _replay_frontier(spec: str, repo: Path, params: Mapping[str, Any]) -> tuple[Player, str]:
    """The endpoint's player replaying its recorded replies (params' ``frontier.replies``, else this machine's
    cache): ``max_calls`` 0, so nothing is sent and no server need run; a reply not recorded errors that decision,
    and the re-played games then differ from the card's."""
    config = load_frontier_config(params)
    where = repo / config.replies if config.replies else None
    config = replace(config, max_calls=0, replies=None if where is None else str(where))
    source = where or "this machine's frontier cache"
    detail = f"params frontier, replayed from {source} (max_calls 0: no endpoint is called)"
    return make_player(spec, frontier_config=config, check=False), detail


def _unrecorded(players: Sequence[Player]) -> list[str]:
    """A note per replayed endpoint player whose replies were not all recorded."""
    return [f"{player.spec}: {player.stats.errors} decisions had no recorded reply (frontier.replies, or the cache)"
            for player in players if isinstance(player, FrontierPlayer) and player.stats.errors]


# --------------------------------------------------------------------------------------------- replay


def _schedule(card: Mapping[str, Any]) -> list[Slot]:
    """The tournament's schedule: game k is seed ``start + k`` with the first listed player in seat ``k % 2``."""
    seeds = range(card["seeds"]["start"], card["seeds"]["stop"])
    return [Slot(seed, k % 2) for k, seed in enumerate(seeds)]


def _schedule_difference(card: Mapping[str, Any], schedule: Sequence[Slot]) -> Difference | None:
    a, b = (player["spec"] for player in card["players"])
    if len(card["outcomes"]) != len(schedule):
        return Difference("outcomes (count)", len(card["outcomes"]), len(schedule), "one game per evaluation seed")
    for k, (outcome, slot) in enumerate(zip(card["outcomes"], schedule, strict=True)):
        expected = [a, b] if slot.first_seat == 0 else [b, a]
        if outcome["seed"] != slot.seed or list(outcome["players"]) != expected:
            return Difference(f"outcomes[{k}] seed and seats", [outcome["seed"], outcome["players"]],
                              [slot.seed, expected], "the card was not played on the tournament's schedule")
    return None


# --------------------------------------------------------------------------------------------- entry point


def _load_card(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ArenaError(f"score card {path} not found; pass a *.card.json file from a score-card archive")
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ArenaError(f"score card {path} is not valid JSON ({error}); pass a *.card.json file") from error
    if not isinstance(card, dict):
        raise ArenaError(f"score card {path} holds {type(card).__name__}, not a card object")
    return card


def _title(card: Mapping[str, Any]) -> str:
    try:
        a, b = (player["spec"] for player in card["players"])
        return f"{a} vs {b} on {game_label(card['game_id'], card['variant'])}"
    except (KeyError, TypeError, ValueError):
        return ""


def _eval_difference(card: Mapping[str, Any], params: Mapping[str, Any]) -> Difference | None:
    """How params.yaml's ``eval`` section differs from the card's eval config (None when it has none or it agrees)."""
    if "eval" not in params:
        return None
    here_eval = EvalConfig.from_dict(params["eval"], "eval")
    if here_eval.digest() == card["eval_config_hash"]:
        return None
    return Difference("eval_config_hash", card["eval_config_hash"], here_eval.digest(),
                      f"params.yaml eval is {json.dumps(here_eval.to_dict(), sort_keys=True)}, "
                      f"the card's is {json.dumps(card['eval_config'], sort_keys=True)}")


def _rebuild_players(card: Mapping[str, Any], repo: Path, params: Mapping[str, Any], section: str | None,
                     scratch: Path, fetch: bool, allowed: Sequence[Path],
                     result: VerifyResult) -> list[Player] | None:
    """Both players rebuilt from their pins and compared with them; None after recording a hard difference."""
    players = []
    for index, entry in enumerate(card["players"]):
        player, config_source = _rebuild_player(index, entry, repo, params, section, scratch, fetch, allowed,
                                                result)
        if player is None:
            return None
        hard, soft = compare_pins(f"players[{index}] {entry['spec']}", entry["pin"], player.pin(), config_source)
        if hard:
            result._fail(hard[0])
            return None
        result.tuple_differences.extend(soft)
        players.append(player)
    return players


def _compare_code(card: Mapping[str, Any], result: VerifyResult) -> CodeCheck:
    """The card's code against the same entry's closure here; differences and notes go into ``result``."""
    code = compare_code(card.get("code"))
    result.code_differences.extend(code.differences)
    result.notes.extend(code.notes)
    return code


def _verify_imported(card: Mapping[str, Any], code: CodeCheck, result: VerifyResult) -> VerifyResult:
    """A card imported from verifiers traces: its models sat behind endpoints, so its games are re-derived
    from the actions the card records, by arena's rules, and the rebuilt card must be identical."""
    try:
        here = rederive_card(card, code.here)
    except (ArenaError, ValueError, RuntimeError, KeyError, TypeError) as error:
        return result._fail(Difference("outcomes (replay)", "replayable actions", "rejected", str(error)))
    result.games, result.summary = len(here["outcomes"]), here["summary"]
    result.notes.append("imported card: every game was re-played from its recorded actions by arena's rules "
                        "(the models are not re-run)")
    return note_code_difference(compare_replay(card, here, result))


def verify_scorecard(path: str | Path, *, repo: str | Path = ".", section: str | None = None,
                     strict: bool = False, fetch: bool = True,
                     model_dirs: Sequence[str | Path] = (), params_file: str | Path = "params.yaml") -> VerifyResult:
    """Re-derive the score card at ``path`` from its pins in the repository ``repo``.

    ``section`` names the params.yaml section whose view/temperature the model players used (default:
    every tournament-shaped section listing the player, the one matching the pin's config hash first).
    ``strict`` turns a platform-tuple difference into a MISMATCH instead of an interval comparison.
    ``fetch`` lets a model missing from the workspace and the DVC cache be fetched from the DVC remote.
    A card's ``mlx:`` path is read only inside ``repo`` or a directory of ``model_dirs`` or ``$ARENA_MODEL_DIRS``.
    The card's code is compared with the code this arena runs from: a difference is reported (and named
    as the likely cause of a MISMATCH) but never decides the verdict. ``params_file`` (relative to ``repo``)
    is the params file the card's stage read: ``realmodel/params.yaml`` for the real-model pipeline's cards.
    """
    repo = Path(repo).resolve()
    card = _load_card(Path(path))
    result = VerifyResult(card=str(path), title=_title(card))
    try:
        verify_card(card, str(path))
    except (TournamentError, KeyError, TypeError, ValueError) as error:
        return result._fail(Difference("card", "self-consistent", "inconsistent", str(error)))
    result.card_summary = card["summary"]
    code = _compare_code(card, result)
    params = load_params(repo / params_file) if (repo / params_file).exists() else {}
    wrong_eval = _eval_difference(card, params)
    if wrong_eval is not None:
        return result._fail(wrong_eval)
    if is_imported(card):
        return _verify_imported(card, code, result)
    with tempfile.TemporaryDirectory(prefix="arena-verify-") as scratch:
        players = _rebuild_players(card, repo, params, section, Path(scratch), fetch,
                                   allowed_model_dirs(model_dirs), result)
        if players is None:
            return result
        if strict and result.tuple_differences:
            return result._fail(result.tuple_differences[0])
        schedule = _schedule(card)
        wrong_schedule = _schedule_difference(card, schedule)
        if wrong_schedule is not None:
            return result._fail(wrong_schedule)
        records = play_match(card["game_id"], (players[0], players[1]), schedule, variant=card["variant"],
                             progress=False)
        result.notes.extend(_unrecorded(players))
    here = make_scorecard(EvalConfig.from_dict(card["eval_config"]), GameEntry(card["game_id"], card["variant"]),
                          players[0].spec, players[1].spec, records, code=code.here)
    result.games, result.summary = len(records), here["summary"]
    compare = compare_interval if result.tuple_differences else compare_replay
    return note_code_difference(compare(card, here, result))
