"""The ReST win set: the learner's verified won games, deduplicated, with earlier rounds' wins replayed, and its audit.

Each game is replayed before it enters (its transcript digest must match, every learner move legal, the win its
own), identical games are kept once, and wins of earlier rounds are replayed into the set (a bounded buffer).
On disk (``data/`` of a round's training output): ``train.jsonl`` (rows exactly as ``mlx_lm lora --data`` reads
them), ``provenance.jsonl`` (row i's game: transcript digest, seat, round, move index) and ``games.jsonl``
(what it takes to replay each kept game). A thinking learner's (``rest.think``) rows also carry each move's
reasoning, text and token ids (``REASONING_KEYS``), checked against the game record's reasoning digest: the whole
reply is what the round trains (``arena.train.rest.thinksft``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.errors import ArenaError
from arena.games.base import Observation
from arena.players.base import reasoning_digest
from arena.players.prompts import prompt_text, view_messages
from arena.train.config import RestConfig

DATA_DIR = "data"
ROWS_FILE = "train.jsonl"
PROVENANCE_FILE = "provenance.jsonl"
GAMES_FILE = "games.jsonl"
# What a thinking learner's row keeps beside its prompt and move: its reasoning's text and token ids.
REASONING_KEYS = ("reasoning", "reasoning_tokens")


# ----------------------------------------------------------------------------------------------- won games


def learner_spec_for(snapshot: str | Path) -> str:
    """The spec an MLXPlayer built from ``snapshot`` records in its games (without loading the model)."""
    return f"mlx:{Path(snapshot).as_posix()}"


def learner_seat(record: Mapping[str, Any], learner_spec: str) -> int:
    """The learner's seat in a game against another player; a ValueError if it is absent or in both seats."""
    seats = [seat for seat, spec in enumerate(record["players"]) if spec == learner_spec]
    if len(seats) != 1:
        raise ValueError(f"game seed {record['seed']}: players {record['players']} should hold the learner "
                         f"{learner_spec} in exactly one seat (ReST plays against the curriculum's opponents)")
    return seats[0]


def learner_won(record: Mapping[str, Any], learner_spec: str) -> bool:
    """Whether the game finished and the learner's reward in it is positive."""
    return not record["errored"] and record["rewards"][learner_seat(record, learner_spec)] > 0


def game_key(game: Mapping[str, Any]) -> tuple[str, int]:
    """Identity of a kept game: identical transcripts from the same seat are one game (the dedup key)."""
    return game["transcript_digest"], game["learner_seat"]


def won_game(record: Mapping[str, Any], learner_spec: str, view: str, round_number: int) -> dict[str, Any]:
    """What the win set keeps of a game: how to replay it, its outcome, and the learner's rows as it saw them
    (a thinking learner's with its reasoning, and the game with its reasoning digest)."""
    seat = learner_seat(record, learner_spec)
    rows = []
    for index, decision in enumerate(record["decisions"]):
        if decision["player"] != seat:
            continue
        observation = Observation(record["game_id"], seat, decision["text"], decision["observation"],
                                  tuple(decision["legal"]))
        row = {"decision": index, "prompt": prompt_text(observation, view), "action": decision["action"]}
        if decision.get("reasoning_tokens") is not None:
            row.update({key: decision[key] for key in REASONING_KEYS})
        rows.append(row)
    game = {
        "game_id": record["game_id"], "variant": record["variant"], "seed": record["seed"],
        "salt": record["salt"], "first_seat": record["first_seat"], "learner_seat": seat,
        "opponent": record["players"][1 - seat], "actions": list(record["actions"]),
        "transcript_digest": record["transcript_digest"], "rewards": list(record["rewards"]),
        "forfeit_by": record["forfeit_by"], "round": round_number, "rows": rows,
    }
    if "reasoning_digest" in record:  # only a thinking learner's games have one: the others keep their bytes
        game["reasoning_digest"] = record["reasoning_digest"]
    return game


