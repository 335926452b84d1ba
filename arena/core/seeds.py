"""The seed plan, in one place: which deal seeds each stage draws, and the held-out ranges nothing trains on.

Training seeds come from ``seeds:`` ``[train_start, train_end)``, cut into blocks by purpose (offsets from
``train_start``, each block checked to stay inside the range):

    =========================  ===========  ===============================================================
    block                      offset       who draws it
    =========================  ===========  ===============================================================
    base-model shards          0            shard k: deals ``[k * d, (k + 1) * d)``, d = (games_per_shard + 1) // 2
    GRPO rounds                500,000      round r: ``deals_per_round`` x ``iterations_per_round`` deals, in order
    ReST rounds                600,000      round r: ``seeds_per_round`` seeds; must stay below the probe block
    curriculum probe           900,000      the same ``(probe_games + 1) // 2`` deals every round
    LSP rounds                 950,000      round r: ``lsp.proposals`` seeds, one per proposal (its choices, answers)
    =========================  ===========  ===============================================================

Held out, never trained on (checked disjoint from the training range): ``eval.seeds`` (every published
score; per-round evaluation uses its first ``roundeval.games`` seeds), ``probe.seed`` (the reward audit,
far above the default training range) and ``lsp.benchmark_seeds`` (the held-out puzzles, one per seed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.core.config import ConfigError, require


@dataclass(frozen=True)
class SeedsConfig:
    """params.yaml ``seeds:`` section: the half-open range [train_start, train_end) of training deal seeds.

    Rollouts and training draw only from it; ``eval.seeds`` (held out) must be disjoint from it and from
    the reward audit's seeds, which every tournament checks.
    """

    train_start: int = 0
    train_end: int = 1_000_000

    def __post_init__(self) -> None:
        require(self.train_start >= 0, "seeds.train_start", self.train_start, "seeds are in [0, 2^63): must be >= 0")
        require(self.train_start < self.train_end, "seeds.train_end", self.train_end,
                f"must be > seeds.train_start = {self.train_start} (the range is empty)")

    def reserved(self) -> list[range]:
        """Seed ranges evaluation must not touch: training seeds."""
        return [range(self.train_start, self.train_end)]

    def train_block(self, start: int, count: int, what: str) -> range:
        """``count`` training seeds from ``train_start + start``, checked to stay inside the training range."""
        block = range(self.train_start + start, self.train_start + start + count)
        require(block.stop <= self.train_end, what, count,
                f"needs seeds up to {block.stop} but seeds.train_end = {self.train_end}")
        return block


# Seeds are 64-bit: every RNG arena seeds (numpy, MLX, the games') takes [0, 2^63).
SEED_LIMIT = 2**63

SeedRangeLike = range | Sequence[int] | Mapping[str, int]


def as_seed_range(value: SeedRangeLike, what: str = "seed range") -> range:
    """A half-open ``range`` from a ``range``, ``[start, stop]`` or ``{"start": .., "stop": ..}``; must be non-empty."""
    if isinstance(value, range):
        result = value
    elif isinstance(value, Mapping) and set(value) == {"start", "stop"}:
        result = range(_int(value["start"], what), _int(value["stop"], what))
    elif isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        result = range(_int(value[0], what), _int(value[1], what))
    else:
        raise ConfigError(f"{what} must be a range, [start, stop] or {{start, stop}}, got {value!r}")
    if result.step != 1:
        raise ConfigError(f"{what} must have step 1, got {result!r}; list the seeds as one contiguous range")
    if len(result) == 0:
        raise ConfigError(f"{what} {format_range(result)} is empty; give a stop greater than its start")
    return result


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} bounds must be integers, got {value!r}")
    if not 0 <= value <= SEED_LIMIT:
        raise ConfigError(f"{what} bound {value!r} is invalid: seeds are in [0, 2^63)")
    return value


def format_range(seeds: range) -> str:
    """``[start, stop)``: how seed ranges are named in messages."""
    return f"[{seeds.start}, {seeds.stop})"


def check_seed_ranges(eval_seeds: range, reserved: Iterable[SeedRangeLike]) -> None:
    """Raise when the evaluation seeds share any seed with a rollout/training range."""
    for index, value in enumerate(reserved):
        other = as_seed_range(value, f"reserved seed range #{index}")
        low, high = max(eval_seeds.start, other.start), min(eval_seeds.stop, other.stop)
        if low < high:
            raise ConfigError(
                f"evaluation seeds {format_range(eval_seeds)} overlap rollout/training seeds "
                f"{format_range(other)} (reserved range #{index}) on seeds {format_range(range(low, high))}; "
                f"held-out evaluation needs a seed range disjoint from every training range"
            )


SHARD_OFFSET = 0
GRPO_OFFSET = 500_000
REST_OFFSET = 600_000
CURRICULUM_PROBE_OFFSET = 900_000
LSP_OFFSET = 950_000


def shard_seeds(seeds: SeedsConfig, shard: int, games_per_shard: int) -> range:
    """Base-model shard ``shard``'s deals (each played from both seats)."""
    deals = (games_per_shard + 1) // 2
    return seeds.train_block(SHARD_OFFSET + shard * deals, deals, "shards.games_per_shard")


def grpo_seeds(seeds: SeedsConfig, deals_per_round: int, round_number: int, iterations: int = 1) -> range:
    """GRPO round r's deals (``iterations`` blocks of ``deals_per_round``): its own block, never reused by another
    round, below ReST's."""
    count = deals_per_round * iterations
    what = f"{count} deals a round ({iterations} iterations x {deals_per_round})" if iterations > 1 else "deals"
    start = GRPO_OFFSET + (round_number - 1) * count
    # The block's size is the product: the error names both keys, so its value is the one the check saw.
    key = "selfplay.deals_per_round" if iterations == 1 else "selfplay.deals_per_round x selfplay.iterations_per_round"
    block = seeds.train_block(start, count, key)
    require(block.stop - seeds.train_start <= REST_OFFSET, "selfplay.deals_per_round", deals_per_round,
            f"round {round_number}'s {what} would reach the ReST block at {REST_OFFSET}; play fewer deals per round")
    return block


def rest_seeds(seeds: SeedsConfig, seeds_per_round: int, round_number: int) -> range:
    """ReST round r's seeds: its own block, below the curriculum's probe block."""
    block = seeds.train_block(REST_OFFSET + (round_number - 1) * seeds_per_round, seeds_per_round,
                              "rest.seeds_per_round")
    require(block.stop - seeds.train_start <= CURRICULUM_PROBE_OFFSET, "rest.seeds_per_round", seeds_per_round,
            f"round {round_number}'s seeds would reach the curriculum's probe block at {CURRICULUM_PROBE_OFFSET}; "
            "sample fewer seeds per round")
    return block


def curriculum_probe_seeds(seeds: SeedsConfig, probe_games: int) -> range:
    """The curriculum's probe deals: the same block every round (each deal from both seats)."""
    return seeds.train_block(CURRICULUM_PROBE_OFFSET, (probe_games + 1) // 2, "curriculum.probe_games")


def lsp_seeds(seeds: SeedsConfig, proposals: int, round_number: int) -> range:
    """LSP round r's seeds, one per proposal: its own block above the curriculum's probe block."""
    return seeds.train_block(LSP_OFFSET + (round_number - 1) * proposals, proposals, "lsp.proposals")
