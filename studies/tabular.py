"""GRPO self-play on a tabular Kuhn policy: the stabiliser study the model trainer takes its recipe from."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import mlx.core as mx
import mlx.optimizers as optim
import numpy as np
from role_baseline import role_advantages, role_baseline, update_role_baseline  # studies/, beside this file

from arena.games.kuhn_theory import DEALS, INFO_SETS, exploitability, own_reach, policy_from_array
from arena.train.selfplay.grpo import check_loss_hyperparameters, chosen_log_probs, group_advantages, grpo_loss

PoolSampling = Literal["latest", "uniform", "lagged"]
LrDecay = Literal["constant", "inverse_sqrt", "linear"]
Advantage = Literal["group", "role_ema"]
Optimizer = Literal["adam", "sgd"]

NUM_INFO_SETS = len(INFO_SETS)
# Index of the four decision histories inside a card's block of INFO_SETS ("", "p", "b", "pb").
_OPEN, _AFTER_CHECK, _AFTER_BET, _AFTER_CHECK_BET = 0, 1, 2, 3


@dataclass(frozen=True)
class TabularConfig:
    """The knobs of one self-play run; they mirror the model trainer's (see the field comments).

    A step samples ``deals_per_step`` deals and plays each ``group_size`` times with the learner
    alternating seats (so half the games of a group have it in each seat: the luck of the cards cancels
    inside the group), then takes ``num_iterations`` optimiser steps on the GRPO loss.
    """

    steps: int = 2000
    deals_per_step: int = 32
    group_size: int = 2  # games per deal, learner alternating seats; even
    lr: float = 0.05
    lr_decay: LrDecay = "constant"
    lr_decay_scale: int = 100  # inverse_sqrt: lr / sqrt(1 + step / scale)
    optimizer: Optimizer = "adam"
    beta: float = 0.0  # KL coefficient towards the reference ("magnet")
    # 0: the reference stays the initial (uniform) policy; k: the reference is reset to the current
    # policy every k steps (magnetic mirror descent / R-NaD).
    magnet_reset_interval: int = 0
    clip_eps: float = 0.2
    num_iterations: int = 1  # optimiser steps per sampled batch; the ratio departs from 1 after the first
    pool: PoolSampling = "latest"
    pool_lag: int = 5  # 'lagged': the opponent is the snapshot this many snapshots back
    snapshot_interval: int = 10  # steps between snapshots added to the pool
    pool_window: int = 0  # keep only the newest this many snapshots (0 keeps all)
    advantage: Advantage = "group"
    role_decay: float = 0.95  # role_ema: the per-seat baseline's decay
    normalise_std: bool = False
    drop_zero_groups: bool = True
    eval_interval: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        positive = ("steps", "deals_per_step", "group_size", "num_iterations", "snapshot_interval", "eval_interval")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TabularConfig.{name} must be an integer >= 1, got {value!r}")
        for name in ("magnet_reset_interval", "pool_window", "pool_lag", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"TabularConfig.{name} must be an integer >= 0, got {value!r}")
        if self.group_size % 2:
            raise ValueError(
                f"TabularConfig.group_size must be even (the learner plays each deal in both seats), "
                f"got {self.group_size}"
            )
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"TabularConfig.lr must be a positive number, got {self.lr!r}")
        if self.lr_decay_scale < 1:
            raise ValueError(f"TabularConfig.lr_decay_scale must be >= 1, got {self.lr_decay_scale!r}")
        choices = {
            "lr_decay": ("constant", "inverse_sqrt", "linear"),
            "optimizer": ("adam", "sgd"),
            "pool": ("latest", "uniform", "lagged"),
            "advantage": ("group", "role_ema"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"TabularConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.magnet_reset_interval and self.beta == 0:
            raise ValueError("TabularConfig.magnet_reset_interval needs beta > 0: the magnet acts only through the KL")
        if self.advantage == "role_ema" and not 0 <= self.role_decay < 1:
            raise ValueError(f"TabularConfig.role_decay must lie in [0, 1), got {self.role_decay!r}")
        check_loss_hyperparameters(self.clip_eps, self.beta)


# The configurations studies/tabular_kuhn.py compares (overrides of TabularConfig's defaults). Every
# run also reports the pool's reach-weighted average policy next to the last iterate, so "evaluate
# the average" is a column of each row rather than a row of its own.
STUDY_PRESETS: dict[str, dict[str, Any]] = {
    "plain": {},  # REINFORCE-style GRPO against the latest self, constant lr, no KL
    "uniform_pool": {"pool": "uniform"},
    "lagged_pool": {"pool": "lagged"},
    "lr_decay": {"lr_decay": "inverse_sqrt"},
    "kl_initial": {"beta": 0.05},
    "magnet": {"beta": 0.5, "magnet_reset_interval": 100},
    "magnet_weak": {"beta": 0.05, "magnet_reset_interval": 250},
    "role_baseline": {"advantage": "role_ema"},
    "std_normalised": {"normalise_std": True},
    "kl_initial+lr_decay": {"beta": 0.05, "lr_decay": "inverse_sqrt"},
    # Same 64 games a step, as 16 deals x 4 games (2 per seat) instead of 32 x 2.
    "kl_initial+lr_decay+group4": {"beta": 0.05, "lr_decay": "inverse_sqrt", "deals_per_step": 16, "group_size": 4},
    "magnet_weak+role_baseline": {"beta": 0.05, "magnet_reset_interval": 250, "advantage": "role_ema"},
}
# The presets with the lowest exploitability in the study (studies/tabular_kuhn.py, 5-10 seeds): the
# last iterate, and the pool's reach-weighted average policy. The model trainer starts from these knobs.
BEST_LAST_ITERATE = "kl_initial+lr_decay+group4"
BEST_AVERAGE = "magnet_weak+role_baseline"


def preset(name: str, **overrides: Any) -> TabularConfig:
    """The study preset ``name`` with further ``overrides`` (steps, seed, ...)."""
    if name not in STUDY_PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(STUDY_PRESETS)}")
    return TabularConfig(**{**STUDY_PRESETS[name], **overrides})


def learning_rate(config: TabularConfig, step: int) -> float:
    """The step size at optimiser step ``step`` (0-based) under the configured decay."""
    if config.lr_decay == "inverse_sqrt":
        return config.lr / math.sqrt(1.0 + step / config.lr_decay_scale)
    if config.lr_decay == "linear":
        # Linear to 1% of lr at the last step (never exactly 0, so the last batches still move the policy).
        return config.lr * max(0.01, 1.0 - step / max(config.steps * config.num_iterations, 1))
    return config.lr


# ---------------------------------------------------------------------------------------------
# Policies as arrays: the bet logit per info set (the pass logit is fixed at 0)
# ---------------------------------------------------------------------------------------------


def bet_probabilities(theta: np.ndarray) -> np.ndarray:
    """P(b) per info set for bet logits ``theta`` (softmax over [pass=0, bet=theta] is a sigmoid)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(theta, dtype=np.float64)))


