"""`arena import-traces`: a verifiers run of arena's game environments, every game replayed, as pinned score cards.

A verifiers run writes ``traces.jsonl``: one episode per line, each with one trace per role, and arena's
environments put the game record (actions, rewards, transcript digest) in every trace's
``info["arena"]``. Here each game is replayed from its actions with arena's own rules; a game whose
replay does not give the digest and rewards its traces claim is rejected, naming the game and both
digests. The games become score cards exactly like a tournament's, under the repository's ``eval``
section (same games, same seeds), so they join its leaderboard; their outcomes also keep the actions, so
``arena verify`` re-derives an imported card by replaying them (the models sat behind an endpoint and
cannot be re-run from a pin).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.errors import ArenaError
from arena.core.hashing import digest_config
from arena.eval.config import EvalConfig, GameEntry
from arena.eval.scorecards import card_digest, make_scorecard
from arena.games.registry import get_spec, make_game, replay
from arena.games.variants import game_label
from arena.play.external import ROLES

PIN_KIND = "imported"
INFO_KEY = "arena"
REWARD_KEY = "outcome"
TRACES_FILE = "traces.jsonl"
# Fields of the game record that both roles' traces must agree on (the rest names the role).
_ROLE_FIELDS = ("role", "seat", "model", "base_url")


class TraceImportError(ArenaError):
    """A verifiers trace that arena cannot accept, with what is wrong and what to do."""


def trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """Each path as a traces file: a ``traces.jsonl`` itself, or every one under a run (or output) directory."""
    files: list[Path] = []
    for path in map(Path, paths):
        found = [path] if path.is_file() else sorted(path.rglob(TRACES_FILE)) if path.is_dir() else []
        if not found:
            raise TraceImportError(f"{path}: no {TRACES_FILE} here; pass a verifiers run directory or its "
                                   f"{TRACES_FILE} (verifiers writes it under --output-dir/<run name>/)")
        files.extend(found)
    return files


def read_episodes(paths: Iterable[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """(where, episode) for every line of every traces file; ``where`` is ``file:line``."""
    episodes = []
    for path in trace_files(paths):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                episode = json.loads(line)
            except ValueError as error:
                raise TraceImportError(f"{where}: not JSON ({error}); is this a verifiers {TRACES_FILE}?") from None
            if not isinstance(episode, dict) or not isinstance(episode.get("traces"), list):
                raise TraceImportError(f"{where}: not a verifiers episode (no traces list)")
            episodes.append((where, episode))
    return episodes


def spec_of(model: str, base_url: str) -> str:
    """The player's spec: the model at its endpoint, as arena names frontier players (``openai:MODEL@URL``)."""
    return f"openai:{model}@{base_url}"


def _pin(trace: Mapping[str, Any], info: Mapping[str, Any], env_id: str) -> dict[str, Any]:
    """What an imported score is pinned to: endpoint, model, the agent's whole config, the verifiers version."""
    agent = trace.get("agent") or {}
    return {
        "kind": PIN_KIND,
        "endpoint": info["base_url"],
        "model": info["model"],
        "env_id": env_id,
        "verifiers": str((trace.get("verifiers") or {}).get("version")),
        "config_hash": digest_config(agent.get("config") or {}),
    }


def _role_traces(episode: Mapping[str, Any], where: str) -> dict[str, Mapping[str, Any]]:
    if episode.get("errors"):
        first = episode["errors"][0]
        raise TraceImportError(f"{where}: the episode failed ({first.get('type')}: {first.get('message')}); "
                               "rerun it (verifiers' eval --resume) or drop it")
    found: dict[str, Mapping[str, Any]] = {}
    for trace in episode["traces"]:
        info = (trace.get("info") or {}).get(INFO_KEY)
        role = (trace.get("agent") or {}).get("name")
        if isinstance(info, Mapping) and role in ROLES:
            if role in found:
                raise TraceImportError(f"{where}: role {role} has two traces; one game has one trace per role")
            found[role] = trace
    if sorted(found) != sorted(ROLES):
        raise TraceImportError(f"{where}: an arena game episode has one trace per role {ROLES} with "
                               f"info[{INFO_KEY!r}]; found {sorted(found)} (not one of arena's environments?)")
    return found