# ----------------------------------------------------------------------------------------------- verification


class _Unreplayable(Exception):
    """The recorded actions do not make a legal, finished game (the message says where they stop)."""


def replay_game(game: Mapping[str, Any], view: str,
                where: str = "") -> tuple[Any, list[dict[str, Any]], list[Observation], list[int]]:
    """Replay the game from its seed and actions: its result, the learner's rows as the replay presents them, the
    learner's observations (row for row) and every move's seat; ``_Unreplayable`` where the actions stop making one."""
    from arena.games.registry import make_game

    seat = game["learner_seat"]
    replayed = make_game(game["game_id"], game["seed"], game["variant"])
    expected, observations, seats = [], [], []
    for index, action in enumerate(game["actions"]):
        if replayed.done:
            raise _Unreplayable(f"{where}: the game ends after {index} of {len(game['actions'])} moves")
        observation = replayed.observation()
        seats.append(observation.player_id)
        if observation.player_id == seat:
            if action not in observation.legal_actions:
                raise _Unreplayable(f"{where}: learner move {index} {action!r} is not one of "
                                    f"{list(observation.legal_actions)}")
            expected.append({"decision": index, "prompt": prompt_text(observation, view), "action": action})
            observations.append(observation)
        replayed.step(action)
    if not replayed.done:
        raise _Unreplayable(f"{where}: {len(game['actions'])} moves leave the game unfinished")
    return replayed.result(), expected, observations, seats


def _reasoning_problems(game: Mapping[str, Any], seats: Sequence[int], where: str) -> list[str]:
    """A thinking learner's rows against the game record's reasoning digest (every move's seat, tokens and text)."""
    rows = {row["decision"]: row for row in game["rows"]}
    if "reasoning_digest" not in game and not any(key in row for row in rows.values() for key in REASONING_KEYS):
        return []
    if "reasoning_digest" not in game or not all(key in row for row in rows.values() for key in REASONING_KEYS):
        return [f"{where}: some rows carry reasoning and some (or the game's reasoning digest) do not"]
    decisions = [{"player": seat, **{key: rows[index][key] for key in REASONING_KEYS if index in rows}}
                 for index, seat in enumerate(seats)]
    if reasoning_digest(decisions) != game["reasoning_digest"]:
        return [f"{where}: the rows' reasoning does not match the game record's reasoning digest"]
    return []


def _outcome_problems(game: Mapping[str, Any], result: Any, expected: list[dict[str, Any]], where: str,
                      allow_forfeit: bool) -> list[str]:
    """What is wrong with a replayed game's outcome and rows against the recorded ones."""
    seat = game["learner_seat"]
    problems = []
    if result.transcript_digest != game["transcript_digest"]:
        problems.append(f"{where}: transcript digest {result.transcript_digest[:16]} != recorded "
                        f"{game['transcript_digest'][:16]}")
    if result.rewards[seat] <= 0:
        problems.append(f"{where}: the learner's reward is {result.rewards[seat]}, not a win")
    forfeit = result.forfeit_by is not None
    if forfeit and not allow_forfeit:
        problems.append(f"{where}: won by the opponent's invalid-move forfeit, which rest.keep_forfeit_wins excludes")
    if sum(result.invalid_moves) and not (forfeit and allow_forfeit):
        problems.append(f"{where}: {sum(result.invalid_moves)} invalid move(s) in the game")
    if list(result.rewards) != list(game["rewards"]):
        problems.append(f"{where}: replayed rewards {list(result.rewards)} != recorded {game['rewards']}")
    moves = [{key: value for key, value in row.items() if key not in REASONING_KEYS} for row in game["rows"]]
    if expected != moves:
        problems.append(f"{where}: the rows differ from the learner's decisions in the replayed game")
    return problems