def own_reach_vector(probabilities: np.ndarray) -> np.ndarray:
    """Each info set's own-reach probability under the policy ``probabilities`` (see kuhn.own_reach)."""
    policy = policy_from_array(probabilities)
    return np.array([own_reach(policy, name) for name in INFO_SETS])


def _decision_logits(theta: mx.array, info: mx.array) -> mx.array:
    bets = theta[info]
    return mx.stack([mx.zeros_like(bets), bets], axis=-1)


# ---------------------------------------------------------------------------------------------
# Playing a batch of games (numpy)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GameBatch:
    """The learner's side of a batch of games: up to two decisions per game (only the opener acts twice)."""

    info: np.ndarray  # [games, 2] info set index of the learner's decisions
    action: np.ndarray  # [games, 2] 1 = b (bet/call), 0 = p
    valid: np.ndarray  # [games, 2] the decision happened
    reward: np.ndarray  # [games] the learner's chips
    seat: np.ndarray  # [games] 0 = the learner opened


def play_games(
    learner: np.ndarray, opponents: np.ndarray, deals: np.ndarray, seats: np.ndarray, rng: np.random.Generator
) -> GameBatch:
    """Play one round of standard Kuhn per row: the learner (P(b) vector) against its row's opponent.

    ``opponents`` is [games, 12], ``deals`` [games, 2] (opener's card, second mover's card), ``seats``
    [games]. Three uniforms per game are drawn whether used or not, so the RNG stream does not depend
    on how games unfold.
    """
    games = deals.shape[0]
    learner_rows = np.broadcast_to(learner, opponents.shape)
    opens = seats[:, None] == 0
    first = np.where(opens, learner_rows, opponents)
    second = np.where(opens, opponents, learner_rows)
    uniforms = rng.random((games, 3))
    rows = np.arange(games)
    card0, card1 = deals[:, 0], deals[:, 1]
    info0 = card0 * 4 + _OPEN
    bet0 = uniforms[:, 0] < first[rows, info0]
    info1 = card1 * 4 + np.where(bet0, _AFTER_BET, _AFTER_CHECK)
    bet1 = uniforms[:, 1] < second[rows, info1]
    info2 = card0 * 4 + _AFTER_CHECK_BET
    reached2 = ~bet0 & bet1
    bet2 = uniforms[:, 2] < first[rows, info2]
    showdown = np.where(card0 > card1, 1.0, -1.0)
    opener_chips = np.select(
        [bet0 & bet1, bet0 & ~bet1, ~bet0 & ~bet1, reached2 & bet2],
        [2.0 * showdown, 1.0, showdown, 2.0 * showdown],
        default=-1.0,  # check, bet, fold
    )
    learner_opens = seats == 0
    return GameBatch(
        info=np.stack([np.where(learner_opens, info0, info1), info2], axis=1),
        action=np.stack([np.where(learner_opens, bet0, bet1), bet2], axis=1).astype(np.int64),
        valid=np.stack([np.ones(games, dtype=bool), learner_opens & reached2], axis=1),
        reward=np.where(learner_opens, opener_chips, -opener_chips),
        seat=seats.astype(np.int64),
    )


