"""Study: can the network take one exact NeuRD step? Fits to full-width exact targets on Leduc's 936 information states.

    python studies/neurd_fit.py fit [--model DIR] [--steps 10]          # one target, several optimisers
    python studies/neurd_fit.py run [--model DIR] [--iterations 20]     # a round of full-width targets, and the table
    python studies/neurd_fit.py steps                                   # both games' exact tables by neurd_lr, no model

The pipeline's NeuRD fit (arena.train.selfplay.neurd) has targets only at the prompts an iteration's games visited, and
studies/leduc_tracking.py shows the network losing to its exact twin below ~0.5. This separates the two suspects,
coverage and conditioning, by removing sampling and coverage: every target here is the exact expected NeuRD target
(arena.games.leduc_cfr's exact action values; the halving makes it the sampled targets' expectation, as
studies/leduc_neurd.py explains) at every one of the 936 information states, each prompt the one the model sees in play.

``fit`` builds one target from the model's own policy (the magnet is that policy, as at a round's start) and fits
it from a fresh optimiser over all 936 prompts, printing the mean KL(target || pi) before the fit and after 1, 3 and
all steps, and the exploitability at the start, of the target, and of the fitted network. A well-conditioned fit
closes the KL; an ill-conditioned one either barely moves it or overshoots.

``run`` does what one pipeline round would do with full-width exact targets: ``--iterations`` targets, each fitted by
the pipeline's own fit (params.yaml's ``train.steps`` Adam steps at ``train.lr``, each on ``train.batch_size`` random
prompts of the 936), the magnet the round's start; beside it the exact table (studies/leduc_neurd.py) from the same
start.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
import numpy as np  # noqa: E402
from leduc_neurd import run as table_run  # noqa: E402
from tables import emit_table, exact_table_rounds, uniform_logp  # noqa: E402

from arena.core.config import load_section  # noqa: E402
from arena.games import leduc_theory as lt  # noqa: E402
from arena.players.config import MLXPlayerConfig  # noqa: E402
from arena.players.mlx import MLXPlayer  # noqa: E402
from arena.players.policy import leduc_canonical_observations  # noqa: E402
from arena.train.config import TrainConfig  # noqa: E402
from arena.train.selfplay.fullwidth import as_table, full_width_targets  # noqa: E402
from arena.train.selfplay.fullwidth import exploitability as exact  # noqa: E402
from arena.train.selfplay.neurd import NeuRDFit, Targets, all_action_logp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUDGET = (65536, "train.max_batch_tokens")
# Adam at train.lr's neighbours, and plain gradient descent: the two first-order fits one would reach for.
OPTIMISERS = (("adam", 1e-5), ("adam", 3e-5), ("adam", 1e-4), ("adam", 3e-4), ("adam", 1e-3),
              ("sgd", 1e-3), ("sgd", 3e-3), ("sgd", 1e-2))


def exact_config(beta: float, weight: str) -> TrainConfig:
    """The pipeline's exact-target config for ``--beta`` and ``--weight`` (visits is the onpolicy weighting)."""
    return TrainConfig(objective="neurd", neurd_values="exact", beta=beta,
                       neurd_weighting="onpolicy" if weight == "visits" else "counterfactual")


def exact_targets(current: list[np.ndarray], magnet: list[np.ndarray], lr: float,
                  config: TrainConfig) -> list[np.ndarray]:
    """Every Leduc information state's NeuRD target: the pipeline's own full-width targets."""
    return [target for target, _ in full_width_targets("leduc", current, magnet, lr, config)]


def as_sigma(logp: list[np.ndarray]) -> np.ndarray:
    """The [936, 3] Leduc policy array of per-observation log-policies."""
    return as_table("leduc", logp)


def mean_kl(target: list[np.ndarray], logp: list[np.ndarray]) -> float:
    """The mean over states of KL(target || pi)."""
    return float(np.mean([np.sum(np.exp(t) * (t - p)) for t, p in zip(target, logp, strict=True)]))


def _player(model: Path) -> MLXPlayer:
    return MLXPlayer(str(model), MLXPlayerConfig(view="compact", temperature=1.0, max_batch_tokens=BUDGET[0]))


def fit_once(model: Path, kind: str, lr: float, steps: int, args: argparse.Namespace) -> str:
    """One markdown row: a fresh ``kind`` optimiser at ``lr`` fits one full-width target for ``steps`` steps."""
    import mlx.optimizers as optim

    policy = _player(model)
    fit = NeuRDFit(policy, TrainConfig(), 1.0)
    if kind == "sgd":
        fit.optimizer = optim.SGD(learning_rate=lr)
    observations = list(leduc_canonical_observations().values())
    current = all_action_logp(policy, observations, 1.0, *BUDGET)
    target = exact_targets(current, current, args.neurd_lr, exact_config(args.beta, args.weight))
    targets, every = Targets(observations, target, np.zeros(len(target), np.int64), 0.0), np.arange(len(target))
    start, kls = time.perf_counter(), [fit(targets, every, lr)["kl"] for _ in range(steps)]  # each: KL before it
    fitted = all_action_logp(policy, observations, 1.0, *BUDGET)
    kls.append(mean_kl(target, fitted))
    return (f"| {kind} | {lr:g} | {kls[0]:.4f} | {kls[1]:.4f} | {kls[min(3, steps)]:.4f} | {kls[-1]:.4f} | "
            f"{lt.exploitability(as_sigma(current)):.3f} | {lt.exploitability(as_sigma(target)):.3f} | "
            f"{lt.exploitability(as_sigma(fitted)):.3f} | {time.perf_counter() - start:.0f} |")


