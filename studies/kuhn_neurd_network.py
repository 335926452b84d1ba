"""Study: does the default's network follow NeuRD with a moving magnet on Kuhn, as a gradient or as a fitted target?

    python studies/kuhn_neurd_network.py [--steps 300] [--lr 1e-4] [--arms RULE:BETA:EVERY ...] [--inner 10]
                                      [--tab-lr 8] [--deals 256] [--seed 0] [--model artifacts/models/base]

`studies/kuhn_neurd.py` shows that a *table* of logits under NeuRD's update with an R-NaD magnet converges below 0.05
where the policy gradient stalls. A network shares its weights across information sets and is trained with Adam, so
the same dynamics may not carry over. The embedded model is trained through arena's own scoring of Kuhn's 12 compact
prompts, from its stock policy, under one of these rules (v_I: information set I's visit probability in self-play,
z_I = log pi(bet) - log pi(pass), gap_I = q_bet - q_pass, exact from arena.games.kuhn_theory):
- ``neurd``: the exact expected NeuRD loss -v_I gap_I / 2 z_I (no push past +-LOGIT_CLIP), as a gradient;
- ``pg``: the exact expected policy-gradient loss -v_I gap_I pi_I(bet), as a gradient;
  both plus beta v_I KL(rho_I || pi_I), the magnet rho moved to the current policy every EVERY steps;
- ``table``: the exact tabular NeuRD + R-NaD step, no network (the path the others are measured against);
- ``projected``: that exact step as a target, fitted into the network by ``--inner`` Adam steps on KL(target || pi);
- ``sampled``: the same, the target from ``--deals`` self-play games with branch rollouts (studies/kuhn_neurd.py) played
  by the network's own policy; its points carry the games played so far, branches included;
- ``sampled-allpg``: ``sampled`` with the all-actions policy gradient's step (pi (1 - pi) x gap) as the target.
Prints the exact exploitability every 20 steps.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
import mlx.core as mx  # noqa: E402
import mlx.nn as nn  # noqa: E402
import mlx.optimizers as optim  # noqa: E402
import numpy as np  # noqa: E402
from kuhn_kl_floor import action_gaps  # noqa: E402  (studies/, beside this file)
from kuhn_neurd import Arm, bet_logit, bet_probability, decayed  # noqa: E402
from kuhn_neurd import step as sampled_step  # noqa: E402

from arena.games import kuhn_theory as kt  # noqa: E402
from arena.players.mlx import MLXPlayer  # noqa: E402
from arena.players.policy import AGGRESSIVE, canonical_observations  # noqa: E402
from arena.players.scoring import legal_logp  # noqa: E402


def visits(policy: kt.Policy) -> np.ndarray:
    """Per information set (INFO_SETS order), the probability that self-play under ``policy`` reaches it: chance's
    and the opponent's reach times the actor's own."""
    return np.array([kt.counterfactual_values((policy, policy), name)[0] * kt.own_reach(policy, name) / len(kt.DEALS)
                     for name in kt.INFO_SETS])


class Probe:
    """The model, its 12 canonical observations' scoring pass, and the bet action's index in each."""

    def __init__(self, model_dir: Path) -> None:
        self.player = MLXPlayer(model_dir)
        observations = list(canonical_observations().values())
        ((_, _, self.batch),) = list(self.player.scoring_passes(observations))
        offsets = np.asarray(self.batch.action_offsets)
        aggressive = [next(i for i, a in enumerate(o.legal_actions) if a in AGGRESSIVE) for o in observations]
        self.bet = mx.array(offsets[:-1] + np.asarray(aggressive))
        self.passive = mx.array(offsets[:-1] + 1 - np.asarray(aggressive))  # two legal actions at every info set

    def log_probs(self, model) -> tuple[mx.array, mx.array]:
        """log pi(bet), log pi(pass) at each information set, differentiable."""
        logp = legal_logp(model, self.batch, 1.0)
        return logp[self.bet], logp[self.passive]

    def policy(self) -> dict[str, float]:
        """P(bet) at each information set, from the logit gap in float64 (exp of a float32 log-probability near 0
        rounds a saturated decision to exactly 1, and an unreachable info set has no value gap)."""
        bet, passive = self.log_probs(self.player.model)
        gap = np.array(bet - passive, dtype=np.float64)
        return kt.policy_from_array(bet_probability(gap))


LOGIT_CLIP = 6.0
TARGET_DECAY = 20  # the tabular step size decays as in kuhn_neurd.py's ``lrN,decay`` arms


def loss_fn(probe: Probe, rule: str, beta: float):
    """The rule's exact expected loss as a function of (model, visit weights, gaps, magnet)."""

    def loss(model, weight: mx.array, gap: mx.array, magnet: mx.array) -> mx.array:
        bet, passive = probe.log_probs(model)
        z = bet - passive
        # NeuRD's threshold: no push past +-LOGIT_CLIP (a dominated action's logit would otherwise grow without end).
        inside = mx.stop_gradient(((gap > 0) & (z < LOGIT_CLIP)) | ((gap < 0) & (z > -LOGIT_CLIP)))
        push = mx.where(inside, gap / 2 * z, 0.0) if rule == "neurd" else gap * mx.exp(bet)
        kl = magnet * (mx.log(magnet) - bet) + (1 - magnet) * (mx.log(1 - magnet) - passive)
        return (weight * (beta * kl - push)).sum()

    return loss


