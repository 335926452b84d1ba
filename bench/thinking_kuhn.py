"""Study: SmolLM2-135M on Kuhn, thinking vs direct scoring, exact exploitability (thinking: estimated, with interval).

    PYTHONPATH=$PWD .venv/bin/python bench/thinking_kuhn.py --model DIR --samples 8 --max-tokens 32 --view compact
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    from arena.eval.thinkexact import exploitability_interval, kuhn_thinking_samples
    from arena.games.kuhn_theory import exploitability
    from arena.players.config import MLXPlayerConfig, ThinkConfig
    from arena.players.mlx import MLXPlayer
    from arena.players.policy import model_policy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--view", default="compact")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "thinking_kuhn.json"))
    args = parser.parse_args()
    direct = MLXPlayer(args.model, MLXPlayerConfig(view=args.view))
    direct_policy = model_policy(direct)
    thinker = MLXPlayer(args.model, MLXPlayerConfig(view=args.view, think=ThinkConfig(max_tokens=args.max_tokens)))
    start = time.perf_counter()
    samples = kuhn_thinking_samples(thinker, args.samples)
    result = {"model": args.model, "view": args.view, "think_max_tokens": args.max_tokens,
              "direct": {"exploitability": exploitability(direct_policy), "policy": direct_policy},
              "thinking": exploitability_interval(samples), "seconds": time.perf_counter() - start}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