def fit_table(args: argparse.Namespace) -> list[str]:
    """``fit``'s rows, one per optimiser of OPTIMISERS."""
    head = (f"| optimiser | lr | KL before | after 1 | after 3 | after {args.steps} | exploitability: start | "
            "target | fitted | s |")
    rows = [head, "|---" * 10 + "|"]
    for kind, lr in OPTIMISERS:
        rows.append(fit_once(args.model, kind, lr, args.steps, args))
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def run_round(args: argparse.Namespace) -> list[str]:
    """``run``'s rows: per iteration, the target's and the fitted network's exploitability, and the exact table's
    after as many steps from the same start."""
    config = load_section(TrainConfig, "train", ROOT / "params.yaml")
    config = replace(config, lr=args.fit_lr or config.lr, steps=args.fit_steps or config.steps)
    policy, rng = _player(args.model), np.random.default_rng(0)
    observations = list(leduc_canonical_observations().values())
    current = all_action_logp(policy, observations, 1.0, *BUDGET)
    total = args.iterations * args.rounds
    table = table_run(total, args.neurd_lr / 2, args.beta, args.iterations, args.weight, tuple(range(1, total + 1)),
                      start=as_sigma(current))
    rows = ["| round.iteration | target | network after the fit | mean KL to the target | exact table | s |",
            "|---" * 6 + "|", f"| 0 | | {lt.exploitability(as_sigma(current)):.3f} | | {table[0]:.3f} | |"]
    start = time.perf_counter()
    for n in range(total):
        if n % args.iterations == 0:  # a round: the magnet moves to its start, and its fit starts a fresh Adam
            magnet, fit, step = current, NeuRDFit(policy, config, 1.0), 0
        target = exact_targets(current, magnet, args.neurd_lr, exact_config(args.beta, args.weight))
        targets = Targets(observations, target, np.zeros(len(target), np.int64), 0.0)
        for _ in range(config.steps):
            picked = np.sort(rng.choice(len(target), size=min(config.batch_size, len(target)), replace=False))
            step += 1
            fit(targets, picked, config.lr * min(1.0, step / args.warmup) if args.warmup else config.lr)
        current = all_action_logp(policy, observations, 1.0, *BUDGET)
        rows.append(f"| {n // args.iterations + 1}.{n % args.iterations + 1} | "
                    f"{lt.exploitability(as_sigma(target)):.3f} | {lt.exploitability(as_sigma(current)):.3f} | "
                    f"{mean_kl(target, current):.4f} | {table[n + 1]:.3f} | {time.perf_counter() - start:.0f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


STEPS = (8.0, 10.0, 12.0, 16.0, 20.0)


def kuhn_table(lr: float, beta: float, weight: str, rounds: int, iterations: int) -> list[float]:
    """Kuhn's exact full-width NeuRD from uniform (the pipeline's own targets), exploitability at each round's end."""
    ends = exact_table_rounds("kuhn", uniform_logp("kuhn"), lr, exact_config(beta, weight), rounds, iterations)
    return [exact("kuhn", as_table("kuhn", current)) for current in ends]


def step_table(args: argparse.Namespace) -> list[str]:
    """``steps``' rows: per ``neurd_lr`` of STEPS, each game's exact table by round (8 rounds of ``--iterations``)."""
    rounds, rows = 8, ["| neurd_lr | game | " + " | ".join(f"r{n}" for n in range(1, 9)) + " |", "|---" * 10 + "|"]
    ends = tuple(args.iterations * n for n in range(1, rounds + 1))
    for lr in STEPS:
        leduc = table_run(ends[-1], lr / 2, args.beta, args.iterations, args.weight, ends)
        for game, curve in (("kuhn", kuhn_table(lr, args.beta, args.weight, rounds, args.iterations)),
                            ("leduc", [leduc[n] for n in ends])):
            rows.append(f"| {lr:g} | {game} | " + " | ".join(f"{v:.3f}" for v in curve) + " |")
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["fit", "run", "steps"])
    parser.add_argument("--model", type=Path, default=Path("artifacts/models/base"))
    parser.add_argument("--steps", type=int, default=10, help="fit: the steps each optimiser takes")
    parser.add_argument("--iterations", type=int, default=20, help="run: a round's iterations")
    parser.add_argument("--rounds", type=int, default=1, help="run: rounds (each moves the magnet, a fresh Adam)")
    parser.add_argument("--neurd-lr", type=float, default=20.0, help="train.neurd_lr (the table's step is half)")
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--weight", choices=["visits", "counterfactual"], default="counterfactual")
    parser.add_argument("--fit-lr", type=float, help="run: the fit's Adam lr (default: params.yaml's train.lr)")
    parser.add_argument("--fit-steps", type=int, help="run: Adam steps a target (default: params.yaml's train.steps)")
    parser.add_argument("--warmup", type=int, default=0, help="run: ramp the Adam lr linearly over this many steps")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    rows = {"fit": fit_table, "run": run_round, "steps": step_table}[args.mode](args)
    emit_table(rows, "Leduc: full-width exact NeuRD targets fitted into the network", args, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
