"""Study: SmolLM2-135M on Nim [3, 4, 5], thinking vs direct scoring: the mass on winning moves (thinking: estimated
over sampled reasoning per configuration, with a bootstrap interval).

    PYTHONPATH=$PWD .venv/bin/python bench/thinking_nim.py --model DIR --samples 4 --max-tokens 32 --view compact

Direct scoring's mass is exact (one scoring pass per configuration, arena.eval.exact). A thinking player's
probability of a move at a configuration is an expectation over its reasoning: ``--samples`` reasonings are drawn
per configuration (each from its own key), the post-reasoning move probabilities' winning mass is averaged per
configuration and over configurations (unbiased: the mass is linear in the policy), and a 95% percentile bootstrap
over each configuration's samples gives the interval (arena.eval.thinkexact.winning_mass_interval). The thinking
estimate covers the configurations a game from [3, 4, 5] reaches (``seen``); held-out ones are direct-only.
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
    from arena.eval.exact import exact_metrics
    from arena.eval.thinkexact import nim_thinking_samples, winning_mass_interval
    from arena.games import nim_theory
    from arena.players.config import MLXPlayerConfig, ThinkConfig
    from arena.players.mlx import MLXPlayer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--view", default="compact")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "thinking_nim.json"))
    args = parser.parse_args()
    start = (3, 4, 5)
    seen, _ = nim_theory.split_by_start(nim_theory.family(max(start) + 1, len(start)), start)
    began = time.perf_counter()
    direct = exact_metrics(MLXPlayer(args.model, MLXPlayerConfig(view=args.view)), "nim", {"piles": list(start)})
    direct_seconds = time.perf_counter() - began
    thinker = MLXPlayer(args.model, MLXPlayerConfig(view=args.view, think=ThinkConfig(max_tokens=args.max_tokens)))
    began = time.perf_counter()
    samples = nim_thinking_samples(thinker, seen, args.samples)
    result = {"model": args.model, "view": args.view, "think_max_tokens": args.max_tokens, "piles": list(start),
              "direct": {**direct, "seconds": direct_seconds},
              "thinking": {**winning_mass_interval(samples), "seconds": time.perf_counter() - began,
                           "per_configuration": {" ".join(map(str, k)): [round(x, 6) for x in v]
                                                 for k, v in samples.items()}},
              "optimal": 1.0}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "thinking"} | {
        "thinking": {k: v for k, v in result["thinking"].items() if k != "per_configuration"}}, indent=1))


if __name__ == "__main__":
    main()
