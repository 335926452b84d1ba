"""The seed plan: which deal seeds train and which evaluate; evaluation seeds must never be trained on."""

from __future__ import annotations

from dataclasses import dataclass

from arena.config import require


@dataclass(frozen=True)
class SeedsConfig:
    """params.yaml ``seeds:`` section: half-open ranges [start, end) of deal seeds."""

    train_start: int = 0
    train_end: int = 1_000_000
    eval_start: int = 9_000_000
    eval_end: int = 9_100_000

    def __post_init__(self) -> None:
        require(self.train_start < self.train_end, "seeds.train_end", self.train_end,
                f"must be > seeds.train_start = {self.train_start} (the range is empty)")
        require(self.eval_start < self.eval_end, "seeds.eval_end", self.eval_end,
                f"must be > seeds.eval_start = {self.eval_start} (the range is empty)")
        overlap = self.train_start < self.eval_end and self.eval_start < self.train_end
        require(not overlap, "seeds.eval_start", self.eval_start,
                f"evaluation seeds [{self.eval_start}, {self.eval_end}) overlap training seeds "
                f"[{self.train_start}, {self.train_end}); held-out seeds must be disjoint")

    def train_block(self, start: int, count: int, what: str) -> range:
        """``count`` training seeds from ``train_start + start``, checked to stay inside the training range."""
        block = range(self.train_start + start, self.train_start + start + count)
        require(block.stop <= self.train_end, what, count,
                f"needs seeds up to {block.stop} but seeds.train_end = {self.train_end}")
        return block
