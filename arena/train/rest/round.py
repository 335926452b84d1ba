"""ReST-EM rounds: sample games at the curriculum's tiers, keep the verified wins, LoRA-SFT on them with mlx-lm.

One round uses the same stages as a GRPO round (``loop: rest`` in params.yaml selects this module):

* rollouts@rN (``sample_round``): probe the curriculum, then play K games per training seed at temperature > 0
  against the chosen tiers; the shard has the usual record format, ``curriculum.json`` lies beside it.
* train@rN (``train_rest_round``): the learner's decisions in games it won (the verifiable reward is the outcome
  alone) become chat-format rows for ``mlx_lm lora``; each game is replayed before it enters (its transcript
  digest must match, every learner move legal, the win its own), identical games are kept once, and wins of
  earlier rounds are replayed into the set (a bounded buffer). An audit re-checks a sample of the final set.
  Then mlx-lm's own trainer fits a LoRA adapter from the base model (ReST-EM) or from the previous snapshot.

The round's training output directory holds ``data/train.jsonl`` (rows exactly as ``mlx_lm lora --data`` reads
them), ``data/provenance.jsonl`` (row i's game: transcript digest, seat, round, move index),
``data/games.jsonl`` (what it takes to replay each kept game), ``audit.json``, ``summary.json``,
``train_log.jsonl`` and the weights fuse@rN merges.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.core import seeds as seed_plan
from arena.core.artifacts import atomic_dir, dump_json
from arena.core.config import as_dict, require
from arena.core.errors import ArenaError
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig
from arena.games.base import Observation
from arena.play.match import Slot, play_match
from arena.play.records import SHARD_FILE, read_shard, write_shard
from arena.players.mlx import MLXPlayer, prompt_text
from arena.players.scripted import make_scripted
from arena.train.config import CurriculumConfig, RestConfig
from arena.train.curriculum import CURRICULUM_FILE, Task, easier_task, ladder, plan_round

DATA_DIR = "data"
ROWS_FILE = "train.jsonl"
PROVENANCE_FILE = "provenance.jsonl"
GAMES_FILE = "games.jsonl"
AUDIT_FILE = "audit.json"
SUMMARY_FILE = "summary.json"


# ----------------------------------------------------------------------------------------------- sampling


def rest_seeds(seeds: SeedsConfig, config: RestConfig, round_number: int) -> range:
    """Round r's training seeds (the seed plan's ReST block)."""
    return seed_plan.rest_seeds(seeds, config.seeds_per_round, round_number)


def rest_schedule(seeds: Sequence[int], samples: int, salt_offset: int = 0) -> list[Slot]:
    """K games per seed, each with its own sampling salt; seats alternate so both seats are sampled even for K = 1."""
    return [Slot(seed, (index + k) % 2, salt=salt_offset + k) for index, seed in enumerate(seeds)
            for k in range(samples)]


def _play_tasks(learner: MLXPlayer, tasks: Sequence[Task], seeds: range, samples: int, salt_offset: int,
                progress: bool) -> list[dict[str, Any]]:
    """Seeds are dealt to the tasks in turn (seed i to task i mod n); returns the records task by task."""
    records = []
    for index, task in enumerate(tasks):
        mine = [seed for position, seed in enumerate(seeds) if position % len(tasks) == index]
        if mine:
            records += play_match(task.game, (learner, make_scripted(task.opponent)),
                                  rest_schedule(mine, samples, salt_offset), variant=task.variant,
                                  progress=progress)
    return records


def _learner_won(record: Mapping[str, Any], learner_spec: str) -> bool:
    return not record["errored"] and record["rewards"][learner_seat(record, learner_spec)] > 0


def _sample_until_a_win(learner: MLXPlayer, tasks: Sequence[Task], chosen: Sequence[int], rates: Sequence[float],
                        seeds: range, config: RestConfig, round_number: int,
                        progress: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Sample the chosen tiers; while no game is won, retry on the easiest untried tier (fresh salts, same seeds)."""
    records: list[dict[str, Any]] = []
    attempts: list[dict[str, Any]] = []
    tiers = list(chosen)
    tried = list(chosen)
    while True:
        played = _play_tasks(learner, [tasks[t] for t in tiers], seeds, config.samples_per_seed,
                             len(attempts) * config.samples_per_seed, progress)
        wins = sum(_learner_won(r, learner.spec) for r in played)
        attempts.append({"tiers": tiers, "games": len(played), "wins": wins})
        records += played
        lower = None if wins else easier_task(rates, tried)
        if lower is None:
            if not wins:
                print(f"round {round_number}: no game won at any tier of the curriculum; train@r{round_number} "
                      "will keep the previous weights unless earlier wins can be replayed", file=sys.stderr)
            return records, attempts
        print(f"round {round_number}: no game won at tiers {tiers}; lowering the difficulty to tier {lower} "
              f"({tasks[lower].label})", file=sys.stderr)
        tiers = [lower]
        tried.append(lower)