# ---------------------------------------------------------------------------------------------
# The opponent pool
# ---------------------------------------------------------------------------------------------


@dataclass
class SnapshotPool:
    """Past policies (P(b) vectors) with their own-reach vectors, for sampling opponents and averaging."""

    window: int
    probabilities: list[np.ndarray] = field(default_factory=list)
    reaches: list[np.ndarray] = field(default_factory=list)

    def add(self, probabilities: np.ndarray) -> None:
        self.probabilities.append(np.array(probabilities, dtype=np.float64))
        self.reaches.append(own_reach_vector(probabilities))
        if self.window and len(self.probabilities) > self.window:
            del self.probabilities[0], self.reaches[0]

    def opponents(
        self, sampling: PoolSampling, current: np.ndarray, games: int, lag: int, rng: np.random.Generator
    ) -> np.ndarray:
        """[games, 12] opponent policies: the current policy, uniform picks from the pool, or a lagged snapshot."""
        if sampling == "latest":
            return np.broadcast_to(current, (games, NUM_INFO_SETS))
        stacked = np.stack(self.probabilities)
        if sampling == "uniform":
            return stacked[rng.integers(len(stacked), size=games)]
        return np.broadcast_to(stacked[max(0, len(stacked) - 1 - lag)], (games, NUM_INFO_SETS))

    def average(self) -> np.ndarray:
        """The reach-weighted average policy of the snapshots (equal weights), as kuhn.average_policy."""
        probabilities, reaches = np.stack(self.probabilities), np.stack(self.reaches)
        total = reaches.sum(axis=0)
        weighted = (reaches * probabilities).sum(axis=0)
        plain = probabilities.mean(axis=0)  # used only where no snapshot reaches the info set
        return np.where(total > 0, weighted / np.where(total > 0, total, 1.0), plain)


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CurvePoint:
    """Exploitability at one evaluation: of the last iterate, and of the pool's average policy."""

    step: int
    games: int
    last: float
    average: float
    kl: float
    clip_fraction: float


@dataclass(frozen=True)
class TabularRun:
    """A finished run: its config, the curve, and the final last-iterate and average policies (P(b) vectors)."""

    config: TabularConfig
    curve: tuple[CurvePoint, ...]
    final_policy: tuple[float, ...]
    average_policy: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "curve": [asdict(point) for point in self.curve],
            "final_policy": dict(zip(INFO_SETS, self.final_policy, strict=True)),
            "average_policy": dict(zip(INFO_SETS, self.average_policy, strict=True)),
        }


def _make_optimizer(config: TabularConfig) -> optim.Optimizer:
    if config.optimizer == "adam":
        # MLX's Adam defaults to no bias correction, which makes the first steps ~30x lr; correct it.
        return optim.Adam(learning_rate=config.lr, bias_correction=True)
    return optim.SGD(learning_rate=config.lr)


