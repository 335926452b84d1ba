"""`arena verify`: re-derive a published score card from its pins: find each model by digest, re-play, compare.

Flow: read and self-check the card; check the repository's ``eval`` section is the card's; for each
player, find the artifact its pin names (a model directory by arena digest: first at the spec's
path, else in the DVC cache, fetching from the DVC remote if needed) and rebuild the player with the
player config params.yaml gives it; compare every pin field; re-play every game with the same
seeds and seats (cards hold outcomes, not actions) and compare transcript digests, rewards and the
summary. Byte identity is only promised on the same platform tuple (the pin's ``versions``: OS and
arch, BLAS and its thread count, library versions); when that differs, the re-derived win rate must
lie in the card's own 95% Wilson interval instead, and the result names the fields that differed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from arena.core.config import as_dict, load_params, load_section
from arena.core.errors import ArenaError
from arena.core.hashing import digest_config, digest_dir, digest_file, dir_manifest
from arena.eval.config import EvalConfig, GameEntry, TournamentConfig
from arena.eval.tournament import TournamentError, make_scorecard, verify_card
from arena.games.variants import game_label
from arena.play.match import Slot, play_match
from arena.players.base import Player
from arena.players.build import make_player, section_mlx_config
from arena.players.config import MLXPlayerConfig
from arena.players.mlx import MLXPlayer

MATCH = "MATCH"
MATCH_WITHIN_INTERVAL = "MATCH WITHIN INTERVAL"
MISMATCH = "MISMATCH"

# Per-game fields compared in order; the first one that differs names the difference.
_GAME_FIELDS = ("errored", "transcript_digest", "rewards", "round_rewards", "invalid_moves")
# Pin fields compared before ``versions`` (which is the platform tuple and compared field by field).
_PIN_ORDER = ("kind", "name", "model_hash", "quant", "code_hash", "config_hash")
_TOURNAMENT_KEYS = frozenset(f.name for f in fields(TournamentConfig))


@dataclass(frozen=True)
class Difference:
    """One thing that is not as the card says: what (a dotted name), the card's value and the value found here."""

    name: str
    card: Any
    here: Any
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.name}: card {_show(self.card)}, here {_show(self.here)}"
        return f"{text} ({self.detail})" if self.detail else text


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