def sample_round(snapshot: str | Path, game: str, config: RestConfig, curriculum: CurriculumConfig,
                 seeds: SeedsConfig, round_number: int, out_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """rollouts@r (ReST): choose the round's tiers by probing, sample K games per seed there; write the shard.

    If not one sampled game is a win, the curriculum lowers the difficulty within the round: the untried task
    with the highest probe win rate is sampled on the same seeds with fresh salts (once per remaining task,
    until some game is won). Every attempt is kept in the shard and listed in ``curriculum.json``.
    """
    learner = MLXPlayer(snapshot, config.player_config)
    _, record = plan_round(learner, game, seeds, curriculum, progress=progress)
    rates = [row["win_rate"] or 0.0 for row in record["tasks"]]
    block = rest_seeds(seeds, config, round_number)
    records, attempts = _sample_until_a_win(learner, ladder(curriculum, game), record["chosen"], rates, block,
                                            config, round_number, progress)
    record.update(round=round_number, seeds=[block.start, block.stop], samples_per_seed=config.samples_per_seed,
                  attempts=attempts)
    with atomic_dir(out_dir) as tmp:
        write_shard(tmp / SHARD_FILE, records)
        (tmp / CURRICULUM_FILE).write_text(dump_json(record))
        write_meta(tmp, inputs={"snapshot": digest_path(snapshot)},
                   config={"loop": "rest", "rest": as_dict(config), "curriculum": as_dict(curriculum),
                           "game": game, "round": round_number, "learner": learner.spec})
    return record


# ----------------------------------------------------------------------------------------------- the win set


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


def game_key(game: Mapping[str, Any]) -> tuple[str, int]:
    """Identity of a kept game: identical transcripts from the same seat are one game (the dedup key)."""
    return game["transcript_digest"], game["learner_seat"]


def won_game(record: Mapping[str, Any], learner_spec: str, view: str, round_number: int) -> dict[str, Any]:
    """What the win set keeps of a game: how to replay it, its outcome, and the learner's rows as it saw them."""
    seat = learner_seat(record, learner_spec)
    rows = []
    for index, decision in enumerate(record["decisions"]):
        if decision["player"] != seat:
            continue
        observation = Observation(record["game_id"], seat, decision["text"], decision["observation"],
                                  tuple(decision["legal"]))
        rows.append({"decision": index, "prompt": prompt_text(observation, view), "action": decision["action"]})
    return {
        "game_id": record["game_id"], "variant": record["variant"], "seed": record["seed"],
        "salt": record["salt"], "first_seat": record["first_seat"], "learner_seat": seat,
        "opponent": record["players"][1 - seat], "actions": list(record["actions"]),
        "transcript_digest": record["transcript_digest"], "rewards": list(record["rewards"]),
        "forfeit_by": record["forfeit_by"], "round": round_number, "rows": rows,
    }


def check_game(game: Mapping[str, Any], view: str, allow_forfeit: bool) -> list[str]:
    """Replay a kept game from its seed and actions; list every reason it may not train the model (none: it may).

    Checks: the transcript digest matches the recorded one; every learner move was a legal action; every move
    was accepted (an opponent's invalid moves are tolerated only in a forfeit win that is allowed); the game
    is a win for the learner by its own outcome (not by the opponent's forfeit unless ``allow_forfeit``);
    and the rows are exactly the learner's decisions, prompt for prompt, as the replay presents them.
    """
    from arena.games.registry import make_game

    seat = game["learner_seat"]
    where = f"{game['game_id']} seed {game['seed']} salt {game['salt']} seat {seat}"
    replayed = make_game(game["game_id"], game["seed"], game["variant"])
    expected = []
    for index, action in enumerate(game["actions"]):
        if replayed.done:
            return [f"{where}: the game ends after {index} of {len(game['actions'])} moves"]
        observation = replayed.observation()
        if observation.player_id == seat:
            if action not in observation.legal_actions:
                return [f"{where}: learner move {index} {action!r} is not one of {list(observation.legal_actions)}"]
            expected.append({"decision": index, "prompt": prompt_text(observation, view), "action": action})
        replayed.step(action)
    if not replayed.done:
        return [f"{where}: {len(game['actions'])} moves leave the game unfinished"]
    result = replayed.result()
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
    if expected != game["rows"]:
        problems.append(f"{where}: the rows differ from the learner's decisions in the replayed game")
    return problems


def select_wins(records: Sequence[Mapping[str, Any]], learner_spec: str, config: RestConfig,
                round_number: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The round's verified, deduplicated wins, and counts of what was played, won, forfeited and rejected."""
    stats = {"games": len(records), "errored": 0, "won": 0, "won_by_forfeit": 0, "without_decisions": 0,
             "duplicates": 0, "rejected": 0}
    rejections: list[str] = []
    kept: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        if record["errored"]:
            stats["errored"] += 1
            continue
        if not _learner_won(record, learner_spec):
            continue
        stats["won"] += 1
        if record["forfeit_by"] is not None:
            stats["won_by_forfeit"] += 1
            if not config.keep_forfeit_wins:
                continue
        game = won_game(record, learner_spec, config.view, round_number)
        if not game["rows"]:  # e.g. the opponent forfeited before the learner's first move: nothing to learn
            stats["without_decisions"] += 1
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


def dataset_rows(games: Sequence[Mapping[str, Any]], rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """Chat rows for ``mlx_lm lora`` and their provenance, line for line, in one shuffled order.

    Shuffled because mlx-lm's batcher groups rows by length in file order: without it a batch would hold
    one round's or one seed's rows only.
    """
    rows, provenance = [], []
    for game in games:
        for row in game["rows"]:
            rows.append({"messages": [{"role": "user", "content": row["prompt"]},
                                      {"role": "assistant", "content": row["action"]}]})
            provenance.append({"transcript_digest": game["transcript_digest"], "learner_seat": game["learner_seat"],
                               "round": game["round"], "decision": row["decision"]})
    order = rng.permutation(len(rows)) if rows else []
    return [rows[i] for i in order], [provenance[i] for i in order]


def _jsonl(items: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(item, sort_keys=True, ensure_ascii=False) + "\n" for item in items)


def write_win_set(data_dir: Path, games: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                  provenance: Sequence[Mapping[str, Any]]) -> None:
    """The dataset directory: train.jsonl (pure chat rows), provenance.jsonl (line-aligned) and games.jsonl."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / ROWS_FILE).write_text(_jsonl(rows))
    (data_dir / PROVENANCE_FILE).write_text(_jsonl(provenance))
    replayable = [{k: v for k, v in game.items() if k != "rows"} for game in games]
    (data_dir / GAMES_FILE).write_text(_jsonl(sorted(replayable, key=lambda g: (g["round"], *game_key(g)))))


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
        user, assistant = row["messages"]
        games[key]["rows"].append({"decision": origin["decision"], "prompt": user["content"],
                                   "action": assistant["content"]})
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


# ----------------------------------------------------------------------------------------------- learning


class _LossLog:
    """mlx-lm training callback that keeps the deterministic numbers (loss, lr), never the wall-clock ones."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_train_loss_report(self, info: dict[str, Any]) -> None:
        self.rows.append({"iteration": info["iteration"], "train_loss": round(float(info["train_loss"]), 6),
                          "learning_rate": float(f"{info['learning_rate']:.9g}")})

    def on_val_loss_report(self, info: dict[str, Any]) -> None:
        """No validation set: nothing to log."""


def adapter_config(config: RestConfig) -> dict[str, Any]:
    """The adapter_config.json fuse@r reads: the LoRA layout only, no paths (so the bytes never depend on where)."""
    return {"fine_tune_type": "lora", "num_layers": config.lora_layers,
            "lora_parameters": {"rank": config.lora_rank, "scale": config.lora_scale, "dropout": 0.0}}


def sft(init: str | Path, rows: Sequence[Mapping[str, Any]], config: RestConfig, round_number: int,
        adapter_dir: Path, progress: bool = True) -> tuple[Any, list[dict[str, Any]]]:
    """LoRA SFT with mlx-lm's own trainer on the chat rows (prompt masked); returns the trained model and its log.

    mlx-lm's batcher shuffles with numpy's global RNG: it is seeded here and restored afterwards.
    """
    import contextlib
    import io

    import mlx.core as mx
    import mlx.optimizers as optim
    import mlx_lm
    from mlx_lm.tuner.datasets import CacheDataset, ChatDataset
    from mlx_lm.tuner.trainer import TrainingArgs, train
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model, tokenizer = mlx_lm.load(str(init))
    seed = config.seed + round_number
    mx.random.seed(seed)
    require(config.lora_layers <= len(model.layers), "rest.lora_layers", config.lora_layers,
            f"must be <= the model's {len(model.layers)} layers")
    model.freeze()
    linear_to_lora_layers(model, config.lora_layers, adapter_config(config)["lora_parameters"])
    dataset = CacheDataset(ChatDataset(list(rows), tokenizer, mask_prompt=True))
    args = TrainingArgs(batch_size=min(config.batch_size, len(rows)), iters=config.iters,
                        steps_per_report=max(1, config.iters // 8), steps_per_eval=config.iters + 1,
                        steps_per_save=config.iters + 1, adapter_file=str(adapter_dir / "adapters.safetensors"),
                        max_seq_length=2048)
    log = _LossLog()
    outer = np.random.get_state()
    np.random.seed(seed)
    sink = contextlib.nullcontext() if progress else contextlib.redirect_stdout(io.StringIO())
    try:
        with sink:
            train(model, optim.Adam(learning_rate=config.lr), dataset, None, args, training_callback=log)
    finally:
        np.random.set_state(outer)
    (adapter_dir / "adapter_config.json").write_text(dump_json(adapter_config(config)))
    return model, log.rows


def empty_win_set(out_dir: str | Path) -> dict[str, Any]:
    """train0: round 0's training output, an empty win set, so round 1 has an earlier (empty) replay buffer."""
    with atomic_dir(out_dir) as tmp:
        write_win_set(tmp / DATA_DIR, [], [], [])
        summary = {"round": 0, "loop": "rest", "init": None, "updated": False, "forfeit_fraction": 0.0,
                   **dict.fromkeys(("games", "rows", "fresh_games", "fresh_rows", "replay_games", "replay_rows",
                                    "won_games", "played_games"), 0)}
        (tmp / SUMMARY_FILE).write_text(dump_json(summary))
        write_meta(tmp, inputs={})
    return summary


def train_rest_round(snapshot: str | Path, base: str | Path, rollouts: str | Path, previous_train: str | Path,
                     round_number: int, config: RestConfig, out_dir: str | Path,
                     progress: bool = True) -> dict[str, Any]:
    """train@r (ReST): build and audit the win set, then LoRA-SFT from the base or the previous snapshot.

    With ``init: base`` the adapter belongs to the base model, so the fused weights are written
    (``weights.safetensors``, which fuse@r copies) and the adapter is kept under ``lora/``; with
    ``init: previous`` the adapter itself is written for fuse@r to merge into the previous snapshot.
    With no win at all (none this round and none to replay) nothing can be learned: the round writes
    ``no_update.json`` with the reason, and fuse@r carries the previous weights over, saying so in its meta.
    """
    from arena.train.fuse import NO_UPDATE, save_fused

    records = read_shard(rollouts)
    fresh, stats = select_wins(records, learner_spec_for(snapshot), config, round_number)
    if stats["rejected"]:
        print(f"round {round_number}: {stats['rejected']} won game(s) failed replay and were left out: "
              f"{stats['rejections'][0]}", file=sys.stderr)
    rng = np.random.default_rng([config.seed, round_number])
    replayed = replay_buffer(load_win_set(previous_train), fresh, config.replay_games, rng)
    games = fresh + replayed
    rows, provenance = dataset_rows(games, rng)
    report = audit(games, config, round_number)
    if report["failures"]:
        raise ArenaError(f"round {round_number}: the win-set audit failed on {len(report['failures'])} check(s), "
                         f"first: {report['failures'][0]}; the data is not trusted, nothing was trained")
    summary = {
        "round": round_number, "loop": "rest", "init": config.init, "games": len(games), "rows": len(rows),
        "fresh_games": len(fresh), "fresh_rows": sum(len(g["rows"]) for g in fresh),
        "replay_games": len(replayed), "replay_rows": sum(len(g["rows"]) for g in replayed),
        "won_games": stats["won"], "played_games": stats["games"], "forfeit_fraction": stats["forfeit_fraction"],
        "updated": bool(rows),
    }
    inputs = {"snapshot": digest_path(snapshot), "rollouts": digest_path(rollouts),
              "previous_train": digest_path(previous_train)}
    with atomic_dir(out_dir) as tmp:
        write_win_set(tmp / DATA_DIR, games, rows, provenance)
        (tmp / AUDIT_FILE).write_text(dump_json({"round": round_number, **stats, "audit": report}))
        log: list[dict[str, Any]] = []
        if not rows:
            reason = (f"round {round_number}: no game was won (of {stats['games']} played) and no earlier win "
                      "remains to replay; the previous weights are kept")
            print(reason, file=sys.stderr)
            (tmp / NO_UPDATE).write_text(dump_json({"reason": reason}))
        elif config.init == "base":
            inputs["base"] = digest_path(base)
            (tmp / "lora").mkdir()
            model, log = sft(base, rows, config, round_number, tmp / "lora", progress)
            save_fused(model, tmp / "weights.safetensors")
        else:
            _, log = sft(snapshot, rows, config, round_number, tmp, progress)
        summary["final_loss"] = log[-1]["train_loss"] if log else None
        (tmp / "train_log.jsonl").write_text(_jsonl(log))
        (tmp / SUMMARY_FILE).write_text(dump_json(summary))
        write_meta(tmp, inputs=inputs, config=as_dict(config))
    return summary


def load_rest_summary(train_dir: str | Path) -> dict[str, Any] | None:
    """A ReST round's summary.json (None for a GRPO round's output, which has no win set)."""
    path = Path(train_dir) / SUMMARY_FILE
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    return summary if summary.get("loop") == "rest" else None


def round_metrics(rollouts: str | Path | None, trained: str | Path | None) -> dict[str, Any]:
    """What a ReST round adds to eval@r's metrics: the curriculum's chosen tiers and the win set's numbers.

    Empty for a GRPO round (its rollouts have no curriculum.json and its training output no ReST summary).
    """
    metrics: dict[str, Any] = {}
    plan = Path(rollouts) / CURRICULUM_FILE if rollouts else None
    if plan is not None and plan.exists():
        record = json.loads(plan.read_text())
        metrics["curriculum"] = {
            "chosen": "; ".join(record["chosen_labels"]), "tiers": record["chosen"],
            "hardest_tier": max(record["chosen"]), "lowered": len(record["attempts"]) - 1,
            "probe_win_rate": {task["label"]: task["win_rate"] for task in record["tasks"]},
        }
    summary = load_rest_summary(trained) if trained else None
    if summary is not None:
        metrics["rest"] = {key: summary[key] for key in (
            "rows", "games", "fresh_games", "replay_games", "won_games", "played_games", "forfeit_fraction",
            "updated")}
    return metrics
