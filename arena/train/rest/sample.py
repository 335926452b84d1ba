"""rollouts@rN of a ReST round: probe the curriculum, then sample K games per training seed at the chosen tiers.

The games are played at temperature > 0 against the chosen tiers' opponents; the shard has the usual record
format and ``curriculum.json`` (the probe, the chosen tiers and every sampling attempt) lies beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.core import seeds as seed_plan
from arena.core.artifacts import atomic_dir, dump_json
from arena.core.config import as_dict
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig
from arena.play.match import Slot, play_match
from arena.play.records import SHARD_FILE, write_shard
from arena.players.mlx import MLXPlayer
from arena.players.scripted import make_scripted
from arena.train.config import CurriculumConfig, RestConfig
from arena.train.curriculum import CURRICULUM_FILE, Task, easier_task, ladder, plan_round
from arena.train.rest.winset import learner_won


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
        wins = sum(learner_won(r, learner.spec) for r in played)
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
