"""Study: Language Self-Play on verifiable puzzles against the paper's arms, on the held-out puzzle benchmark.

Usage (from the repository root):
    python studies/lsp.py [--rounds 6] [--steps 16] [--lr 1.0e-4] [--work /tmp/lsp-study] [--out studies/results/lsp.md]
    python studies/lsp.py --preset presets/smollm2-lsp.yaml --rounds 2 --seeds 0 1 --out studies/smollm2_lsp/lsp.md

Each arm runs the pipeline's own round functions (arena.pipeline.rounds.round_zero / round_n) on params.yaml
with ``loop: lsp`` and the arm's overrides, in its own artifacts directory: base (round 0, the stock model),
GRPO on uniformly sampled puzzles (``lsp.challenger: uniform``), LSP-Zero (``lsp.quality: false``) and LSP.
The same arms as DVC experiments: ``dvc exp run -S loop=lsp [-S lsp.quality=false | -S lsp.challenger=uniform]``.
``--preset``/``-S`` set the model and recipe (dotted keys over params.yaml, as ``games.py``; ``--steps``/``--lr``
then apply only where neither sets them). ``--seeds`` runs LSP-Zero and LSP once per seed: seed s draws its
proposals from the training seeds 1000 s further on (``seeds.train_start``) and its minibatches from ``train.seed``
s. Writes a markdown table (last round's held-out accuracy with 95% Wilson intervals), the per-round evals as JSON
and a PNG of the curves.
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
from games import base_dir_name  # noqa: E402  (studies/, beside this file)

from arena.core.config import load_params  # noqa: E402
from arena.pipeline.presets import apply_preset, preset_overrides  # noqa: E402

ARMS = {
    "GRPO on uniform puzzles": {"challenger": "uniform"},
    "LSP-Zero": {"quality": False},
    "LSP": {"quality": True},
}
# The arms --seeds repeats (the two LSP arms); a replicate's training seeds sit this far on from the last one's.
SEEDED_ARMS = ("LSP-Zero", "LSP")
SEED_STRIDE = 1000


def arm_runs(arms: list[str], seeds: list[int]) -> list[tuple[str, str, int]]:
    """(label, arm, seed) of each run: one per arm, the seeded arms once per seed (labelled by it when several)."""
    runs = []
    for arm in arms:
        for seed in seeds if arm in SEEDED_ARMS else seeds[:1]:
            label = f"{arm} (seed {seed})" if arm in SEEDED_ARMS and len(seeds) > 1 else arm
            runs.append((label, arm, seed))
    return runs


def arm_params(base: dict[str, Any], arm: dict[str, Any], rounds: int, steps: int, lr: float,
               seed: int = 0) -> dict[str, Any]:
    """params.yaml with loop: lsp, the arm's lsp overrides, ``rounds`` unrolled rounds, the study's optimiser
    (where ``base`` leaves it at params.yaml's) and the run's seed."""
    params = copy.deepcopy(base)
    params["loop"] = "lsp"
    params["lsp"] = {**params["lsp"], **arm}
    params["train"] = {**params["train"], "steps": steps, "lr": lr, "seed": seed}
    params["seeds"] = {**params["seeds"], "train_start": params["seeds"]["train_start"] + SEED_STRIDE * seed}
    params["rounds"] = {f"r{n}": {"n": n, "prev": n - 1} for n in range(1, rounds + 1)}
    return params


def run_arm(name: str, params: dict[str, Any], root: Path, base_model: Path, rounds: int,
            resume: bool = False) -> list[dict[str, Any]]:
    """Round 0 .. ``rounds`` of one arm; its eval@r files, in order. ``resume`` keeps the rounds already built
    in ``root`` (round n depends only on round n - 1's artifacts, so resuming builds the same bytes)."""
    from arena.pipeline.params import validate_all
    from arena.pipeline.rounds import RoundPaths, round_n, round_zero

    validate_all(params)
    built = [n for n in range(rounds + 1) if (root / "evals" / f"r{n}.json").exists()] if resume else []
    if not built:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(base_model, root / "models" / "base")
        round_zero(RoundPaths(root, 0, 0), params)
    for n in range(max(built, default=0) + 1, rounds + 1):
        start = time.perf_counter()
        round_n(RoundPaths(root, n, n - 1), params)
        print(f"[lsp study] {name}: round {n} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return [json.loads((root / "evals" / f"r{n}.json").read_text()) for n in range(rounds + 1)]


def _cell(row: dict[str, Any]) -> str:
    return f"{row['accuracy']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def table(arms: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The four-arm table: each arm's last round on the held-out benchmark, per kind, and its challenger."""
    first = next(iter(arms.values()))
    kinds = [k for k in first[0]["benchmark"] if k != "all"]
    lines = ["| arm | round | held-out accuracy [95% Wilson] | " + " | ".join(kinds) +
             " | greedy | expected | valid proposals | solver success on own proposals |",
             "|---|---|---|" + "---|" * len(kinds) + "---|---|---|---|"]
    rows = [("base (stock model)", first[0])] + [(name, evals[-1]) for name, evals in arms.items()]
    for name, row in rows:
        bench, proposals = row["benchmark"], row.get("proposals") or {}
        success = proposals.get("solver_success")
        lines.append(f"| {name} | {row['round']} | {_cell(bench['all'])} | "
                     + " | ".join(_cell(bench[k]) for k in kinds)
                     + f" | {bench['all']['greedy']:.3f} | {bench['all']['expected']:.3f} | "
                     f"{proposals.get('valid_fraction', '-')} | {'-' if success is None else f'{success:.3f}'} |")
    return lines


def _bucket(puzzle) -> str:
    """A held-out puzzle's row in the breakdown: Nim by pile count, TicTacToe by marks on the board."""
    if puzzle.kind == "nim":
        return f"nim, {len(puzzle.body)} piles"
    marks = sum(bool(c) for c in puzzle.body)
    return f"tictactoe, {2 * ((marks - 1) // 2) + 1}-{2 * ((marks - 1) // 2) + 2} marks"


def breakdown(snapshots: dict[str, Path], params: dict[str, Any]) -> list[str]:
    """Exact expected held-out accuracy (the policy's mass on right answers) per puzzle shape, per snapshot."""
    import numpy as np

    from arena.eval.puzzlebench import benchmark
    from arena.games import puzzles as grammar
    from arena.players.config import sampling_config
    from arena.players.mlx import MLXPlayer
    from arena.train.config import LspConfig

    config = LspConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in params["lsp"].items()})
    puzzles = benchmark(config.puzzles, config.benchmark.start, config.benchmark.stop)
    buckets = sorted({_bucket(p) for p in puzzles})
    columns = {}
    for name, path in snapshots.items():
        policies = MLXPlayer(path, sampling_config(config)).policy([grammar.solver_observation(p) for p in puzzles])
        mass: dict[str, list[float]] = {}
        for puzzle, probs in zip(puzzles, policies, strict=True):
            right = grammar.right_answers(puzzle)
            mass.setdefault(_bucket(puzzle), []).append(
                float(sum(q for a, q in zip(grammar.answers(puzzle), probs, strict=True) if a in right)))
        columns[name] = {b: float(np.mean(v)) for b, v in mass.items()}
        counts = {b: len(v) for b, v in mass.items()}
    lines = ["| held-out puzzles | n | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    lines += [f"| {b} | {counts[b]} | " + " | ".join(f"{columns[c][b]:.3f}" for c in columns) + " |" for b in buckets]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", help="a presets/ file of dotted-key overrides (e.g. presets/smollm2-lsp.yaml)")
    parser.add_argument("-S", dest="settings", action="append", default=[], help="key=value, as dvc exp run -S")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=16, help="train.steps per round (unless the preset sets it)")
    parser.add_argument("--lr", type=float, default=1.0e-4, help="train.lr (unless the preset sets it)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the LSP arms' seeds (one run each)")
    parser.add_argument("--work", default="/tmp/lsp-study", help="scratch directory for the arms' artifacts")
    parser.add_argument("--out", default="studies/results/lsp.md")
    parser.add_argument("--arms", nargs="*", default=list(ARMS), help="a subset of the arms to run")
    parser.add_argument("--resume", action="store_true", help="continue the arms already built in --work")
    args = parser.parse_args(argv)
    from arena.report.lspplots import plot_lsp_rounds
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    work = Path(args.work)
    changes = preset_overrides(args.preset, args.settings)
    base_params = apply_preset(load_params("params.yaml"), changes)
    steps, lr = changes.get("train.steps", args.steps), changes.get("train.lr", args.lr)
    base_model = work / base_dir_name(base_params["base"])  # one per distinct base config: a preset may name another
    if not (base_model / "meta.json").exists():
        build_base(BaseConfig(**base_params["base"]), base_model)
    runs = arm_runs(args.arms, args.seeds)
    dirs = {label: work / label.replace(" ", "_").replace("(", "").replace(")", "") for label, _, _ in runs}
    arms = {label: run_arm(label, arm_params(base_params, ARMS[arm], args.rounds, steps, lr, seed), dirs[label],
                           base_model, args.rounds, args.resume)
            for label, arm, seed in runs}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(arms, indent=1, sort_keys=True) + "\n")
    out.with_suffix(".png").write_bytes(plot_lsp_rounds(arms))
    command = shlex.join(["python", "studies/lsp.py", *(argv if argv is not None else sys.argv[1:])])
    header = [f"# LSP study: {args.rounds} rounds, train.steps {steps}, train.lr {lr}", "", f"`{command}`", "",
              f"Overrides: `{json.dumps(changes)}`.", ""]
    snapshots = {"base": base_model, **{label: path / "snapshots" / f"r{args.rounds}" for label, path in dirs.items()}}
    shapes = ["", "Exact expected accuracy (the solver's probability of a right answer) on the held-out puzzles by "
              f"shape, after round {args.rounds}:", "", *breakdown(snapshots, base_params)]
    out.write_text("\n".join(header + table(arms) + shapes) + "\n")
    print("\n".join(table(arms)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
