"""The seed plan: which deal seeds train and which evaluate; evaluation seeds must never be trained on."""

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
