"""Figure thinking: reasoning tokens/s of arena's batched generation vs mlx-lm's batch_generate, same prompts and batch.

Each case runs in its own child process (``python bench/thinking.py --case NAME``), so its peak RSS is its own. The
prompts are a thinking player's Kuhn prompts (SmolLM2-135M-Instruct through its chat template, the instruction
appended); every row generates exactly ``--tokens`` tokens on both sides (no stop tokens for arena; mlx-lm stops at
its EOS, and its tokens are counted as generated). Cases alternate, ``--repeats`` times each, because this shared
machine's speed moves from one minute to the next.

    PYTHONPATH=$PWD .venv/bin/python bench/thinking.py --rows 16 --tokens 32 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("arena", "mlx-lm", "mlx-lm-host", "mlx-lm-server")
LABELS = {
    "arena": "arena: players/thinking.generate_fast (batch KV caches, per-row counter-hash Gumbel keys)",
    "mlx-lm": "mlx-lm 0.32 batch_generate (make_sampler(temp=1.0)), the model as loaded",
    "mlx-lm-host": "mlx-lm 0.32 batch_generate under arena's host float32 projections (the same matmuls as arena)",
    "mlx-lm-server": "mlx_lm.server 0.32 (continuous batching) on loopback, a float32 copy of the same weights, every "
                     "row one /v1/completions request, all in flight (bench/thinking_server.py)",
}


def _prompts(player, rows: int) -> list[tuple[int, ...]]:
    from arena.players.policy import canonical_observations

    observations = list(canonical_observations().values())
    return [player.think_prompts.prompt_ids(observations[i % len(observations)]) for i in range(rows)]


def run_case(case: str, model_dir: str, rows: int, tokens: int) -> dict:
    """One case in this process: the generation's tokens, seconds and this process's peak RSS."""
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    import mlx.core as mx

    from arena.players import thinking
    from arena.players.config import MLXPlayerConfig, ThinkConfig
    from arena.players.hostmath import host_linears
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(model_dir, MLXPlayerConfig(think=ThinkConfig(max_tokens=tokens)))
    prompts = _prompts(player, rows)
    if case == "mlx-lm-server":  # the same prompts as text, to a server this case starts and stops
        from thinking_server import run_server_case

        return run_server_case(model_dir, [player.tokenizer.decode(list(p)) for p in prompts], tokens)
    keys = thinking.row_keys(range(rows))

    def ours(n: int) -> int:
        out = thinking.generate_fast(player.model, prompts, keys, n, 1.0, set())
        return sum(len(row) for row in out)

    def theirs(n: int, host: bool) -> int:
        from mlx_lm.generate import batch_generate
        from mlx_lm.sample_utils import make_sampler

        mx.random.seed(0)

        def call() -> int:
            response = batch_generate(player.model, player.tokenizer, [list(p) for p in prompts], max_tokens=n,
                                      sampler=make_sampler(temp=1.0), return_token_ids=True)
            return sum(len(row) for row in response.token_ids)

        if host:
            with host_linears(player.model):
                return call()
        return call()

    work = ours if case == "arena" else (lambda n: theirs(n, case == "mlx-lm-host"))
    work(2)  # warm-up: first-call costs (float copies, kernels) out of the timing
    start = time.perf_counter()
    generated = work(tokens)
    seconds = time.perf_counter() - start
    return {"case": case, "tokens": generated, "seconds": seconds, "tokens_per_s": generated / seconds,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _smollm2(out: Path) -> Path:
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    build_base(BaseConfig(source="smollm2"), out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES)
    parser.add_argument("--model", default=None, help="a model directory (default: SmolLM2 imported to a temp dir)")
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases to run (default: all)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "thinking.md"))
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.model, args.rows, args.tokens)))
        return
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model or str(_smollm2(Path(scratch) / "smollm2"))
        cases = [case for case in args.cases.split(",") if case in CASES]
        results: dict[str, list[dict]] = {case: [] for case in cases}
        for _ in range(args.repeats):
            for case in cases:
                child = subprocess.run([sys.executable, __file__, "--case", case, "--model", model, "--rows",
                                        str(args.rows), "--tokens", str(args.tokens)], capture_output=True, text=True,
                                       check=True)
                results[case].append(json.loads(child.stdout.strip().splitlines()[-1]))
                print(results[case][-1], file=sys.stderr)
    Path(args.out).write_text(report(results, args, model))
    print(Path(args.out).read_text())


def report(results: dict[str, list[dict]], args: argparse.Namespace, model: str) -> str:
    """The Markdown table: median tokens/s per case, arena's ratio to each mlx-lm case, peak RSS."""
    median = {case: statistics.median(r["tokens_per_s"] for r in runs) for case, runs in results.items()}
    lines = [f"# Reasoning generation: arena vs mlx-lm ({args.rows} rows x {args.tokens} tokens, "
             f"{'SmolLM2-135M q4' if args.model is None else Path(model).name}, Kuhn thinking prompts, CPU)", "",
             "Command: `PYTHONPATH=$PWD .venv/bin/python bench/thinking.py "
             f"--rows {args.rows} --tokens {args.tokens} --repeats {args.repeats} --cases {','.join(results)}`", "",
             "| case | tokens/s (median) | each run | arena / case | peak RSS MiB |", "|---|---|---|---|---|"]
    for case, runs in results.items():
        each = ", ".join(f"{r['tokens_per_s']:.1f}" for r in runs)
        rss = max(r["peak_rss_mib"] for r in runs)
        lines.append(f"| {LABELS[case]} | {median[case]:.1f} | {each} | {median['arena'] / median[case]:.2f}x | "
                     f"{rss:.0f} |")
    lines += ["", "Each run is a fresh child process (peak RSS its own, model load included); cases alternate. The "
              "machine was shared with other work while this ran, so absolute rates are low and noisy; the ratios "
              "are of runs side by side."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
