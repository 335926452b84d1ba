"""rollouts@rN of a GRPO round: the snapshot plays every deal, ``group_size`` times, against pool opponents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir
from arena.core.config import as_dict
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig, grpo_seeds
from arena.play.match import Slot, play_match
from arena.play.records import SHARD_FILE, write_shard
from arena.players.base import Player
from arena.players.build import make_player
from arena.players.config import sampling_config
from arena.players.mlx import MLXPlayer
from arena.train.config import SelfPlayConfig
from arena.train.pool import load_pool, sample_opponents


def round_seeds(seeds: SeedsConfig, config: SelfPlayConfig, round_number: int, iteration: int = 0) -> range:
    """Iteration ``iteration``'s deal seeds in round r: its slice of the round's GRPO block (every iteration of the
    round has ``deals_per_round`` fresh deals)."""
    block = grpo_seeds(seeds, config.deals_per_round, round_number, config.iterations_per_round)
    return block[iteration * config.deals_per_round:(iteration + 1) * config.deals_per_round]


def selfplay_schedule(deals: range, group_size: int) -> list[Slot]:
    """Every deal ``group_size`` times: seats alternate, and each repeat has its own sampling salt."""
    return [Slot(seed, k % 2, salt=k // 2) for seed in deals for k in range(group_size)]


def _play_game(learner: MLXPlayer, pool: dict[str, Any], game: str, variant: Any, deals: range, group_size: int,
               draw: int | list[int], cache: dict[str, Player], progress: bool) -> list[dict[str, Any]]:
    """One game's rollouts: each deal ``group_size`` times against its pool opponent, ordered by (seed, salt, seat).

    The pool member that is the learner's own snapshot is played by the learner itself (self-play), so within a
    round's later iterations (``arena.train.grpo.step``) the opponent is the live policy, as it is at the start.
    """
    opponents = sample_opponents(pool, len(deals), seed=draw)
    records: dict[tuple[int, int, int], dict[str, Any]] = {}
    for spec in sorted(set(opponents)):
        opponent = learner if spec == learner.spec else cache.setdefault(
            spec, make_player(spec, mlx_config=learner.config))
        schedule = selfplay_schedule([d for d, s in zip(deals, opponents, strict=True) if s == spec], group_size)
        played = play_match(game, (learner, opponent), schedule, variant=variant, progress=progress)
        records.update({(slot.seed, slot.salt, slot.first_seat): record
                        for slot, record in zip(schedule, played, strict=True)})
    return [records[key] for key in sorted(records)]


def play_iteration(learner: MLXPlayer, pool: dict[str, Any], config: SelfPlayConfig, seeds: SeedsConfig,
                   round_number: int, iteration: int, cache: dict[str, Player],
                   progress: bool = True) -> list[dict[str, Any]]:
    """One iteration's rollouts: every game of the round, on the iteration's deals, against pool opponents."""
    deals = round_seeds(seeds, config, round_number, iteration)
    # Iteration 0 draws its opponents as a round always has; later ones from their own stream.
    draw = round_number if iteration == 0 else [round_number, iteration]
    return [record for game, variant in config.games
            for record in _play_game(learner, pool, game, variant, deals, config.group_size, draw, cache, progress)]


def play_round(snapshot: str | Path, pool_file: str | Path, config: SelfPlayConfig, seeds: SeedsConfig,
               round_number: int, out_dir: str | Path, progress: bool = True) -> int:
    """Rollouts@r: the snapshot plays each deal of each game against an opponent drawn from the pool (the round's
    first iteration; the training step plays the others with the policy it trains)."""
    learner = MLXPlayer(snapshot, sampling_config(config, config.memo_prompts))
    pool = load_pool(pool_file)
    deals = round_seeds(seeds, config, round_number)
    ordered = play_iteration(learner, pool, config, seeds, round_number, 0, {}, progress)
    with atomic_dir(out_dir) as tmp:
        count = write_shard(tmp / SHARD_FILE, ordered)
        write_meta(tmp, inputs={"snapshot": digest_path(snapshot), "pool": digest_path(pool_file)},
                   config={**as_dict(config), "round": round_number, "seeds": [deals.start, deals.stop],
                           "learner": learner.spec})
    return count
