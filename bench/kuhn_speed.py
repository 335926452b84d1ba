"""The two exact speedups behind many GRPO iterations a round, side by side on one round of the default's Kuhn work.

Usage (from the repository root):
    python bench/kuhn_speed.py [--deals 1024] [--repeats 3]

(1) Rollouts: the embedded base model plays ``--deals`` deals from both seats against itself (one GRPO round's
rollouts) with and without the policy memo (``selfplay.memo_prompts``). (2) A GRPO step: the gradient over the
round's learner decisions, as one row per decision and as the distinct rows weighted by their counts (what
``GRPOUpdate`` runs); the two losses are printed beside each other. Each pair is timed interleaved, best of
``--repeats``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
import numpy as np  # noqa: E402

from arena.play.match import play_match  # noqa: E402
from arena.players.config import MLXPlayerConfig  # noqa: E402
from arena.players.mlx import MLXPlayer  # noqa: E402
from arena.train.config import TrainConfig  # noqa: E402
from arena.train.selfplay.rollouts import selfplay_schedule  # noqa: E402
from arena.train.selfplay.step import learner_decisions  # noqa: E402
from arena.train.selfplay.update import GRPOUpdate  # noqa: E402


def _rollouts(base: Path, memo: int, deals: int) -> tuple[float, list[dict]]:
    player = MLXPlayer(base, MLXPlayerConfig(memo_prompts=memo))
    schedule = selfplay_schedule(range(500_000, 500_000 + deals), 2)
    start = time.perf_counter()
    records = play_match("kuhn", (player, player), schedule, progress=False)
    return time.perf_counter() - start, records


def _gradient_seconds(update: GRPOUpdate, data, aggregate: bool) -> tuple[float, float, int]:
    import mlx.core as mx

    n = len(data.chosen)
    logp_ref = data.logp_old.copy()
    if aggregate:
        first, counts = update.rows(data.observations, data.chosen, data.logp_old, logp_ref, data.advantages)
    else:
        first, counts = np.arange(n), np.ones(n)
    start = time.perf_counter()
    loss, _, grads, _ = update.gradients([data.observations[i] for i in first], data.chosen[first],
                                          data.logp_old[first], logp_ref[first], data.advantages[first], counts)
    mx.eval(grads)
    return time.perf_counter() - start, loss.item(), len(first)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    with tempfile.TemporaryDirectory(prefix="kuhn-speed-") as tmp:
        base = Path(tmp) / "base"
        build_base(BaseConfig(), base)
        plain = memo = float("inf")
        for _ in range(args.repeats):
            plain = min(plain, _rollouts(base, 0, args.deals)[0])
            seconds, records = _rollouts(base, 4096, args.deals)
            memo = min(memo, seconds)
        games = 2 * args.deals
        print(f"(1) rollouts, {games} games: no memo {plain:.3f} s ({games / plain:,.0f} games/s), "
              f"memo {memo:.3f} s ({games / memo:,.0f} games/s): {plain / memo:.1f}x")
        player = MLXPlayer(base, MLXPlayerConfig(memo_prompts=4096))
        data = learner_decisions(records, player.spec, TrainConfig())
        update = GRPOUpdate(player, TrainConfig(), 1.0)
        full = agg = (float("inf"), 0.0, 0)
        for _ in range(args.repeats):
            full = min(full, _gradient_seconds(update, data, False))
            agg = min(agg, _gradient_seconds(update, data, True))
        print(f"(2) GRPO gradient over {len(data.chosen)} decisions: one row each {full[0]:.3f} s (loss "
              f"{full[1]:.7f}), {agg[2]} distinct rows {agg[0]:.4f} s (loss {agg[1]:.7f}): {full[0] / agg[0]:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
