"""rollouts@rN of a GRPO round: the snapshot plays every deal, ``group_size`` times, against pool opponents."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir
from arena.core.config import as_dict
from arena.core.hashing import digest_path
from arena.core.pins import write_meta
from arena.core.seeds import SeedsConfig, grpo_seeds
from arena.play.distributed import Match, PlayerPool, Seat, play_here, play_matches
from arena.play.match import Slot
from arena.play.records import SHARD_FILE, write_shard
from arena.players.build import PlayerConfigs
from arena.players.config import sampling_config
from arena.players.mlx import MLXPlayer
from arena.train.config import SelfPlayConfig
from arena.train.pool import load_pool, sample_opponents
from arena.train.selfplay.branches import BRANCHES_FILE, branch_key, branch_slots


def round_seeds(seeds: SeedsConfig, config: SelfPlayConfig, round_number: int, iteration: int = 0) -> range:
    """Iteration ``iteration``'s deal seeds in round r: its slice of the round's GRPO block (every iteration of the
    round has ``deals_per_round`` fresh deals)."""
    block = grpo_seeds(seeds, config.deals_per_round, round_number, config.iterations_per_round)
    return block[iteration * config.deals_per_round:(iteration + 1) * config.deals_per_round]


def selfplay_schedule(deals: range, group_size: int) -> list[Slot]:
    """Every deal ``group_size`` times: seats alternate, and each repeat has its own sampling salt."""
    return [Slot(seed, k % 2, salt=k // 2) for seed in deals for k in range(group_size)]


def _matches(learner: Seat, pool: dict[str, Any], game: str, variant: Any, deals: range, group_size: int,
             draw: int | list[int]) -> list[Match]:
    """One game's matches: per pool opponent (sorted), its deals ``group_size`` times each.

    The pool member that is the learner's own snapshot is the learner's seat (self-play), so within a round's later
    iterations (``arena.train.selfplay.step``) the opponent is the live policy, as it is at the start.
    """
    opponents = sample_opponents(pool, len(deals), seed=draw)
    return [Match(game, (learner, learner if spec == learner.spec else Seat(spec, learner.configs)),
                  tuple(selfplay_schedule([d for d, s in zip(deals, opponents, strict=True) if s == spec], group_size)),
                  variant)
            for spec in sorted(set(opponents))]


def _ordered(matches: list[Match], played: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A game's records ordered by (seed, salt, seat), whichever opponent played them."""
    records = {(slot.seed, slot.salt, slot.first_seat): record
               for match, records in zip(matches, played, strict=True)
               for slot, record in zip(match.schedule, records, strict=True)}
    return [records[key] for key in sorted(records)]


def _iteration_matches(learner: Seat, pool: dict[str, Any], config: SelfPlayConfig, seeds: SeedsConfig,
                       round_number: int, iteration: int) -> tuple[range, list[list[Match]]]:
    """The iteration's deals, and per game of the round its matches on them (a mixed game on the first ``deals``)."""
    deals = round_seeds(seeds, config, round_number, iteration)
    # Iteration 0 draws its opponents as a round always has; later ones from their own stream.
    draw = round_number if iteration == 0 else [round_number, iteration]
    return deals, [_matches(learner, pool, game, variant, deals[:count], config.group_size, draw)
                   for (game, variant), count in zip(config.games, config.deals, strict=True)]


def _records(per_game: list[list[Match]], played: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every game's records, game by game, each ordered by (seed, salt, seat)."""
    ordered, offset = [], 0
    for matches in per_game:
        ordered += _ordered(matches, played[offset : offset + len(matches)])
        offset += len(matches)
    return ordered


def _branch_records(matches: list[Match], played: list[list[dict[str, Any]]], play) -> list[dict[str, Any]]:
    """The branch games of every match's records (``branches.py``), played by the same seats through ``play``,
    ordered by game, variant, deal, salt, seat and prefix."""
    branched = [replace(match, schedule=tuple(branch_slots(records)))
                for match, records in zip(matches, played, strict=True)]
    branched = [match for match in branched if match.schedule]
    records = [record for records in play(branched) for record in records]
    return sorted(records, key=lambda record: branch_key(record, record["prefix"]))


def play_iteration(learner: MLXPlayer, pool: dict[str, Any], config: SelfPlayConfig, seeds: SeedsConfig,
                   round_number: int, iteration: int, players: PlayerPool,
                   branches: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """A later iteration's rollouts, in this process: the live ``learner`` (weights not on disk) plays every game
    of the round on the iteration's deals (and, with ``branches``, their branch games); ``players`` keeps the
    frozen pool members loaded across iterations."""
    seat = Seat(learner.spec, PlayerConfigs(mlx=learner.config))
    players.add(seat, learner)
    _, per_game = _iteration_matches(seat, pool, config, seeds, round_number, iteration)
    matches = [match for matches in per_game for match in matches]
    played = play_here(matches, players, f"rollouts r{round_number}.{iteration}")
    if not branches:
        return _records(per_game, played), None
    return _records(per_game, played), _branch_records(matches, played,
                                                             lambda m: play_here(m, players, "branch games"))


def play_round(snapshot: str | Path, pool_file: str | Path, config: SelfPlayConfig, seeds: SeedsConfig,
               round_number: int, out_dir: str | Path, branches: bool = False) -> int:
    """Rollouts@r: the snapshot plays each deal of each game against an opponent drawn from the pool (the round's
    first iteration; the training step plays the others with the policy it trains); with ``branches`` (train.objective
    neurd) also every branch game of the learner's decisions, to ``branches.jsonl``.

    Every game of the round is played in one ``play_matches`` call, so its tasks spread over all workers.
    """
    learner = Seat(f"mlx:{Path(snapshot).as_posix()}",
                   PlayerConfigs(mlx=sampling_config(config, config.memo_prompts)))
    pool = load_pool(pool_file)
    deals, per_game = _iteration_matches(learner, pool, config, seeds, round_number, 0)
    matches = [match for matches in per_game for match in matches]
    played = play_matches(matches, label=f"rollouts r{round_number}")
    ordered = _records(per_game, played)
    with atomic_dir(out_dir) as tmp:
        count = write_shard(tmp / SHARD_FILE, ordered)
        if branches:
            write_shard(tmp / BRANCHES_FILE, _branch_records(matches, played, play_matches))
        write_meta(tmp, inputs={"snapshot": digest_path(snapshot), "pool": digest_path(pool_file)},
                   config={**as_dict(config), "round": round_number, "seeds": [deals.start, deals.stop],
                           "learner": learner.spec})
    return count
