"""Study: NeuRD's all-actions update on a tabular Kuhn policy, its action values from branch rollouts.

    python studies/kuhn_neurd.py [--games 350000] [--deals 256] [--seeds 3] [--first-seed 0] [--png PNG] [--sweep]

Why: the neural pipeline's Kuhn policy rests at 0.11-0.16 on saturated decisions (studies/results/clip_schedule.md).
Any unbiased sampled policy gradient moves a decision's logit by pi (1 - pi) x (q_bet - q_pass) in expectation, which
vanishes as pi saturates. NeuRD moves it by the value gap itself, but needs every legal action's value where only the
chosen one was played. Here each self-play game carries them: at every decision on its path, the deal is replayed
with the other action forced and played out by the same policy (a branch rollout). Each branch counts as a game.

Arms on the same samples: ``neurd`` (the logit moves by (q_bet - q_pass) / 2 a visit) and ``allpg`` (the all-actions
policy gradient, the same values times pi (1 - pi)), each with a KL pull ``beta x (pi - rho)`` towards a magnet rho
(uniform; ``magnet_every`` > 0 moves it to the current policy every that many steps, as R-NaD does), logits clipped to
+-``logit_clip`` (NeuRD's threshold). Every number is the exact exploitability of the last iterate
(arena.games.kuhn_theory), printed against the games played, branches included.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena.games.kuhn_theory import INFO_SET_INDEX, exploitability, policy_from_array
from arena.train.config import TrainConfig
from arena.train.selfplay.schedule import neurd_rate

TERMINAL = {"pp": 1, "bp": 1, "bb": 2, "pbp": -1, "pbb": 2}  # stake; "bp" and "pbp" are folds (fixed sign)
ACTOR = {"": 0, "p": 1, "b": 1, "pb": 0}


@dataclass(frozen=True)
class Arm:
    """One update rule: ``rule`` neurd | allpg, its step size, KL pull and magnet schedule, logit threshold."""

    rule: str = "neurd"
    lr: float = 1.0
    beta: float = 0.0
    magnet_every: int = 0
    logit_clip: float = 6.0
    decay_steps: int = 0  # > 0: the step size is lr / sqrt(1 + step / decay_steps)
    deals: int | None = None  # deals a step (None: the command line's --deals)


def bet_probability(theta: np.ndarray) -> np.ndarray:
    """P(bet or call) of bet-logits ``theta`` (the logistic function)."""
    return 1.0 / (1.0 + np.exp(-theta))


def bet_logit(bet: np.ndarray) -> np.ndarray:
    """Inverse of ``bet_probability``."""
    return np.log(bet) - np.log1p(-bet)


def decayed(lr: float, step: int, decay_steps: int) -> float:
    """Step ``step``'s (1-based) step size: ``lr`` / sqrt(1 + (step - 1) / ``decay_steps``), or ``lr`` if 0, as
    the pipeline's ``train.neurd_lr`` / ``train.neurd_decay`` (arena.train.selfplay.schedule.neurd_rate)."""
    return neurd_rate(TrainConfig(objective="neurd", neurd_lr=lr, neurd_decay=decay_steps), step)


