"""Study: one short thinking GRPO round on Kuhn self-play (whole replies, role baselines, per-token KL), with the
round's reasoning statistics and the thinking policy's estimated exploitability before and after.

    PYTHONPATH=$PWD .venv/bin/python bench/thinking_round.py --model DIR --games 16 --steps 1 --max-tokens 32

A quantised model is dequantised to float32 first (LoRA trains on the float layers; MLX 0.32's 4-bit CPU matmul is
the slow path). Every number is written to --out (JSON): the round's metrics file for this thinking run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = 5_000_000  # self-play deals of this study (disjoint from the evaluation block, 9_000_000)


def main() -> None:
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    import mlx.optimizers as optim
    from mlx_lm.utils import dequantize_model

    from arena.eval.thinkexact import exploitability_interval, kuhn_thinking_samples
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.config import MLXPlayerConfig, ThinkConfig
    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig
    from arena.train.lora import attach_lora
    from arena.train.thinking import RoleBaseline, reasoning_stats, reference_logps, replies, thinking_step

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--beta", type=float, default=0.04)
    parser.add_argument("--view", default="compact")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "thinking_round.json"))
    args = parser.parse_args()
    player = MLXPlayer(args.model, MLXPlayerConfig(view=args.view, think=ThinkConfig(max_tokens=args.max_tokens)))
    player.model = dequantize_model(player.model)
    attach_lora(player.model, TrainConfig(lora_layers=4, lora_rank=8))
    optimizer, baseline = optim.Adam(learning_rate=args.lr), RoleBaseline()
    metrics: dict = {"model": args.model, "view": args.view, "think_max_tokens": args.max_tokens, "lr": args.lr,
                     "beta": args.beta, "steps": []}
    start = time.perf_counter()
    for step in range(args.steps):
        schedule = duplicate_schedule([SEEDS + step * args.games + i for i in range(args.games)], args.games)
        records = play_match("kuhn", (player, player), schedule, progress=False)
        batch = replies(records, player)
        loss = thinking_step(player.model, optimizer, batch, baseline, reference_logps(player.model, batch),
                             beta=args.beta)
        player.weights_changed()
        rewards = [r["rewards"][0] for r in records if not r["errored"]]
        metrics["steps"].append({"step": step, "loss": loss, "replies": len(batch), **reasoning_stats(records),
                                 "seat0_mean_reward": sum(rewards) / max(1, len(rewards)),
                                 "baseline": {f"{g}:{s}": v for (g, s), v in baseline.means.items()},
                                 "seconds": time.perf_counter() - start})
        print(json.dumps(metrics["steps"][-1]), flush=True)
    metrics["after"] = exploitability_interval(kuhn_thinking_samples(player, args.samples))
    metrics["seconds"] = time.perf_counter() - start
    Path(args.out).write_text(json.dumps(metrics, indent=1) + "\n")
    print(json.dumps(metrics, indent=1))


if __name__ == "__main__":
    main()