def _loss_and_grad(config: TabularConfig):
    """A compiled function: (theta, info, action, old, ref_theta, advantages, mask) -> ((loss, metrics), grad)."""

    def loss_fn(theta, info, action, logp_old, ref_theta, advantages, mask):
        legal = mx.ones((info.shape[0], 2), dtype=mx.bool_)
        logp_new = chosen_log_probs(_decision_logits(theta, info), legal, action)
        logp_ref = chosen_log_probs(_decision_logits(ref_theta, info), legal, action)
        return grpo_loss(logp_new, logp_old, logp_ref, advantages, mask, clip_eps=config.clip_eps, beta=config.beta)

    return mx.compile(mx.value_and_grad(loss_fn))


def _evaluate(step: int, games: int, theta: np.ndarray, pool: SnapshotPool, metrics: dict[str, float]) -> CurvePoint:
    return CurvePoint(
        step=step,
        games=games,
        last=exploitability(policy_from_array(bet_probabilities(theta))),
        average=exploitability(policy_from_array(pool.average())),
        kl=metrics.get("kl", 0.0),
        clip_fraction=metrics.get("clip_fraction", 0.0),
    )


def train_tabular(config: TabularConfig) -> TabularRun:
    """Run GRPO self-play on a 12-logit Kuhn policy from uniform; evaluate exactly every ``eval_interval`` steps."""
    rng = np.random.default_rng(config.seed)
    params = {"theta": mx.zeros(NUM_INFO_SETS)}
    magnet = mx.zeros(NUM_INFO_SETS)
    optimizer = _make_optimizer(config)
    step_fn = _loss_and_grad(config)
    pool = SnapshotPool(window=config.pool_window)
    pool.add(bet_probabilities(np.array(params["theta"])))
    baseline = role_baseline(2, config.role_decay)
    deal_table = np.array(DEALS)
    games_per_step = config.deals_per_step * config.group_size
    group_ids = np.repeat(np.arange(config.deals_per_step), config.group_size)
    seats = np.tile(np.arange(config.group_size) % 2, config.deals_per_step)
    curve = [_evaluate(0, 0, np.array(params["theta"]), pool, {})]
    metrics: dict[str, float] = {}
    optimiser_steps = 0
    for step in range(1, config.steps + 1):
        theta_now = np.array(params["theta"], dtype=np.float64)
        current = bet_probabilities(theta_now)
        deals = deal_table[rng.integers(len(deal_table), size=config.deals_per_step)][group_ids]
        opponents = pool.opponents(config.pool, current, games_per_step, config.pool_lag, rng)
        batch = play_games(current, opponents, deals, seats, rng)
        if config.advantage == "group":
            result = group_advantages(batch.reward, group_ids, normalise_std=config.normalise_std)
            advantages, flat = result.advantages, result.zero_group
        else:
            advantages = role_advantages(baseline, batch.reward, batch.seat)
            baseline = update_role_baseline(baseline, batch.reward, batch.seat)
            flat = np.zeros(games_per_step, dtype=bool)
        keep = batch.valid & ~flat[:, None] if config.drop_zero_groups else batch.valid
        info = mx.array(batch.info.reshape(-1).astype(np.int32))
        action = mx.array(batch.action.reshape(-1).astype(np.int32))
        adv = mx.array(np.repeat(advantages, 2).astype(np.float32))
        mask = mx.array(keep.reshape(-1).astype(np.float32))
        legal = mx.ones((info.shape[0], 2), dtype=mx.bool_)
        logp_old = chosen_log_probs(_decision_logits(params["theta"], info), legal, action)
        for _ in range(config.num_iterations):
            optimizer.learning_rate = learning_rate(config, optimiser_steps)
            (_, step_metrics), grads = step_fn(params["theta"], info, action, logp_old, magnet, adv, mask)
            params = optimizer.apply_gradients({"theta": grads}, params)
            mx.eval(params, step_metrics)
            optimiser_steps += 1
        metrics = {name: float(value.item()) for name, value in step_metrics.items()}
        if config.magnet_reset_interval and step % config.magnet_reset_interval == 0:
            magnet = mx.array(params["theta"])
        if step % config.snapshot_interval == 0:
            pool.add(bet_probabilities(np.array(params["theta"])))
        if step % config.eval_interval == 0 or step == config.steps:
            curve.append(_evaluate(step, step * games_per_step, np.array(params["theta"]), pool, metrics))
    return TabularRun(
        config=config,
        curve=tuple(curve),
        final_policy=tuple(float(p) for p in bet_probabilities(np.array(params["theta"]))),
        average_policy=tuple(float(p) for p in pool.average()),
    )
