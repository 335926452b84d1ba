"""Data parallelism for the GRPO step: which rank scores which micro-batch, and gradients gathered in a fixed order.

A step's micro-batches (the scoring passes under ``train.max_batch_tokens``) are dealt out in rounds of ``size``:
micro-batch ``i`` belongs to rank ``i % size``. After each round every rank all-gathers the round's weighted
micro-batch gradients and adds them to its running sum in micro-batch order, exactly as one process adds them
one after another. Floating-point addition is not associative, so summing per-rank partial sums (a plain
``all_sum``) would give different bits from one process; gathering and adding in order gives the same bits for
any number of ranks, so where the step runs never changes a result. The cost: each micro-batch's gradient
crosses the network once, instead of one partial sum per rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

T = TypeVar("T")


def micro_batch_rounds(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive rounds of ``size`` micro-batches (the last may be shorter); rank r takes each round's r-th."""
    if size < 1:
        raise ValueError(f"a data-parallel world has at least one rank, got size {size}")
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def owned_micro_batches(count: int, size: int, rank: int) -> list[int]:
    """The indices of the micro-batches rank ``rank`` of ``size`` computes, out of ``count`` (i % size == rank)."""
    if not 0 <= rank < size:
        raise ValueError(f"rank {rank} is outside a world of {size} ranks")
    return list(range(rank, count, size))


@dataclass(frozen=True)
class World:
    """The processes one training step runs on: this process's rank, their number, and the mx.distributed group."""

    rank: int = 0
    size: int = 1
    group: Any = None

    @property
    def is_writer(self) -> bool:
        """Only rank 0 writes artifacts and logs; the other ranks compute and write nothing."""
        return self.rank == 0

    def gathered(self, part: Sequence[Any] | None, template: Sequence[Any], count: int) -> list[list[Any]]:
        """Every rank's ``part`` of this round (a flat list of arrays), in rank order, for the first ``count`` ranks.

        A rank without a micro-batch in the round (the last round may be short) sends zeros shaped like
        ``template``; those are never added.
        """
        if self.size == 1:
            return [list(part)] if part is not None else []
        import mlx.core as mx

        mine = list(part) if part is not None else [mx.zeros(t.shape, t.dtype) for t in template]
        return _all_gather(mine, self.size, self.group)[:count]


def _all_gather(arrays: list[Any], size: int, group: Any) -> list[list[Any]]:
    """Each rank's copy of ``arrays``: one all_gather per dtype of the arrays, flattened and split back (exact)."""
    import mlx.core as mx

    out: list[list[Any]] = [[None] * len(arrays) for _ in range(size)]
    for dtype in sorted({a.dtype for a in arrays}, key=str):
        members = [i for i, a in enumerate(arrays) if a.dtype == dtype]
        flat = mx.concatenate([arrays[i].reshape(-1) for i in members])
        every = mx.distributed.all_gather(flat, group=group).reshape(size, -1)
        mx.eval(every)
        offset = 0
        for i in members:
            length = arrays[i].size
            for rank in range(size):
                out[rank][i] = every[rank, offset:offset + length].reshape(arrays[i].shape)
            offset += length
    return out


def init_world(backend: str = "ring") -> World:
    """The world ``mlx.launch`` started this process in; a clear error when it was not launched by it."""
    import os
    from pathlib import Path

    import mlx.core as mx

    hostfile = os.environ.get("MLX_HOSTFILE")
    if hostfile and Path(hostfile).is_file() and not Path(hostfile).read_text().strip():
        return World()  # `mlx.launch -n 1` gives its only rank an empty ring hostfile: a world of one
    try:
        group = mx.distributed.init(strict=True, backend=backend)
    except RuntimeError as error:
        from arena.core.errors import ArenaError

        raise ArenaError(f"mx.distributed.init(backend={backend!r}) failed ({error}): start data-parallel "
                         "training with `mlx.launch --backend ring ...` (or ARENA_TRAIN_LAUNCH for the round stage)"
                         ) from error
    return World(group.rank(), group.size(), group)
