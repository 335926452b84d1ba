"""Probe: the Kuhn exploitability that GRPO's KL term alone allows, as the exact fixed point of regularised self-play.

    python studies/kuhn_kl_floor.py [--magnet artifacts/pools/r1/pool.json] [--betas 0.1 0.05 ...]

This is not a training run. It asks what the default's objective converges to at best, with exact expectations.
The default's KL term is ``beta`` x k3 on the sampled action. On policy, its expected gradient is
``sum_a (pi(a) - rho(a)) grad log pi(a)``: the gradient of the forward KL(rho || pi), where rho is the reference.

The reward term's expected gradient at an info set is ``c x pi(1 - pi) x (q_bet - q_pass)`` for the bet logit.
``c`` is the advantage's scale ((G-1)/G: 1/2 for a deal's two games). Both terms are means over the same kept
decisions, so the fixed point holds info set by info set:
``pi (1 - pi) (q_bet - q_pass) = beta_eff (pi - rho)``, with ``beta_eff = beta x kept / c``.
``kept`` is the share of decisions in groups with unequal rewards. The default's train logs show 0.91-0.93,
so ``beta_eff`` is about 0.09 for beta 0.05.

The q values are conditional on reaching the info set, against the same policy in the other seat (self-play,
pool.sampling: latest). The probe solves the fixed point by damped iteration, then prints its exact
exploitability for each ``beta_eff`` and how far it is from a fixed point.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from arena.games import kuhn_theory as kt

DAMPING = (0.05, 0.01, 0.002)  # the steps fixed_point tries, largest first
CONVERGED = 1e-10


def action_gaps(policy: kt.Policy) -> dict[str, float]:
    """Per info set, q(bet or call) - q(pass or fold): the actor's expected chips given the info set is reached,
    both seats playing ``policy``."""
    gaps = {}
    for name in kt.INFO_SETS:
        reach, values = kt.counterfactual_values((policy, policy), name)
        gaps[name] = (values[kt.BET_ACTION] - values[kt.PASS]) / reach
    return gaps


def regularised_response(gap: float, rho: float, beta: float) -> float:
    """The root in (0, 1) of ``p (1 - p) gap = beta (p - rho)``: -gap p^2 + (gap - beta) p + beta rho = 0."""
    if abs(gap) < 1e-12:
        return rho
    b = gap - beta
    root = math.sqrt(b * b + 4.0 * gap * beta * rho)
    # The quadratic's two roots multiply to -beta rho / gap: for gap > 0 one root is negative, for gap < 0 both are
    # positive and the smaller one lies in (0, 1); either way it is (b + root) / (2 gap) or (b - root) / (2 gap).
    candidates = [(b + root) / (2.0 * gap), (b - root) / (2.0 * gap)]
    return next(p for p in candidates if 0.0 <= p <= 1.0)


def fixed_point(magnet: kt.Policy, beta: float, steps: int = 200000) -> tuple[dict[str, float], float]:
    """The regularised self-play fixed point from ``magnet``, and its residual (the largest change of the last step).

    Damped iteration towards the info sets' regularised responses. Under beta_eff ~0.09 a step of 0.05 cycles, so
    each failed run retries with a smaller step.
    """
    for damping in DAMPING:
        policy, residual = dict(magnet), math.inf
        for _ in range(int(steps * DAMPING[-1] / damping)):
            gaps = action_gaps(policy)
            target = {name: regularised_response(gaps[name], magnet[name], beta) for name in kt.INFO_SETS}
            residual = max(abs(target[name] - policy[name]) for name in kt.INFO_SETS)
            if residual < CONVERGED:
                return policy, residual
            policy = {name: (1 - damping) * policy[name] + damping * target[name] for name in kt.INFO_SETS}
    return policy, residual


def _magnet(path: str | None) -> tuple[str, kt.Policy]:
    if path is None:
        return "uniform", kt.uniform_policy()
    pool = json.loads(Path(path).read_text())
    return f"{path} (first member)", pool["members"][0]["kuhn_policy"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--magnet", help="a pool.json whose first member's Kuhn policy is the reference "
                                         "(default: the uniform policy)")
    parser.add_argument("--betas", type=float, nargs="+", default=[0.2, 0.1, 0.09, 0.07, 0.05, 0.037, 0.025])
    args = parser.parse_args(argv)
    name, magnet = _magnet(args.magnet)
    print(f"magnet: {name}, exploitability {kt.exploitability(magnet):.3f}")
    print("| beta_eff | exploitability of the fixed point | residual |")
    print("|---|---|---|")
    for beta in args.betas:
        policy, residual = fixed_point(magnet, beta)
        found = f"{kt.exploitability(policy):.4f}" if residual < CONVERGED else "no fixed point found"
        print(f"| {beta:g} | {found} | {residual:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
