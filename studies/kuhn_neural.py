"""Ablate the neural GRPO recipe on Kuhn: the real round code per preset, exact exploitability per round, a PNG.

Usage (from the repository root):
    python studies/kuhn_neural.py [--rounds 8] [--seeds 2] [--first-seed 0] [--only NAME ...] [--json runs.json]
                                [--png curves.png] [--merge earlier.json ...]

Each preset overrides keys of params.yaml's `selfplay`/`train` sections and runs `--rounds` rounds of exactly what
the round stages run (arena.train.selfplay rollouts and update, arena.train.fuse, arena.train.pool) from the embedded
base model built for the run; after each round it records the exact exploitability (arena.games.kuhn_theory) of the
new snapshot (the last iterate) and of the pool's reach-weighted average policy. Seed s shifts the training deal
block by s * 10^6 and sets train.seed = s. The `distill` presets replace each snapshot by the pool's average policy
distilled into its weights at the 12 information sets (the issue's "distil the average policy into the next
snapshot"); that code lives here only, as a study. The `iter*` presets run several rollout-then-update iterations
a round (selfplay.iterations_per_round) with the policy memo on. ``--merge`` tabulates (and plots) the curves of
earlier ``--json`` files beside this run's, a preset's seeds possibly from several files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
import yaml  # noqa: E402

from arena.core.artifacts import atomic_write_json  # noqa: E402
from arena.core.config import load_section  # noqa: E402
from arena.core.seeds import SeedsConfig  # noqa: E402
from arena.games.kuhn_theory import exploitability  # noqa: E402
from arena.players.mlx import MLXPlayer  # noqa: E402
from arena.players.policy import model_policy  # noqa: E402
from arena.train.config import PoolConfig, SelfPlayConfig, TrainConfig  # noqa: E402
from arena.train.fuse import copy_snapshot, fuse_round  # noqa: E402
from arena.train.pool import build_pool, load_pool, pool_average_policy  # noqa: E402
from arena.train.selfplay.rollouts import play_round  # noqa: E402
from arena.train.selfplay.step import train_round  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROBES = ("lr3e-4", "lr1e-3", "4096deals")  # not in the default run
PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "clip0.5": {"train.clip_eps": 0.5},
    "clip0.5+group4": {"train.clip_eps": 0.5, "selfplay.group_size": 4, "selfplay.deals_per_round": 512},
    "clip0.5+4096deals": {"train.clip_eps": 0.5, "selfplay.deals_per_round": 4096, "train.steps": 128},
    "magnet(previous,beta0.2)": {"train.reference": "previous", "train.beta": 0.2},
    "clip0.5+distill": {"train.clip_eps": 0.5, "distill": True},
    # Single-seed probes of the default's step size (run with --only ... --seeds 1).
    "lr3e-4": {"train.lr": 3.0e-4},
    "lr1e-3": {"train.lr": 1.0e-3},
    "4096deals": {"selfplay.deals_per_round": 4096, "train.steps": 128},
    # Under the KL term's own floor (studies/kuhn_kl_floor.py: 0.0525 for the default's beta, 0.022 for 0.02).
    "beta0.02": {"train.beta": 0.02},
}
# Many on-policy iterations a round stage (selfplay.iterations_per_round), each on fresh deals, with the memo.
ITERATED = {"selfplay.memo_prompts": 4096, "train.batch_size": 4096}
PRESETS.update({
    "iter64x2,lr3e-4": {**ITERATED, "selfplay.iterations_per_round": 64, "selfplay.deals_per_round": 64,
                        "train.steps": 2, "train.lr": 3.0e-4},
    "iter64x2": {**ITERATED, "selfplay.iterations_per_round": 64, "selfplay.deals_per_round": 64, "train.steps": 2},
    "iter64x2,beta0.2": {**ITERATED, "selfplay.iterations_per_round": 64, "selfplay.deals_per_round": 64,
                         "train.steps": 2, "train.beta": 0.2},
    "iter64x2,magnet(previous,beta0.2)": {**ITERATED, "selfplay.iterations_per_round": 64,
                                          "selfplay.deals_per_round": 64, "train.steps": 2, "train.beta": 0.2,
                                          "train.reference": "previous"},
    "iter64x2,lookahead0.5": {**ITERATED, "selfplay.iterations_per_round": 64, "selfplay.deals_per_round": 64,
                              "train.steps": 2, "train.lookahead": 0.5},
    "iter64x2,magnet(previous,beta0.2),lookahead0.5": {
        **ITERATED, "selfplay.iterations_per_round": 64, "selfplay.deals_per_round": 64, "train.steps": 2,
        "train.beta": 0.2, "train.reference": "previous", "train.lookahead": 0.5},
})


def _params(overrides: dict[str, Any], seed: int) -> dict[str, Any]:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["seeds"] = {"train_start": seed * 1_000_000, "train_end": (seed + 1) * 1_000_000}
    params["train"]["seed"] = seed
    for key, value in overrides.items():
        if key != "distill":
            section, name = key.split(".")
            params[section][name] = value
    return params


def distill(snapshot: Path, target: dict[str, float], out: Path, steps: int = 200, lr: float = 1e-4) -> None:
    """Fit ``snapshot``'s masked policy at Kuhn's 12 information sets to ``target`` (cross-entropy, Adam)."""
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten

    from arena.players.batching import build_batch
    from arena.players.policy import AGGRESSIVE, canonical_observations
    from arena.players.scoring import legal_logp

    player = MLXPlayer(snapshot)
    observations = canonical_observations()
    batch = build_batch([player.prompts.prompt_ids(o) for o in observations.values()],
                        [[player.prompts.action_ids(a) for a in o.legal_actions] for o in observations.values()],
                        player.tokenizer.pad_token_id or 0)
    wanted = mx.array([target[name] if action in AGGRESSIVE else 1 - target[name]
                       for name, o in observations.items() for action in o.legal_actions])

    def loss(model: Any) -> mx.array:
        logp = legal_logp(model, batch, 1.0)
        return -(wanted * logp).sum() / len(observations)

    optimizer, step = optim.Adam(learning_rate=lr), nn.value_and_grad(player.model, loss)
    for _ in range(steps):
        _, grads = step(player.model)
        optimizer.update(player.model, grads)
        mx.eval(player.model.parameters(), optimizer.state)
    shutil.copytree(snapshot, out, ignore=shutil.ignore_patterns("model.safetensors", "meta.json"))
    weights = dict(sorted(tree_flatten(player.model.parameters())))
    mx.save_safetensors(str(out / "model.safetensors"), weights, metadata={"format": "mlx"})


def run_preset(name: str, seed: int, rounds: int, base: Path, work: Path) -> list[dict[str, float]]:
    """``rounds`` rounds of the preset; per round the exact exploitability of the snapshot and the pool average."""
    params = _params(PRESETS[name], seed)
    selfplay, seeds = load_section(SelfPlayConfig, "selfplay", params), load_section(SeedsConfig, "seeds", params)
    train, pool = load_section(TrainConfig, "train", params), load_section(PoolConfig, "pool", params)
    copy_snapshot(base, work / "s0")
    build_pool(None, work / "s0", pool, "kuhn", work / "p0")
    curve, began = [], time.perf_counter()
    for n in range(1, rounds + 1):
        prev = work / f"s{n - 1}"
        play_round(prev, work / f"p{n - 1}", selfplay, seeds, n, work / f"roll{n}")
        reference = base if train.reference == "base" else prev
        train_round(prev, reference, work / f"roll{n}", n, selfplay, train, work / f"ad{n}",
                    pool_file=work / f"p{n - 1}", seeds=seeds)
        fuse_round(prev, work / f"ad{n}", work / f"s{n}")
        build_pool(work / f"p{n - 1}", work / f"s{n}", pool, "kuhn", work / f"p{n}")
        last = exploitability(model_policy(MLXPlayer(work / f"s{n}")))
        average = pool_average_policy(load_pool(work / f"p{n}"))
        if PRESETS[name].get("distill"):
            shutil.move(work / f"s{n}", work / f"raw{n}")
            distill(work / f"raw{n}", average, work / f"s{n}")
        curve.append({"round": n, "games": n * selfplay.games_per_round,
                      "seconds": round(time.perf_counter() - began, 1),
                      "last": round(last, 6), "average": round(exploitability(average), 6)})
        print(f"{name} seed {seed} round {n}: last {last:.4f} average {curve[-1]['average']:.4f}", file=sys.stderr)
    return curve


def table(runs: dict[str, dict[int, list[dict[str, float]]]]) -> str:
    """Per preset: seed means of the last iterate and the pool average after every round, the final seed range."""
    lines = ["| preset | games by the end | last iterate by round (seed mean) | last, final (seed range) | "
             "pool average by round (seed mean) | average, final | s a run |", "|---|---|---|---|---|---|---|"]
    for name, seeded in runs.items():
        curves = list(seeded.values())
        mean = [sum(c[i]["last"] for c in curves) / len(curves) for i in range(len(curves[0]))]
        avg = [sum(c[i]["average"] for c in curves) / len(curves) for i in range(len(curves[0]))]
        finals = [c[-1]["last"] for c in curves]
        # Wall seconds of a run (seed mean; the original runs did not record them).
        seconds = [c[-1]["seconds"] for c in curves if "seconds" in c[-1]]
        wall = f"{sum(seconds) / len(seconds):.0f}" if seconds else "-"
        lines.append(f"| {name} | {curves[0][-1]['games']:,} | {' '.join(f'{v:.3f}' for v in mean)} | "
                     f"{mean[-1]:.3f} ({min(finals):.3f}-{max(finals):.3f}) | {' '.join(f'{v:.3f}' for v in avg)} | "
                     f"{avg[-1]:.3f} | {wall} |")
    return "\n".join(lines)


def plot(runs: dict[str, dict[int, list[dict[str, float]]]], path: Path) -> None:
    """Seed-mean curves of the last iterate (solid) and the pool average (dashed), per preset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    for index, (name, seeded) in enumerate(runs.items()):
        curves = list(seeded.values())
        rounds = [point["round"] for point in curves[0]]
        color = f"C{index % 10}"
        for key, style in (("last", "-"), ("average", "--")):
            values = [sum(c[i][key] for c in curves) / len(curves) for i in range(len(rounds))]
            ax.plot(rounds, values, style, color=color, label=name if key == "last" else None)
    ax.axhline(0.05, color="grey", linewidth=0.8)
    ax.set_xlabel("round")
    ax.set_ylabel("exact exploitability (solid: snapshot, dashed: pool average)")
    ax.set_title("Kuhn, embedded model, neural GRPO presets (seed means)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _run_all(names: list[str], seeds: range, rounds: int) -> dict[str, dict[int, list[dict[str, float]]]]:
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    runs: dict[str, dict[int, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="kuhn-neural-") as tmp:
        base = Path(tmp) / "base"
        build_base(BaseConfig(), base)
        for name in names:
            for seed in seeds:
                work = Path(tmp) / f"{name}-{seed}"
                runs.setdefault(name, {})[seed] = run_preset(name, seed, rounds, base, work)
                shutil.rmtree(work)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0, help="run seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--only", nargs="*", choices=sorted(PRESETS), help="run these presets only")
    parser.add_argument("--json", type=Path, help="write every curve here")
    parser.add_argument("--png", type=Path, help="write the curves here")
    parser.add_argument("--merge", nargs="*", type=Path, help="include the curves of these earlier --json files")
    args = parser.parse_args(argv)
    runs: dict[str, dict[int, list[dict[str, float]]]] = {}
    started = time.perf_counter()
    for path in args.merge or ():  # curves of earlier runs (their --json), side by side with this one's
        earlier = json.loads(path.read_text())
        for name, seeded in earlier.items():  # a preset's seeds may come from several files
            runs.setdefault(name, {}).update({int(s): c for s, c in seeded.items()})
    if args.only or not args.merge:
        names = args.only or [name for name in PRESETS if name not in PROBES]
        runs.update(_run_all(names, range(args.first_seed, args.first_seed + args.seeds), args.rounds))
    print(table(runs))
    print(f"\n{time.perf_counter() - started:.0f} s wall")
    if args.json:
        atomic_write_json(args.json, {name: {str(s): c for s, c in seeded.items()} for name, seeded in runs.items()})
    if args.png:
        plot(runs, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