def tabular_target(policy: kt.Policy, magnet: np.ndarray, lr: float, beta: float) -> np.ndarray:
    """P(bet) after one exact tabular NeuRD step of ``studies/kuhn_neurd.py`` (its expectation: each info set's logit
    moves by lr x v_I x (gap_I / 2 - beta (pi_I - rho_I)), clipped at +-LOGIT_CLIP)."""
    bet = kt.policy_to_array(policy)
    gaps = action_gaps(policy)
    gap = np.array([gaps[name] for name in kt.INFO_SETS])
    z = np.clip(bet_logit(bet) + lr * visits(policy) * (gap / 2 - beta * (bet - magnet)), -LOGIT_CLIP, LOGIT_CLIP)
    return bet_probability(z)


def project(probe: Probe, target: np.ndarray, optimizer, inner: int, step) -> None:
    """``inner`` optimiser steps of the model towards ``target`` (P(bet) per info set): KL(target || pi), summed."""
    goal = mx.array(target, dtype=mx.float32)
    for _ in range(inner):
        _, grads = step(probe.player.model, goal)
        optimizer.update(probe.player.model, grads)
        mx.eval(probe.player.model.parameters(), optimizer.state)


def sampled_target(policy: kt.Policy, magnet: np.ndarray, lr: float, beta: float, deals: int,
                   rng: np.random.Generator, rule: str = "neurd") -> tuple[np.ndarray, int]:
    """P(bet) after one *sampled* tabular step of ``studies/kuhn_neurd.py`` (``rule`` neurd or allpg) from ``policy``
    (``deals`` self-play games with branch rollouts, the model's own policy in both seats), and the games it played,
    branches included."""
    theta = bet_logit(kt.policy_to_array(policy))
    games = sampled_step(theta, magnet, Arm(rule, beta=beta, logit_clip=LOGIT_CLIP), deals, rng, lr)
    return bet_probability(theta), games


def run_projected(model_dir: Path, steps: int, lr: float, tab_lr: float, beta: float, magnet_every: int,
                  inner: int, deals: int = 0, seed: int = 0, rule: str = "neurd") -> list[float | str]:
    """NeuRD with R-NaD as a tabular target each outer step (exact; or sampled from ``deals`` games with branches
    where ``deals`` > 0), fitted into the network by ``inner`` Adam steps (lr ``lr``); exploitability every 20 outer
    steps (sampled: with the games played so far, as "EXPLOITABILITY@GAMES")."""
    probe = Probe(model_dir)
    rng, games = np.random.default_rng(seed), 0

    def fit(model, goal):
        bet, passive = probe.log_probs(model)
        return (goal * (mx.log(goal) - bet) + (1 - goal) * (mx.log(1 - goal) - passive)).sum()

    step = nn.value_and_grad(probe.player.model, fit)
    optimizer = optim.Adam(learning_rate=lr)
    policy = probe.policy()
    magnet = kt.policy_to_array(policy)
    curve = [kt.exploitability(policy)]
    for n in range(1, steps + 1):
        rate = decayed(tab_lr, n, TARGET_DECAY)
        if deals:
            target, played = sampled_target(policy, magnet, rate, beta, deals, rng, rule)
            games += played
        else:
            target = tabular_target(policy, magnet, rate, beta)
        project(probe, target, optimizer, inner, step)
        policy = probe.policy()
        if magnet_every and n % magnet_every == 0:
            magnet = kt.policy_to_array(policy)
        if n % 20 == 0:
            curve.append(f"{kt.exploitability(policy):.3f}@{games}" if deals else kt.exploitability(policy))
    return curve