def episode_record(episode: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The game record of one episode with its seats' specs and pins, after checking both traces agree."""
    traces = _role_traces(episode, where)
    infos = {role: traces[role]["info"][INFO_KEY] for role in ROLES}
    shared = [{k: v for k, v in infos[role].items() if k not in _ROLE_FIELDS} for role in ROLES]
    if shared[0] != shared[1]:
        raise TraceImportError(f"{where}: the two roles' traces record different games; the traces were edited")
    record = dict(shared[0])
    task = ((episode.get("task") or {}).get("data")) or {}
    for key in ("game_id", "seed", "first_seat"):
        if task.get(key) != record.get(key):
            raise TraceImportError(f"{where}: the task says {key} = {task.get(key)!r}, the game record "
                                   f"{record.get(key)!r}; the traces were edited")
    env_id = str((episode.get("env") or {}).get("id"))
    by_seat: dict[int, tuple[str, dict[str, Any]]] = {}
    for role in ROLES:
        seat = 1 - record["first_seat"] if role == ROLES[1] else record["first_seat"]
        if infos[role].get("seat") != seat:
            raise TraceImportError(f"{where}: {role} says seat {infos[role].get('seat')}, the schedule says {seat}")
        by_seat[seat] = (spec_of(infos[role]["model"], infos[role]["base_url"]),
                         _pin(traces[role], infos[role], env_id))
    record["players"] = [by_seat[0][0], by_seat[1][0]]
    record["pins"] = [by_seat[0][1], by_seat[1][1]]
    record["claimed_rewards"] = {role: ((traces[role].get("rewards") or {}).get(REWARD_KEY) or {}).get("score")
                                 for role in ROLES}
    return record


def replayed(record: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``record`` with its result re-derived from its actions by arena's rules; a game that disagrees is rejected."""
    game_id, seed, actions = record.get("game_id"), record.get("seed"), record.get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise TraceImportError(f"{where}: {game_id} seed {seed} has no list of actions to replay")
    label = f"{where}: {game_id} seed {seed}"
    if record.get("errored"):
        try:
            game = make_game(game_id, seed, record.get("variant"))
            for action in actions:
                game.step(action)
        except (ValueError, RuntimeError) as error:
            raise TraceImportError(f"{label} is marked errored and its actions do not replay ({error})") from None
        if game.done:
            raise TraceImportError(f"{label} is marked errored, yet its actions finish the game; the trace was edited")
        return {**record, "rewards": None, "round_rewards": None, "invalid_moves": None, "transcript_digest": None}
    try:
        result = replay(game_id, record.get("variant"), seed, actions)
    except (ValueError, RuntimeError) as error:
        raise TraceImportError(f"{label} (claimed transcript digest {record.get('transcript_digest')}) does not "
                               f"replay ({error}); the trace is rejected") from None
    if result.transcript_digest != record.get("transcript_digest"):
        raise TraceImportError(
            f"{label}: the actions replay to transcript digest {result.transcript_digest}, the trace claims "
            f"{record.get('transcript_digest')}; the trace was edited or made by other game code, and is rejected")
    here = {"rewards": list(result.rewards), "round_rewards": [list(r) for r in result.round_rewards],
            "invalid_moves": list(result.invalid_moves), "forfeit_by": result.forfeit_by, "reason": result.reason,
            "turns": result.turns}
    for key, value in here.items():
        if record.get(key) != value:
            raise TraceImportError(f"{label} (digest {result.transcript_digest}): {key} = {record.get(key)!r} in "
                                   f"the trace, {value!r} on replay; the trace is rejected")
    return {**record, **here}


def _check_claims(record: Mapping[str, Any], where: str) -> None:
    """Each trace's verifiers reward (what a trainer read) must be that seat's replayed outcome."""
    for role, claimed in (record.get("claimed_rewards") or {}).items():
        seat = record["first_seat"] if role == ROLES[0] else 1 - record["first_seat"]
        expected = 0.0 if record["rewards"] is None else record["rewards"][seat]
        if claimed != expected:
            raise TraceImportError(f"{where}: {record['game_id']} seed {record['seed']} (digest "
                                   f"{record.get('transcript_digest')}): {role}'s reward {claimed!r} is not its "
                                   f"replayed outcome {expected!r}; the trace is rejected")


def _schedule_order(records: Sequence[Mapping[str, Any]], config: EvalConfig, where: str) -> list[Mapping[str, Any]]:
    """The records in seed order, exactly one per evaluation seed."""
    by_seed: dict[int, Mapping[str, Any]] = {}
    for record in records:
        if record["seed"] in by_seed:
            raise TraceImportError(f"{where}: seed {record['seed']} was played twice; run verifiers' eval with "
                                   "-r 1 (one game per seed, as a score card holds)")
        by_seed[record["seed"]] = record
    missing = [seed for seed in config.seeds if seed not in by_seed]
    extra = sorted(set(by_seed) - set(config.seeds))
    if missing or extra:
        seeds = config.seeds
        raise TraceImportError(
            f"{where}: the eval section asks for seeds {seeds.start}..{seeds.stop - 1}; the traces lack "
            f"{len(missing)} of them and hold {len(extra)} others. Run the environment on exactly those seeds: "
            f"--env.taskset.seed-start {seeds.start} -n {len(seeds)}")
    for seed in config.seeds:
        if by_seed[seed]["first_seat"] != (seed - config.seeds.start) % 2:
            raise TraceImportError(f"{where}: seed {seed} has player_a in seat {by_seed[seed]['first_seat']}; the "
                                   "schedule puts it in seat (seed - first eval seed) % 2, so seats swap every game")
    return [by_seed[seed] for seed in config.seeds]


def cards_from_records(records: Sequence[Mapping[str, Any]], config: EvalConfig,
                       code: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One score card per (game, role pair), each keeping every game's actions in its outcomes."""
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        spec_a = record["players"][record["first_seat"]]
        spec_b = record["players"][1 - record["first_seat"]]
        if spec_a == spec_b:
            raise TraceImportError(f"both roles are {spec_a}: self-play makes no score card; put different "
                                   "models in player_a and player_b (--env.player-b.model)")
        label = game_label(record["game_id"], get_spec(record["game_id"]).validate_variant(record["variant"]))
        groups.setdefault((label, spec_a, spec_b), []).append(record)
    # Records hold the full variant (defaults filled in); the eval section may list only the overrides.
    by_label = {game_label(game.game_id, get_spec(game.game_id).validate_variant(game.variant)): game
                for game in config.games}
    cards = []
    for (label, spec_a, spec_b), group in sorted(groups.items()):
        if label not in by_label:
            raise TraceImportError(f"the traces play {label}, which the eval section does not list "
                                   f"({[game.label for game in config.games]}); pass --env.taskset.variant "
                                   "to match it")
        ordered = _schedule_order(group, config, f"{spec_a} vs {spec_b} on {label}")
        card = make_scorecard(config, GameEntry(by_label[label].game_id, by_label[label].variant),
                              spec_a, spec_b, ordered, code=code)
        for outcome, record in zip(card["outcomes"], ordered, strict=True):
            outcome["actions"] = list(record["actions"])
        card["digest"] = card_digest(card)
        cards.append(card)
    return cards


def import_records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every game of the traces, checked and replayed (the first bad one raises TraceImportError)."""
    records = []
    for where, episode in read_episodes(paths):
        try:
            record = replayed(episode_record(episode, where), where)
        except (KeyError, TypeError, AttributeError) as error:
            raise TraceImportError(f"{where}: a malformed arena game record ({type(error).__name__}: {error}); "
                                   "the traces were edited or not written by arena's environments") from None
        _check_claims(record, where)
        records.append(record)
    if not records:
        raise TraceImportError("the traces hold no games")
    return records


def is_imported(card: Mapping[str, Any]) -> bool:
    """Whether a card was imported from traces (both pins of kind ``imported``)."""
    return all(isinstance(p.get("pin"), Mapping) and p["pin"].get("kind") == PIN_KIND for p in card["players"])


def rederive_card(card: Mapping[str, Any], code: Mapping[str, str] | None) -> dict[str, Any]:
    """An imported card rebuilt from its own actions and pins by arena's rules (what ``arena verify`` compares)."""
    config = EvalConfig.from_dict(card["eval_config"])
    pins = {entry["spec"]: entry["pin"] for entry in card["players"]}
    start = config.seeds.start
    records = []
    for k, outcome in enumerate(card["outcomes"]):
        record = {"game_id": card["game_id"], "variant": card["variant"], "seed": outcome["seed"],
                  "players": list(outcome["players"]), "pins": [pins.get(s) for s in outcome["players"]],
                  "first_seat": (outcome["seed"] - start) % 2, "actions": outcome.get("actions"),
                  "errored": outcome.get("errored"), "error": outcome.get("error")}
        game = replayed({**record, "transcript_digest": outcome.get("transcript_digest")}, f"outcomes[{k}]") \
            if record["errored"] else _replay_only(record, f"outcomes[{k}]")
        records.append(game)
    return cards_from_records(records, config, code)[0]


def _replay_only(record: dict[str, Any], where: str) -> dict[str, Any]:
    """The record's result from its actions alone (no claim to check: verify compares the rebuilt card)."""
    if not isinstance(record.get("actions"), list):
        raise TraceImportError(f"{where}: an imported card's outcome has no actions to replay")
    result = replay(record["game_id"], record["variant"], record["seed"], record["actions"])
    return {**record, "rewards": list(result.rewards), "round_rewards": [list(r) for r in result.round_rewards],
            "invalid_moves": list(result.invalid_moves), "transcript_digest": result.transcript_digest}


def check_out(out: str | Path, inputs: Sequence[str | Path]) -> None:
    """Refuse an ``out`` that replacing would lose data: a file, a directory holding the input traces, or
    a non-empty directory that is not an earlier ``arena import-traces`` archive (only its cards and files)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TraceImportError(f"--out {out} is not a directory; name a new directory for the score-card archive")
    target = out.resolve()
    for path in map(Path, inputs):
        source = path.resolve()
        if source == target or target in source.parents:
            raise TraceImportError(f"--out {out} holds the input traces {path}; the archive replaces --out whole, "
                                   "so name a directory apart from the traces")
    if not out.is_dir():
        return
    for entry in sorted(out.iterdir()):
        if not _own_output(entry):
            raise TraceImportError(f"--out {out} holds {entry.name}, which is not an earlier arena import-traces "
                                   "output; the archive replaces --out whole, so name a new or empty directory")


def _own_output(entry: Path) -> bool:
    """Whether ``entry`` is a file that ``import_traces`` writes: an imported card, excluded.json, leaderboard.json."""
    from arena.eval.scorecards import CARD_SUFFIX, EXCLUDED_FILE

    if entry.is_symlink() or not entry.is_file():
        return False
    if entry.name in (EXCLUDED_FILE, "leaderboard.json"):
        return True
    if not entry.name.endswith(CARD_SUFFIX):
        return False
    try:
        card = json.loads(entry.read_text(encoding="utf-8"))
        return isinstance(card, dict) and is_imported(card)
    except (ValueError, TypeError, AttributeError, KeyError):
        return False


def import_traces(paths: Sequence[str | Path], out: str | Path, *, params: str | Path = "params.yaml",
                  section: str = "eval", code: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Replay every game of the traces, write their score cards to the archive ``out`` (replaced whole) and
    ``out/leaderboard.json`` (TrueSkill ratings over them); return the leaderboard. ``out`` must be new, empty
    or this command's earlier output (``check_out``): nothing else is ever replaced, inputs never.

    The cards are measured under ``params``' ``section`` (its games and seeds), like every card of the repository.
    """
    from arena.core.config import load_params
    from arena.eval.leaderboard import build_leaderboard, write_leaderboard
    from arena.eval.scorecards import write_scorecards

    check_out(out, paths)
    loaded = load_params(params)
    if section not in loaded:
        raise TraceImportError(f"{params} has no {section}: section; imported cards are measured under it "
                               "(its games and seeds), so pass --params with one")
    config = EvalConfig.from_dict(loaded[section], section)
    cards = cards_from_records(import_records(paths), config, code)
    write_scorecards(out, cards)
    board = build_leaderboard(cards)
    write_leaderboard(Path(out) / "leaderboard.json", board)
    return board
