"""Figure qlora: a GRPO step on full-view Kuhn decisions with the q4 stand-in and LoRA -- tokens/s, and its peak RSS
against the bound the token budget predicts (arena.train.memory, the formula the stage log prints).

The step runs in a child process (``python bench/qlora.py --case MODEL OUT``). Before the timed steps it resets the
kernel's peak-RSS mark (``/proc/self/clear_refs``), so the peak read after them (``VmHWM``) is the steps' own;
the prediction is the resident set when they start plus what ``memory_report`` says a step adds (the LoRA training
state and one training pass of ``train.max_batch_tokens`` tokens).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import KUHN_EVAL_SEED, ROOT, Row, log, write_keeping_notes

# The preset stand-in's shapes (presets/standin.yaml): qwen3, hidden 256, 4 layers, Qwen's vocabulary, q4.
STAND_IN = {"source": "standin", "quant": "q4", "hidden_size": 256, "num_layers": 4, "num_heads": 4,
            "num_kv_heads": 2, "intermediate_size": 768, "vocab_size": 151936, "max_position_embeddings": 4096}


def _status_kib(field: str) -> int:
    line = next(s for s in Path("/proc/self/status").read_text().splitlines() if s.startswith(field + ":"))
    return int(line.split()[1])


def run_case(model_dir: Path, deals: int, batch_size: int, budget: int, steps: int) -> dict[str, Any]:
    """Rollouts, then ``steps`` timed GRPO steps (after one warm-up step); tokens/s and the steps' peak RSS."""
    import numpy as np

    from arena.core.pins import read_model_config
    from arena.play.match import play_match
    from arena.players.build import make_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig
    from arena.train.lora import attach_lora
    from arena.train.memory import memory_report
    from arena.train.selfplay.rollouts import selfplay_schedule
    from arena.train.selfplay.step import learner_decisions
    from arena.train.selfplay.update import GRPOUpdate

    config = TrainConfig(method="lora", batch_size=batch_size, max_batch_tokens=budget)
    policy = MLXPlayer(model_dir, MLXPlayerConfig(view="full"))
    schedule = selfplay_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + deals), 2)
    records = play_match("kuhn", (policy, make_player("random")), schedule, progress=False)
    data = learner_decisions(records, policy.spec, config)
    attach_lora(policy.model, config)
    update = GRPOUpdate(policy, config, temperature=1.0)
    rng = np.random.default_rng(0)

    def step() -> tuple[float, int, int]:
        picked = np.sort(rng.choice(len(data.chosen), size=batch_size, replace=False))
        observations = [data.observations[i] for i in picked]
        start = time.perf_counter()
        result = update(observations, data.chosen[picked], data.logp_old[picked], data.logp_old[picked],
                        data.advantages[picked], config.lr)
        trained = sum(len(policy._prompt_ids(o)) + len(policy._action_ids(o.legal_actions[c]))
                      for o, c in zip(observations, data.chosen[picked], strict=True))
        return time.perf_counter() - start, trained, result["tokens"]

    step()  # warm-up: first-call allocations, Adam's state
    rss_start = _status_kib("VmRSS") * 1024
    Path("/proc/self/clear_refs").write_text("5")  # the peak mark restarts at the current resident set
    timed = [step() for _ in range(steps)]
    peak = _status_kib("VmHWM") * 1024
    report = memory_report(read_model_config(model_dir), budget, config.lora_layers, config.lora_rank)
    added = (report["training_state_gb"] + report["training_pass_gb"]) * 1e9
    seconds = statistics.median(t for t, _, _ in timed)
    return {"decisions": len(data.chosen), "step_s": seconds,
            "tokens_per_s": statistics.mean(n for _, n, _ in timed) / seconds,
            "computed_tokens_per_s": statistics.mean(n for _, _, n in timed) / seconds,
            "rss_start": rss_start, "peak": peak, "predicted": rss_start + added, "added_predicted": added,
            "budget": budget, "batch_size": batch_size}


def figure(quick: bool) -> list[Row]:
    """One case on the preset stand-in (``quick``: a 2,048-token vocabulary, one step; not the figure)."""
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    vocab, deals, batch_size, budget, steps = (2048, 8, 4, 4096, 1) if quick else (151936, 64, 32, 16384, 5)
    with tempfile.TemporaryDirectory(prefix="arena-qlora-") as tmp, tempfile.NamedTemporaryFile(suffix=".json") as out:
        model = Path(tmp) / "standin"
        build_base(BaseConfig(**{**STAND_IN, "vocab_size": vocab}), model)
        log(f"qlora: q4 stand-in built (vocab {vocab:,}); {deals} deals, batch {batch_size}, budget {budget}")
        subprocess.run([sys.executable, __file__, "--case", str(model), str(deals), str(batch_size), str(budget),
                        str(steps), out.name], cwd=ROOT, check=True)
        r = json.loads(Path(out.name).read_text())
    mib = 2**20
    label = f"q4 stand-in (qwen3, hidden 256, 4 layers, vocab {vocab:,}) + LoRA (4 layers, rank 8)"
    note = (f"batch {r['batch_size']} of {r['decisions']} full-view Kuhn decisions, train.max_batch_tokens = "
            f"{r['budget']}; RSS at the first timed step {r['rss_start'] / mib:.0f} MiB + predicted step "
            f"{r['added_predicted'] / mib:.0f} MiB (LoRA training state + one training pass, arena.train.memory); "
            f"{label}")
    speed = (f"{r['tokens_per_s']:,.0f} tokens/s (prompt + action tokens of the batch; "
             f"{r['computed_tokens_per_s']:,.0f} tokens/s run through the model, distinct prompts once), median step "
             f"{r['step_s']:.2f} s")
    log(f"qlora: {speed}; peak RSS {r['peak'] / mib:.0f} MiB, predicted bound {r['predicted'] / mib:.0f} MiB")
    memory = Row("qlora", "GRPO step (QLoRA, full-view Kuhn): peak RSS vs the token budget's bound", "MiB",
                 r["peak"] / mib, r["predicted"] / mib, "measured peak", "predicted bound",
                 r["predicted"] / r["peak"], "measured <= predicted", r["peak"] <= r["predicted"],
                 f"{speed}; {note}", peak_rss_mib=r["peak"] / mib, details=r)
    if not quick:
        _write_results([memory])
    return [memory]


def _write_results(rows: list[Row]) -> None:
    from dataclasses import asdict

    from common import render_table

    lines = ["# QLoRA GRPO step on the q4 stand-in (issue 13)", "",
             "`python bench/qlora.py` (or `python bench/run.py --only qlora`); the step in its own process.", "",
             render_table([asdict(row) for row in rows]), ""]
    lines += [f"- {row.name}: {row.note}" for row in rows]
    write_keeping_notes(ROOT / "bench" / "results" / "qlora.md", "\n".join(lines))


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", nargs=6, metavar=("MODEL", "DEALS", "BATCH", "BUDGET", "STEPS", "OUT"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    if args.case:
        model, deals, batch, budget, steps, out = args.case
        Path(out).write_text(json.dumps(run_case(Path(model), int(deals), int(batch), int(budget), int(steps))))
        return 0
    from dataclasses import asdict

    from common import render_table

    print(render_table([asdict(row) for row in figure(args.quick)]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