@dataclass
class VerifyResult:
    """The verdict on one card: MATCH, MATCH WITHIN INTERVAL (platform tuple differs) or MISMATCH.

    ``differences`` holds the first difference that decides a MISMATCH (verification stops there);
    ``tuple_differences`` the platform-tuple fields that differ from the card's; ``summary`` the
    re-derived summary when the games were re-played.
    """

    card: str
    title: str = ""
    verdict: str = MISMATCH
    differences: list[Difference] = field(default_factory=list)
    tuple_differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    games: int = 0
    identical_games: int = 0
    card_summary: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.verdict in (MATCH, MATCH_WITHIN_INTERVAL)

    @property
    def first_difference(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    def report(self) -> str:
        """What ``arena verify`` prints: the verdict line, the first difference or the evidence, then notes."""
        lines = [f"{self.verdict} {self.card}" + (f" ({self.title})" if self.title else "")]
        if self.first_difference is not None:
            lines.append(f"  first difference: {self.first_difference}")
        for diff in self.tuple_differences:
            lines.append(f"  platform tuple differs: {diff}")
        if self.verdict == MATCH_WITHIN_INTERVAL:
            lines.append("  byte identity is not expected across platform tuples: compared within the card's 95% "
                         "Wilson interval")
        if self.games:
            lines.append(f"  re-played {self.games} games: {self.identical_games} identical to the card "
                         "(transcript digest, rewards, invalid moves)")
        if self.summary is not None and self.card_summary is not None:
            card_rate, here_rate = self.card_summary["p0_win_rate"], self.summary["p0_win_rate"]
            lines.append(f"  p0 win rate: card {_rate(card_rate)}, re-derived {_rate(here_rate)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def _fail(self, difference: Difference) -> VerifyResult:
        self.verdict = MISMATCH
        self.differences.append(difference)
        return self


def _rate(rate: Mapping[str, Any]) -> str:
    if rate.get("rate") is None:
        return "none (no completed game)"
    return f"{rate['rate']:.4f} [{rate['low']:.4f}, {rate['high']:.4f}]"


# --------------------------------------------------------------------------------------------- DVC cache


def _dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    # The same interpreter's dvc: the one this environment installed, whatever PATH says.
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True)


def dvc_cache_dir(repo: str | Path) -> Path | None:
    """The DVC repository's cache directory (``dvc cache dir``), or None when ``repo`` is not a DVC repository."""
    repo = Path(repo)
    if not (repo / ".dvc").is_dir():
        return None
    done = _dvc(repo, "cache", "dir")
    if done.returncode != 0 or not done.stdout.strip():
        return repo / ".dvc" / "cache"
    return Path(done.stdout.strip().splitlines()[-1])


def _dir_objects(cache: Path) -> list[Path]:
    # DVC 3 keeps objects under files/md5/; DVC 2-era (md5-dos2unix) objects sit at the cache root.
    return sorted(cache.rglob("*.dir")) if cache.is_dir() else []


def _cached_files(dir_object: Path) -> dict[str, Path] | None:
    """relpath -> cache object of a DVC directory object, or None if it is unreadable or not fully cached."""
    try:
        entries = json.loads(dir_object.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    root = dir_object.parent.parent
    files: dict[str, Path] = {}
    for entry in entries if isinstance(entries, list) else []:
        md5, rel = (entry.get("md5"), entry.get("relpath")) if isinstance(entry, Mapping) else (None, None)
        if not isinstance(md5, str) or not isinstance(rel, str) or len(md5) < 3:
            return None
        files[rel] = root / md5[:2] / md5[2:]
    if not files or not all(path.is_file() for path in files.values()):
        return None
    return files


def _cached_digest(files: Mapping[str, Path]) -> str:
    """``digest_dir`` of the directory these cache objects make up (DVC never tracks empty directories)."""
    return digest_config({rel: digest_file(path) for rel, path in files.items() if rel != "meta.json"})


def find_in_cache(cache: Path, model_hash: str) -> tuple[Path, dict[str, Path]] | None:
    """A fully cached DVC directory whose arena digest is ``model_hash``: (its .dir object, relpath -> object)."""
    for dir_object in _dir_objects(cache):
        files = _cached_files(dir_object)
        if files is None or "config.json" not in files:
            continue  # not a model directory, or only partly fetched
        meta = files.get("meta.json")
        if meta is not None:
            # Every stage's meta.json records its directory's digest: a cheap filter before hashing the files.
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8")).get("digest")
            except (OSError, ValueError, AttributeError):
                recorded = None
            if recorded is not None and recorded != model_hash:
                continue
        if _cached_digest(files) == model_hash:
            return dir_object, files
    return None


def _materialise(files: Mapping[str, Path], dest: Path) -> Path:
    # Copies, not links: nothing may write through into DVC's read-only cache.
    for rel, source in sorted(files.items()):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return dest


# --------------------------------------------------------------------------------------------- models


def _model_hash(path: Path) -> str:
    """The ``model_hash`` an MLX player at ``path`` pins (adapter directories pin base x adapter)."""
    adapter_config = path / "adapter_config.json"
    if adapter_config.exists():
        base = json.loads(adapter_config.read_text())["model"]
        return digest_config({"base": digest_dir(base), "adapter": digest_dir(path)})
    return digest_dir(path)


def _changed_files(workspace: Path, files: Mapping[str, Path]) -> str:
    """Which files of the workspace copy differ from the pinned copy found in the cache."""
    here = dir_manifest(workspace)
    pinned = {rel: digest_file(path) for rel, path in files.items() if rel != "meta.json"}
    changed = sorted(rel for rel in here.keys() & pinned.keys() if here[rel] != pinned[rel])
    missing = sorted(pinned.keys() - here.keys())
    extra = sorted(here.keys() - pinned.keys())
    parts = [f"{label}: {', '.join(names)}" for label, names in
             (("changed", changed), ("missing", missing), ("extra", extra)) if names]
    return "; ".join(parts) or "no file differs"


@dataclass
class _Located:
    path: Path | None
    notes: list[str]
    detail: str = ""
    workspace_digest: str | None = None


def locate_model(repo: Path, rel: str, model_hash: str, scratch: Path, *, fetch: bool = True) -> _Located:
    """Find the model directory whose arena digest is ``model_hash``: the workspace path, else the DVC cache.

    When the cache lacks it and ``fetch`` is set, ``dvc fetch`` the path (its dvc.lock version, then every
    commit's) from the default remote. A cached copy is copied into ``scratch``; the workspace is never
    changed.
    """
    workspace = repo / rel
    located = _Located(None, [])
    if workspace.is_dir():
        located.workspace_digest = _model_hash(workspace)
        if located.workspace_digest == model_hash:
            located.path = workspace
            return located
    cache = dvc_cache_dir(repo)
    found = find_in_cache(cache, model_hash) if cache else None
    fetch_errors = []
    if cache and found is None and fetch:
        for extra in ((), ("--all-commits",)):
            done = _dvc(repo, "fetch", *extra, rel)
            found = find_in_cache(cache, model_hash)
            if found is None:
                # dvc fetch exits 0 when the remote lacks the files; its warning says so.
                fetch_errors.append(f"dvc fetch {' '.join((*extra, rel))}: {_complaint(done)}")
            if found is not None:
                located.notes.append(f"fetched {rel} from the DVC remote")
                break
    if found is not None:
        dir_object, files = found
        located.path = _materialise(files, scratch / rel.replace("/", "_"))
        located.notes.append(f"{rel}: the pinned model came from the DVC cache ({dir_object.name})")
        if workspace.is_dir():
            located.notes.append(f"{rel} in the workspace is not the pinned model ({_changed_files(workspace, files)})")
        return located
    located.detail = _not_found(workspace, located.workspace_digest, cache, fetch_errors)
    return located


def _complaint(done: subprocess.CompletedProcess) -> str:
    """DVC's first error or warning line, else its last line."""
    lines = [line.strip() for line in f"{done.stderr}\n{done.stdout}".splitlines() if line.strip()]
    flagged = [line for line in lines if line.startswith(("ERROR", "WARNING"))]
    return (flagged or lines or [f"exit {done.returncode}, no output"])[0]


def _not_found(workspace: Path, digest: str | None, cache: Path | None, fetch_errors: Sequence[str]) -> str:
    where = [f"{workspace} is missing" if digest is None else f"{workspace} has digest {digest}"]
    meta = workspace / "meta.json"
    if digest is not None and meta.exists():
        try:
            recorded = json.loads(meta.read_text()).get("digest")
        except (OSError, ValueError, AttributeError):
            recorded = None
        if recorded is not None and recorded != digest:
            where.append(f"its meta.json records {recorded}: its files changed after it was built")
    where.append("no DVC cache (not a DVC repository)" if cache is None else f"not in the DVC cache {cache}")
    where.extend(fetch_errors)
    return "; ".join(where)


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


def _compare_pins(who: str, card_pin: Mapping[str, Any], here_pin: Mapping[str, Any],
                  config_source: str) -> tuple[list[Difference], list[Difference]]:
    """(hard differences, platform-tuple differences) between two pins, in the order they are reported."""
    hard = []
    keys = [k for k in _PIN_ORDER if k in card_pin or k in here_pin]
    keys += sorted((card_pin.keys() | here_pin.keys()) - set(_PIN_ORDER) - {"versions"})
    for key in keys:
        if card_pin.get(key) != here_pin.get(key):
            detail = f"player config from {config_source}" if key == "config_hash" else ""
            hard.append(Difference(f"{who}: pin.{key}", card_pin.get(key), here_pin.get(key), detail))
    card_versions, here_versions = card_pin.get("versions") or {}, here_pin.get("versions") or {}
    soft = [Difference(f"{who}: pin.versions.{key}", card_versions.get(key), here_versions.get(key))
            for key in sorted(card_versions.keys() | here_versions.keys())
            if card_versions.get(key) != here_versions.get(key)]
    return hard, soft


def _player_config_detail(source: str, config: MLXPlayerConfig) -> str:
    return f"{source}: {json.dumps(as_dict(config), sort_keys=True)}"


def _rebuild_player(index: int, entry: Mapping[str, Any], repo: Path, params: Mapping[str, Any],
                    section: str | None, scratch: Path, fetch: bool,
                    result: VerifyResult) -> tuple[Player | None, str]:
    """The player a card entry names, rebuilt from its pinned artifact; (None, "") after recording a difference."""
    spec, pin = entry["spec"], entry["pin"]
    who = f"players[{index}] {spec}"
    kind = pin.get("kind")
    if kind == "model":
        if not spec.startswith("mlx:"):
            result._fail(Difference(f"{who}: spec", "mlx:PATH", spec, "a model pin needs an mlx:PATH spec"))
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
    reason = ("a frontier endpoint: its games cannot be re-derived offline from pins" if kind == "frontier"
              else "an unknown pin kind")
    result._fail(Difference(f"{who}: pin.kind", kind, "not re-playable", reason))
    return None, ""


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


def _first_game_difference(card_outcomes: Sequence[Mapping[str, Any]],
                           here_outcomes: Sequence[Mapping[str, Any]]) -> tuple[Difference | None, int]:
    """The first differing game field (in schedule order), and how many games are identical."""
    first, identical = None, 0
    for k, (theirs, ours) in enumerate(zip(card_outcomes, here_outcomes, strict=True)):
        differing = [key for key in _GAME_FIELDS if theirs.get(key) != ours.get(key)]
        if not differing:
            identical += 1
        elif first is None:
            key = differing[0]
            first = Difference(f"outcomes[{k}] (seed {theirs['seed']}).{key}", theirs.get(key), ours.get(key))
    return first, identical


def _first_summary_difference(card: Mapping[str, Any], here: Mapping[str, Any], prefix: str = "summary") -> Difference:
    for key in sorted(card.keys() | here.keys()):
        if card.get(key) != here.get(key):
            if isinstance(card.get(key), Mapping) and isinstance(here.get(key), Mapping):
                return _first_summary_difference(card[key], here[key], f"{prefix}.{key}")
            return Difference(f"{prefix}.{key}", card.get(key), here.get(key))
    return Difference(prefix, card, here)


def _compare_replay(card: Mapping[str, Any], here: Mapping[str, Any], result: VerifyResult) -> VerifyResult:
    """Byte mode: every game, the summary and finally the whole card must be identical."""
    first, result.identical_games = _first_game_difference(card["outcomes"], here["outcomes"])
    if first is not None:
        return result._fail(first)
    if card["summary"] != here["summary"]:
        return result._fail(_first_summary_difference(card["summary"], here["summary"]))
    if card["digest"] != here["digest"]:
        key = next(k for k in sorted(card.keys() | here.keys()) if k != "digest" and card.get(k) != here.get(k))
        return result._fail(Difference(f"card.{key}", card.get(key), here.get(key), "the re-derived card differs"))
    result.verdict = MATCH
    return result


def _compare_interval(card: Mapping[str, Any], here: Mapping[str, Any], result: VerifyResult) -> VerifyResult:
    """Platform tuple differs: the re-derived win rate must lie in the card's own 95% Wilson interval."""
    _, result.identical_games = _first_game_difference(card["outcomes"], here["outcomes"])
    theirs, ours = card["summary"]["p0_win_rate"], here["summary"]["p0_win_rate"]
    if theirs["rate"] is None or ours["rate"] is None:
        return result._fail(Difference("summary.p0_win_rate.rate", theirs["rate"], ours["rate"],
                                       "no completed game to compare"))
    if not theirs["low"] <= ours["rate"] <= theirs["high"]:
        fields_named = ", ".join(diff.name for diff in result.tuple_differences)
        return result._fail(Difference(
            "summary.p0_win_rate.rate", theirs["rate"], ours["rate"],
            f"outside the card's 95% Wilson interval [{theirs['low']:.4f}, {theirs['high']:.4f}]; "
            f"the platform tuple differs in {fields_named}"))
    result.verdict = MATCH_WITHIN_INTERVAL
    return result


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


def verify_scorecard(path: str | Path, *, repo: str | Path = ".", section: str | None = None,
                     strict: bool = False, fetch: bool = True) -> VerifyResult:
    """Re-derive the score card at ``path`` from its pins in the repository ``repo``.

    ``section`` names the params.yaml section whose view/temperature the model players used (default:
    every tournament-shaped section listing the player, the one matching the pin's config hash first).
    ``strict`` turns a platform-tuple difference into a MISMATCH instead of an interval comparison.
    ``fetch`` lets a model missing from the workspace and the DVC cache be fetched from the DVC remote.
    """
    repo = Path(repo).resolve()
    card = _load_card(Path(path))
    result = VerifyResult(card=str(path), title=_title(card))
    try:
        verify_card(card, str(path))
    except (TournamentError, KeyError, TypeError, ValueError) as error:
        return result._fail(Difference("card", "self-consistent", "inconsistent", str(error)))
    result.card_summary = card["summary"]
    params = load_params(repo / "params.yaml") if (repo / "params.yaml").exists() else {}
    if "eval" in params:
        here_eval = EvalConfig.from_dict(params["eval"], "eval")
        if here_eval.digest() != card["eval_config_hash"]:
            return result._fail(Difference("eval_config_hash", card["eval_config_hash"], here_eval.digest(),
                                           f"params.yaml eval is {json.dumps(here_eval.to_dict(), sort_keys=True)}, "
                                           f"the card's is {json.dumps(card['eval_config'], sort_keys=True)}"))
    with tempfile.TemporaryDirectory(prefix="arena-verify-") as scratch:
        players = []
        for index, entry in enumerate(card["players"]):
            player, config_source = _rebuild_player(index, entry, repo, params, section, Path(scratch), fetch, result)
            if player is None:
                return result
            hard, soft = _compare_pins(f"players[{index}] {entry['spec']}", entry["pin"], player.pin(), config_source)
            if hard:
                return result._fail(hard[0])
            result.tuple_differences.extend(soft)
            players.append(player)
        if strict and result.tuple_differences:
            return result._fail(result.tuple_differences[0])
        schedule = _schedule(card)
        wrong_schedule = _schedule_difference(card, schedule)
        if wrong_schedule is not None:
            return result._fail(wrong_schedule)
        records = play_match(card["game_id"], (players[0], players[1]), schedule, variant=card["variant"],
                             progress=False)
    here = make_scorecard(EvalConfig.from_dict(card["eval_config"]), GameEntry(card["game_id"], card["variant"]),
                          players[0].spec, players[1].spec, records)
    result.games, result.summary = len(records), here["summary"]
    if result.tuple_differences:
        return _compare_interval(card, here, result)
    return _compare_replay(card, here, result)