def run_table(start: kt.Policy, steps: int, tab_lr: float, beta: float, magnet_every: int) -> list[float]:
    """The same exact tabular NeuRD steps without a network (each target taken as it is), from ``start``."""
    policy = dict(start)
    magnet = kt.policy_to_array(policy)
    curve = [kt.exploitability(policy)]
    for n in range(1, steps + 1):
        policy = kt.policy_from_array(tabular_target(policy, magnet, decayed(tab_lr, n, TARGET_DECAY), beta))
        if magnet_every and n % magnet_every == 0:
            magnet = kt.policy_to_array(policy)
        if n % 20 == 0:
            curve.append(kt.exploitability(policy))
    return curve


def run(model_dir: Path, rule: str, steps: int, lr: float, beta: float, magnet_every: int, optimizer_name: str = "adam",
        decay: int = 0) -> list[float]:
    """Exploitability every 20 steps of the optimiser on the rule's exact loss, from the model's own policy; the
    step size lr / sqrt(1 + step / ``decay``) where ``decay`` > 0."""
    probe = Probe(model_dir)
    step = nn.value_and_grad(probe.player.model, loss_fn(probe, rule, beta))
    optimizer = optim.Adam(learning_rate=lr) if optimizer_name == "adam" else optim.SGD(learning_rate=lr)
    policy = probe.policy()
    magnet = mx.array([policy[name] for name in kt.INFO_SETS])
    curve = [kt.exploitability(policy)]
    for n in range(1, steps + 1):
        optimizer.learning_rate = decayed(lr, n, decay)
        gaps = action_gaps(policy)
        _, grads = step(probe.player.model, mx.array(visits(policy), dtype=mx.float32),
                        mx.array([gaps[name] for name in kt.INFO_SETS], dtype=mx.float32), magnet)
        optimizer.update(probe.player.model, grads)
        mx.eval(probe.player.model.parameters(), optimizer.state)
        policy = probe.policy()
        if magnet_every and n % magnet_every == 0:
            magnet = mx.array([min(max(policy[name], 1e-6), 1 - 1e-6) for name in kt.INFO_SETS])
        if n % 20 == 0:
            curve.append(kt.exploitability(policy))
    return curve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("artifacts/models/base"))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--lr", type=float, default=1.0e-3)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--decay", type=int, default=0, help="> 0: lr / sqrt(1 + step / DECAY)")
    parser.add_argument("--inner", type=int, default=20, help="projected: Adam steps fitting each target")
    parser.add_argument("--deals", type=int, default=256, help="sampled: self-play deals an outer step")
    parser.add_argument("--seed", type=int, default=0, help="sampled: the games' seed")
    parser.add_argument("--tab-lr", type=float, default=8.0, help="projected: the tabular NeuRD step size")
    parser.add_argument("--arms", nargs="+", default=["neurd:0.2:40", "neurd:0:0", "pg:0.2:40", "pg:0.05:0"],
                        help="RULE:BETA:MAGNET_EVERY (0: the magnet stays the model's own start policy)")
    args = parser.parse_args(argv)
    print(f"| arm | {' | '.join(str(20 * k) for k in range(args.steps // 20 + 1))} |")
    print("|---" * (args.steps // 20 + 2) + "|")
    for arm in args.arms:
        rule, beta, every = arm.split(":")
        if rule == "table":
            curve = run_table(Probe(args.model).policy(), args.steps, args.tab_lr, float(beta), int(every))
        elif rule in ("projected", "sampled", "sampled-allpg"):
            curve = run_projected(args.model, args.steps, args.lr, args.tab_lr, float(beta), int(every), args.inner,
                                  0 if rule == "projected" else args.deals, args.seed,
                                  "allpg" if rule == "sampled-allpg" else "neurd")
        else:
            curve = run(args.model, rule, args.steps, args.lr, float(beta), int(every), args.optimizer, args.decay)
        print(f"| {arm} | {' | '.join(v if isinstance(v, str) else f'{v:.3f}' for v in curve)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