def check_game(game: Mapping[str, Any], view: str, allow_forfeit: bool) -> list[str]:
    """Replay a kept game from its seed and actions; list every reason it may not train the model (none: it may).

    Checks: the transcript digest matches the recorded one; every learner move was a legal action; every move
    was accepted (an opponent's invalid moves are tolerated only in a forfeit win that is allowed); the game
    is a win for the learner by its own outcome (not by the opponent's forfeit unless ``allow_forfeit``);
    and the rows are exactly the learner's decisions, prompt for prompt, as the replay presents them (a thinking
    learner's reasoning, too, as the game record's reasoning digest has it).
    """
    where = f"{game['game_id']} seed {game['seed']} salt {game['salt']} seat {game['learner_seat']}"
    try:
        result, expected, _, seats = replay_game(game, view, where)
    except _Unreplayable as error:
        return [str(error)]
    return _outcome_problems(game, result, expected, where, allow_forfeit) + _reasoning_problems(game, seats, where)


# ----------------------------------------------------------------------------------------------- selection


def _candidate(record: Mapping[str, Any], learner_spec: str, config: RestConfig, round_number: int,
               stats: dict[str, Any]) -> dict[str, Any] | None:
    """The record as a won game with rows to learn from, or None (counting in ``stats`` why it is not one)."""
    if record["errored"]:
        stats["errored"] += 1
        return None
    if not learner_won(record, learner_spec):
        return None
    stats["won"] += 1
    if record["forfeit_by"] is not None:
        stats["won_by_forfeit"] += 1
        if not config.keep_forfeit_wins:
            return None
    game = won_game(record, learner_spec, config.view, round_number)
    if not game["rows"]:  # e.g. the opponent forfeited before the learner's first move: nothing to learn
        stats["without_decisions"] += 1
        return None
    return game