def payoff(history: str, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Chips won by the first mover at a terminal ``history``, per deal (cards ``first``, ``second``)."""
    stake = TERMINAL[history]
    if history in ("bp", "pbp"):  # a fold: the bettor takes the ante
        return np.full(first.shape, float(stake))
    return np.where(first > second, stake, -stake).astype(np.float64)


def _info(history: str, cards: np.ndarray) -> np.ndarray:
    return np.array([INFO_SET_INDEX[f"{card}{history}"] for card in cards], dtype=np.int64)


def play_out(history: str, first: np.ndarray, second: np.ndarray, bet: np.ndarray,
             rng: np.random.Generator) -> np.ndarray:
    """The first mover's chips from ``history`` on, both seats sampling from ``bet`` (P(bet or call) per info set)."""
    if history in TERMINAL:
        return payoff(history, first, second)
    actor_cards = first if ACTOR[history] == 0 else second
    bets = rng.random(first.shape) < bet[_info(history, actor_cards)]
    out = np.empty(first.shape)
    for action, chosen in (("b", bets), ("p", ~bets)):
        if chosen.any():
            out[chosen] = play_out(history + action, first[chosen], second[chosen], bet, rng)
    return out


def branch_rollout(history: str, first: np.ndarray, second: np.ndarray, bet: np.ndarray,
                   rng: np.random.Generator, visits: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Play from ``history`` as ``play_out`` does; at each decision also play the other action out once, and append
    (info sets, q_bet - q_pass for the actor) to ``visits``. Returns the first mover's chips of the played games."""
    if history in TERMINAL:
        return payoff(history, first, second)
    actor = ACTOR[history]
    info = _info(history, first if actor == 0 else second)
    bets = rng.random(first.shape) < bet[info]
    played, other = np.empty(first.shape), np.empty(first.shape)
    for action, chosen in (("b", bets), ("p", ~bets)):
        if chosen.any():
            played[chosen] = branch_rollout(history + action, first[chosen], second[chosen], bet, rng, visits)
            flip = "p" if action == "b" else "b"
            other[chosen] = play_out(history + flip, first[chosen], second[chosen], bet, rng)
    sign = 1.0 if actor == 0 else -1.0
    visits.append((info, sign * np.where(bets, played - other, other - played)))
    return played


def step(theta: np.ndarray, magnet: np.ndarray, arm: Arm, deals: int, rng: np.random.Generator, lr: float) -> int:
    """One batch of ``deals`` self-play games with branches and one update of ``theta`` (step size ``lr``) in place;
    the games played."""
    cards = np.array([rng.permutation(3)[:2] for _ in range(deals)])
    bet = bet_probability(theta)
    visits: list[tuple[np.ndarray, np.ndarray]] = []
    branch_rollout("", cards[:, 0], cards[:, 1], bet, rng, visits)
    info = np.concatenate([v[0] for v in visits])
    gap = np.concatenate([v[1] for v in visits])
    pull = bet[info] - magnet[info]
    weight = 0.5 if arm.rule == "neurd" else bet[info] * (1.0 - bet[info])
    push = np.bincount(info, weight * gap - arm.beta * pull, minlength=theta.size) / deals
    np.clip(theta + lr * push, -arm.logit_clip, arm.logit_clip, out=theta)
    return deals + len(info)  # every branch is a game


def run(arm: Arm, games: int, deals: int, seed: int, every: int = 10) -> list[tuple[int, float]]:
    """The arm's curve from uniform until ``games`` games are played: (games so far, exploitability of the last
    iterate) every ``every`` steps and at the end; ``deals`` a step unless the arm sets its own."""
    rng = np.random.default_rng(seed)
    theta, played, n = np.zeros(len(INFO_SET_INDEX)), 0, 0
    magnet = np.full(theta.size, 0.5)
    curve = [(0, exploitability(policy_from_array(magnet)))]
    while played < games:
        n += 1
        played += step(theta, magnet, arm, arm.deals or deals, rng, decayed(arm.lr, n, arm.decay_steps))
        if arm.magnet_every and n % arm.magnet_every == 0:
            magnet = bet_probability(theta)
        if n % every == 0 or played >= games:
            curve.append((played, exploitability(policy_from_array(bet_probability(theta)))))
    return curve


ARMS = {
    "allpg,beta0.05": Arm("allpg", beta=0.05),
    "allpg,lr4,decay,rnad(beta0.2,every40)": Arm("allpg", lr=4.0, decay_steps=20, beta=0.2, magnet_every=40),
    "neurd": Arm("neurd"),
    "neurd,lr4,decay": Arm("neurd", lr=4.0, decay_steps=20),
    "neurd,lr4,decay,rnad(beta0.2,every10)": Arm("neurd", lr=4.0, decay_steps=20, beta=0.2, magnet_every=10),
    "neurd,lr4,decay,rnad(beta0.2,every20)": Arm("neurd", lr=4.0, decay_steps=20, beta=0.2, magnet_every=20),
    "neurd,lr4,decay,rnad(beta0.2,every40)": Arm("neurd", lr=4.0, decay_steps=20, beta=0.2, magnet_every=40),
    "neurd,lr4,decay,rnad(beta0.5,every20)": Arm("neurd", lr=4.0, decay_steps=20, beta=0.5, magnet_every=20),
    # One of the sweep's best at 65k games (seeds 0-2, 81 settings), checked on seeds 10-19 (results/kuhn_neurd.md).
    "neurd,lr8,decay,rnad(beta0.5,every20)": Arm("neurd", lr=8.0, decay_steps=20, beta=0.5, magnet_every=20),
}
SWEEP = {"deals": (64, 128, 256), "lr": (2.0, 4.0, 8.0), "beta": (0.2, 0.5, 1.0), "magnet_every": (20, 40, 80)}
CHECKPOINTS = (16_384, 32_768, 65_536, 98_304, 131_072, 196_608)


def at_games(curve: list[tuple[int, float]], games: int) -> float | None:
    """The last evaluation at or before ``games`` games (None if the run never got there)."""
    done = [value for played, value in curve if played <= games]
    return done[-1] if curve[-1][0] >= games else None


def table(curves: dict[str, list[list[tuple[int, float]]]]) -> list[str]:
    """Markdown: per arm, the seed-mean exploitability at each checkpoint, and its best and last evaluation."""
    head = " | ".join(f"@ {g:,} games" for g in CHECKPOINTS)
    lines = [f"| arm | {head} | best (seed mean) | last (seed range) |", "|---" * (3 + len(CHECKPOINTS)) + "|"]
    for name, runs in curves.items():
        cells = []
        for games in CHECKPOINTS:
            values = [at_games(curve, games) for curve in runs]
            cells.append("-" if None in values else f"{np.mean(values):.3f}")
        best = np.mean([min(v for _, v in curve) for curve in runs])
        last = [curve[-1][1] for curve in runs]
        lines.append(f"| {name} | {' | '.join(cells)} | {best:.3f} | {np.mean(last):.3f} "
                     f"({min(last):.3f}-{max(last):.3f}) |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=350_000, help="games a run, branch rollouts included")
    parser.add_argument("--deals", type=int, default=256)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--sweep", action="store_true", help="NeuRD with R-NaD over SWEEP's grid; the best 10")
    parser.add_argument("--arms", nargs="*", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--png", type=Path, help="the seed-mean curves, exploitability against games")
    args = parser.parse_args(argv)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    arms = sweep_arms() if args.sweep else {name: ARMS[name] for name in args.arms}
    curves = {name: [run(arm, args.games, args.deals, seed) for seed in seeds] for name, arm in arms.items()}
    if args.sweep:
        curves = dict(sorted(curves.items(), key=lambda item: np.mean([at_games(c, 65_536) for c in item[1]]))[:10])
    print("\n".join(table(curves)))
    if args.png:
        plot(curves, args.png)
    return 0


def sweep_arms() -> dict[str, Arm]:
    """NeuRD with a moving magnet at every setting of SWEEP (lr decayed as in ``lr4,decay``)."""
    return {f"neurd,deals{d},lr{lr:g},decay,rnad(beta{b:g},every{k})":
            Arm("neurd", lr=lr, decay_steps=20, beta=b, magnet_every=k, deals=d)
            for d in SWEEP["deals"] for lr in SWEEP["lr"] for b in SWEEP["beta"] for k in SWEEP["magnet_every"]}


def plot(curves: dict[str, list[list[tuple[int, float]]]], path: Path) -> None:
    """Each arm's seed-mean exploitability against games played (branches included), offline (Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, runs in curves.items():
        games = [played for played, _ in runs[0]]
        ax.plot(games, np.mean([[v for _, v in curve] for curve in runs], axis=0), label=name, linewidth=1.2)
    ax.axhline(0.05, color="grey", linestyle=":", linewidth=1)
    ax.set(xlabel="games played (branch rollouts included)", ylabel="exploitability (last iterate)", ylim=(0, 0.3))
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
