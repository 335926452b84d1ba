"""The seed plan: which deal seeds train and which evaluate; evaluation seeds must never be trained on."""

from __future__ import annotations

from dataclasses import dataclass

from arena.config import require


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
