"""Study: exact tabular NeuRD with an R-NaD magnet on Leduc Hold'em, from uniform: is issue 14's 5x in its reach?

    python studies/leduc_neurd.py [--steps 2000] [--lr 1.0] [--beta 0.2] [--every 100] [--weight visits|counterfactual]
                                [--decay N]
    python studies/leduc_neurd.py --grid    # the schedule search: 8 and 16 of the default's rounds, many settings

`studies/kuhn_neurd_network.py` shows the default network tracking exact tabular NeuRD + R-NaD on Kuhn when each step
is fitted as a target. This runs that tabular step on Leduc's 936 information states with arena.games.leduc_theory's
exact values: each legal action's logit moves by ``lr`` x (its value advantage Q(a) - V, summed over the states of
the information set, each weighted by ``weight``) minus ``beta`` x (pi(a) - rho(a)) x the set's weight, the magnet
rho moved to the current policy every ``every`` steps, logits clipped at +-LOGIT_CLIP. ``visits`` weights a state by
its probability in self-play (what sampled games see); ``counterfactual`` by chance and the opponent's reach only
(what CFR uses). ``--decay N`` shrinks ``lr`` as 1 / sqrt(1 + (step - 1) / N), the network's
``train.neurd_decay`` schedule. Prints the exact exploitability (NashConv / 2; uniform 2.374) at a few steps.

The table is a simulator of the pipeline's schedule, without sampling noise and without the fit's lag: one step is
one iteration (``selfplay.iterations_per_round`` a round, the magnet moving every round: ``--every 20``), and the
network's ``train.neurd_lr`` is twice the table's ``lr`` (a visit weighs 1 / the iteration's games, and each deal is
played from both seats, so a seat's states carry half the table's weight); ``train.beta`` is the same.
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np

from arena.games import leduc_theory as lt
from arena.games.leduc_cfr import action_gains
from arena.train.selfplay.schedule import decayed

LOGIT_CLIP = 6.0
TARGET = 1.893 / 5  # issue 14's "falls 5x" from the stock model's Leduc exploitability (docs/results.md, round 0)


def softmax(theta: np.ndarray) -> np.ndarray:
    """The policy of ``theta`` [936, 3] over each information state's legal actions."""
    legal = lt.tree().info_legal.astype(bool)
    z = np.where(legal, theta, -np.inf)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def advantages(sigma: np.ndarray, weight: str) -> tuple[np.ndarray, np.ndarray]:
    """Per information state and action, the weighted sum of Q(a) - V over its (node, deal) pairs (the actor's
    chips), and the information state's total weight."""
    both = [action_gains(sigma, player, on_policy=weight == "visits") for player in (0, 1)]
    return both[0][0] + both[1][0], both[0][1] + both[1][1]


def run(steps: int, lr: float, beta: float, every: int, weight: str, report: tuple[int, ...],
        decay: float = 0.0, start: np.ndarray | None = None, offset: int = 0) -> dict[int, float]:
    """Exploitability at each step of ``report`` (and 0), the policy stepping from ``start`` (uniform if None; it
    is the first magnet too), the decayed step counted from step ``offset`` + 1 of a longer run."""
    theta = np.zeros((len(lt.tree().info_states), 3))
    if start is not None:  # centred log-policy, so that the clip bounds the same logits a run from uniform has
        legal = lt.tree().info_legal.astype(bool)
        logs = np.where(legal, np.log(np.maximum(start, 1e-9)), 0.0)
        centred = logs - logs.sum(axis=1, keepdims=True) / legal.sum(axis=1, keepdims=True)
        theta = np.clip(np.where(legal, centred, 0.0), -LOGIT_CLIP, LOGIT_CLIP)
    sigma = softmax(theta)
    magnet, out = sigma.copy(), {0: lt.exploitability(sigma)}
    for n in range(1, steps + 1):
        push, total = advantages(sigma, weight)
        rate = decayed(lr, "inverse_sqrt", (offset + n - 1) / decay) if decay else lr  # the pipeline's own schedule
        theta = np.clip(theta + rate * (push - beta * total[:, None] * (sigma - magnet)), -LOGIT_CLIP, LOGIT_CLIP)
        sigma = softmax(theta)
        if every and n % every == 0:
            magnet = sigma.copy()
        if n in report:
            out[n] = lt.exploitability(sigma)
    return out


GRID = {"lr": (4.0, 10.0, 20.0), "beta": (0.5, 1.0, 2.0), "every": (20, 50), "weight": ("visits", "counterfactual")}
ROUND_STEPS = tuple(range(20, 321, 20))  # the default's 20 iterations a round, 16 rounds


def grid() -> list[str]:
    """Markdown rows: each constant-step setting of GRID (and the default's decayed schedule) by round, best first
    at round 8."""
    settings = [(4.0, 0.5, 20, "visits", 20.0)] + [(*c, 0.0) for c in itertools.product(*GRID.values())]
    rows = []
    for lr, beta, every, weight, decay in settings:
        curve = run(ROUND_STEPS[-1], lr, beta, every, weight, ROUND_STEPS, decay)
        cells = [curve[n] for n in ROUND_STEPS]
        rows.append((cells[7], f"| {lr:g} | {beta:g} | {every} | {weight} | {decay:g} | "
                     + " | ".join(f"{v:.3f}" for v in cells) + f" | {max(cells[7:]):.3f} |"))
    head = "| lr | beta | every | weight | decay | " + " | ".join(f"r{k}" for k in range(1, 17)) + " | max r8-16 |"
    return [head, "|---" * 22 + "|"] + [row for _, row in sorted(rows)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--beta", type=float, default=0.2)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--weight", choices=["visits", "counterfactual"], default="visits")
    parser.add_argument("--decay", type=float, default=0.0)
    parser.add_argument("--grid", action="store_true")
    args = parser.parse_args(argv)
    if args.grid:
        print(f"Leduc, exact tabular NeuRD + R-NaD by round (20 steps a round); issue 14's 5x target: {TARGET:.3f}")
        print("\n".join(grid()))
        return 0
    report = tuple(n for n in (10, 30, 100, 300, 1000, 2000, 5000, 10000) if n <= args.steps)
    curve = run(args.steps, args.lr, args.beta, args.every, args.weight, report, args.decay)
    print(f"Leduc, exact tabular NeuRD + R-NaD ({vars(args)}); issue 14's 5x target: {TARGET:.3f}")
    print("| step | " + " | ".join(str(n) for n in curve) + " |")
    print("|---" * (len(curve) + 1) + "|")
    print("| exploitability | " + " | ".join(f"{v:.3f}" for v in curve.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