def select_wins(records: Sequence[Mapping[str, Any]], learner_spec: str, config: RestConfig,
                round_number: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The round's verified, deduplicated wins, and counts of what was played, won, forfeited and rejected."""
    stats = {"games": len(records), "errored": 0, "won": 0, "won_by_forfeit": 0, "without_decisions": 0,
             "duplicates": 0, "rejected": 0}
    rejections: list[str] = []
    kept: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        game = _candidate(record, learner_spec, config, round_number, stats)
        if game is None:
            continue
        if game_key(game) in kept:
            stats["duplicates"] += 1
            continue
        problems = check_game(game, config.view, config.keep_forfeit_wins)
        if problems:
            stats["rejected"] += 1
            rejections += problems
            continue
        kept[game_key(game)] = game
    stats["forfeit_fraction"] = round(stats["won_by_forfeit"] / stats["won"], 6) if stats["won"] else 0.0
    stats["rejections"] = rejections[:20]
    return list(kept.values()), stats


def replay_buffer(previous: Sequence[dict[str, Any]], fresh: Sequence[dict[str, Any]], size: int,
                  rng: np.random.Generator) -> list[dict[str, Any]]:
    """Up to ``size`` earlier wins to train on again: newest rounds first, a random subset of the round that
    does not fit whole; games identical to a fresh one are dropped (kept once, as fresh)."""
    seen = {game_key(game) for game in fresh}
    candidates = [game for game in previous if game_key(game) not in seen]
    chosen: list[dict[str, Any]] = []
    for round_number in sorted({game["round"] for game in candidates}, reverse=True):
        group = [game for game in candidates if game["round"] == round_number]
        room = size - len(chosen)
        if room <= 0:
            break
        if len(group) > room:
            group = [group[i] for i in sorted(rng.choice(len(group), size=room, replace=False))]
        chosen += group
    return chosen


def dataset_rows(games: Sequence[Mapping[str, Any]], rng: np.random.Generator,
                 view: str = "compact") -> tuple[list[dict], list[dict]]:
    """Chat rows for ``mlx_lm lora`` and their provenance, line for line, in one shuffled order.

    Each row is the conversation the player was shown in ``view`` (the full view's starts with its system message),
    then the move as the assistant's reply (and a thinking learner's reasoning before it, under ``REASONING_KEYS``).
    Shuffled because mlx-lm's batcher groups rows by length in file order: without it a batch would hold one
    round's or one seed's rows only.
    """
    rows, provenance = [], []
    for game in games:
        for row in game["rows"]:
            rows.append({"messages": [*view_messages(row["prompt"], view),
                                      {"role": "assistant", "content": row["action"]}],
                         **{key: row[key] for key in REASONING_KEYS if key in row}})
            provenance.append({"transcript_digest": game["transcript_digest"], "learner_seat": game["learner_seat"],
                               "round": game["round"], "decision": row["decision"]})
    order = rng.permutation(len(rows)) if rows else []
    return [rows[i] for i in order], [provenance[i] for i in order]


# ----------------------------------------------------------------------------------------------- files


def jsonl(items: Sequence[Mapping[str, Any]]) -> str:
    """One sorted-key JSON object per line."""
    return "".join(json.dumps(item, sort_keys=True, ensure_ascii=False) + "\n" for item in items)


def write_win_set(data_dir: Path, games: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                  provenance: Sequence[Mapping[str, Any]]) -> None:
    """The dataset directory: train.jsonl (pure chat rows), provenance.jsonl (line-aligned) and games.jsonl."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / ROWS_FILE).write_text(jsonl(rows))
    (data_dir / PROVENANCE_FILE).write_text(jsonl(provenance))
    replayable = [{k: v for k, v in game.items() if k != "rows"} for game in games]
    (data_dir / GAMES_FILE).write_text(jsonl(sorted(replayable, key=lambda g: (g["round"], *game_key(g)))))


def load_win_set(train_dir: str | Path) -> list[dict[str, Any]]:
    """The games (with their rows) of an earlier round's win set, rebuilt from its three files."""
    data_dir = Path(train_dir) / DATA_DIR
    if not data_dir.is_dir():
        raise ArenaError(f"{train_dir} has no {DATA_DIR}/ win set: it is not a ReST training output "
                         "(run `dvc repro` with loop: rest, or start the chain with the train0 stage)")

    def read(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (data_dir / name).read_text(encoding="utf-8").splitlines()]

    games = {game_key(game): {**game, "rows": []} for game in read(GAMES_FILE)}
    rows, provenance = read(ROWS_FILE), read(PROVENANCE_FILE)
    if len(rows) != len(provenance):
        raise ArenaError(f"{data_dir}: {len(rows)} rows but {len(provenance)} provenance lines; rebuild the round")
    for row, origin in zip(rows, provenance, strict=True):
        key = (origin["transcript_digest"], origin["learner_seat"])
        if key not in games:
            raise ArenaError(f"{data_dir}: a row comes from game {key[0][:16]} (seat {key[1]}), "
                             f"which {GAMES_FILE} does not list")
        user, assistant = row["messages"][-2:]
        games[key]["rows"].append({"decision": origin["decision"], "prompt": user["content"],
                                   "action": assistant["content"],
                                   **{name: row[name] for name in REASONING_KEYS if name in row}})
    for game in games.values():
        game["rows"].sort(key=lambda r: r["decision"])
    return list(games.values())


def audit(games: Sequence[Mapping[str, Any]], config: RestConfig, round_number: int) -> dict[str, Any]:
    """Re-check a random sample of the final win set (fresh and replayed games alike) with ``check_game``."""
    rng = np.random.default_rng([config.seed, round_number, 1])
    picked = sorted(rng.choice(len(games), size=min(config.audit_games, len(games)), replace=False)) if games else []
    failures, passed = [], 0
    for index in picked:
        problems = check_game(games[index], config.view, config.keep_forfeit_wins)
        passed += not problems
        failures += problems
    forfeits = sum(games[i]["forfeit_by"] is not None for i in picked)
    return {"checked": len(picked), "passed": passed, "failures": failures, "forfeit_wins_checked": forfeits}
