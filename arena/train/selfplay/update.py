"""The GRPO step: identical decisions merged into weighted rows, micro-batches summed in order on any world."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from arena.games.base import Observation
from arena.players.memo import PolicyMemo
from arena.players.mlx import MLXPlayer
from arena.train.config import TrainConfig
from arena.train.selfplay.dataparallel import World, micro_batch_rounds


def chosen_logp(model, batch, chosen: np.ndarray, temperature: float):
    """Differentiable log-probability of each chosen action under the masked, tempered softmax."""
    import mlx.core as mx

    from arena.players.scoring import legal_logp

    logp = legal_logp(model, batch, temperature)
    return logp[mx.array(np.asarray(batch.action_offsets[:-1]) + chosen)]


def distinct_rows(keys: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The first index of each distinct key (in order of first appearance) and how many times it occurs."""
    rows: dict[Any, int] = {}
    first: list[int] = []
    counts: list[int] = []
    for index, key in enumerate(keys):
        row = rows.setdefault(key, len(first))
        if row == len(first):
            first.append(index)
            counts.append(0)
        counts[row] += 1
    return np.asarray(first, dtype=np.int64), np.asarray(counts, dtype=np.float64)


class GRPOUpdate:
    """One GRPO optimisation step of a player's model on some of its decisions (Adam with bias correction).

    The loss is a mean over decisions of a term that depends only on the decision's prompt, legal actions and
    choice, its old and reference log-probabilities and its advantage, so identical decisions are one row weighted
    by their count (Kuhn's thousands of decisions are a few dozen rows). The rows are scored in micro-batches of at
    most ``train.max_batch_tokens`` tokens; their gradients are accumulated, each weighted by its share of the
    decisions, so the step equals one over the whole batch. With a ``world`` of several ranks each rank computes
    its share of the micro-batches and every rank adds all of them in micro-batch order (``dataparallel.py``), so
    the step's bytes do not depend on the world. ``bench/training.py`` times this against mlx-lm's own trainer.
    """

    def __init__(self, policy: MLXPlayer, config: TrainConfig, temperature: float, world: World | None = None) -> None:
        import mlx.nn as nn
        import mlx.optimizers as optim

        from arena.train.selfplay.grpo import grpo_loss

        self.policy = policy
        self.world = world or World()
        self.max_tokens = config.max_batch_tokens
        self.optimizer = optim.Adam(learning_rate=config.lr, bias_correction=True)

        def loss_fn(model, batch, chosen, old, reference_logp, advantages, weights):
            new = chosen_logp(model, batch, chosen, temperature)
            return grpo_loss(new, old, reference_logp, advantages, weights, clip_eps=config.clip_eps,
                             beta=config.beta)

        self._value_and_grad = nn.value_and_grad(policy.model, loss_fn)

    def rows(self, observations: Sequence[Observation], chosen: np.ndarray, logp_old: np.ndarray,
             logp_ref: np.ndarray, advantages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct decisions (first index of each) and their counts, compared exactly (floats bit for bit)."""
        prompt = self.policy.prompts.prompt_ids
        return distinct_rows([(PolicyMemo.key(prompt(o), o.legal_actions), int(c), float(old), float(ref), float(adv))
                              for o, c, old, ref, adv in zip(observations, chosen, logp_old, logp_ref, advantages,
                                                             strict=True)])

    def __call__(self, observations: Sequence[Observation], chosen: np.ndarray, logp_old: np.ndarray,
                 logp_ref: np.ndarray, advantages: np.ndarray, learning_rate: float) -> dict[str, Any]:
        """Update the model once; returns the loss, metrics, learning rate, rows and tokens run through the model
        (every rank's micro-batches)."""
        import mlx.core as mx

        first, counts = self.rows(observations, chosen, logp_old, logp_ref, advantages)
        rows = [observations[i] for i in first]
        loss, metrics, grads, tokens = self.gradients(rows, chosen[first], logp_old[first], logp_ref[first],
                                                       advantages[first], counts)
        self.optimizer.learning_rate = learning_rate
        self.optimizer.update(self.policy.model, grads)
        mx.eval(self.policy.model.parameters(), self.optimizer.state, loss, metrics)
        self.policy.weights_changed()
        return {"loss": loss.item(), "kl": metrics["kl"].item(), "clip_fraction": metrics["clip_fraction"].item(),
                "lr": float(self.optimizer.learning_rate.item()), "rows": len(rows), "tokens": tokens}

    def gradients(self, rows: Sequence[Observation], chosen: np.ndarray, logp_old: np.ndarray, logp_ref: np.ndarray,
                  advantages: np.ndarray, counts: np.ndarray) -> tuple[Any, dict[str, Any], Any, int]:
        """The loss, metrics and gradients of the weighted rows, summed over every rank's micro-batches in order."""
        import mlx.core as mx

        tokens, rank = 0, self.world.rank
        accumulated = _Sum(self.policy.model)
        arrays = (chosen, logp_old, logp_ref, advantages, counts)
        passes = self.policy.scoring_passes(rows, self.max_tokens, "train.max_batch_tokens")
        for chunk in micro_batch_rounds(passes, self.world.size):
            mine = None
            if rank < len(chunk):
                mine = accumulated.flat(self._part(*chunk[rank], len(rows), *arrays))
                mx.eval(mine)
            for flat in self.world.gathered(mine, accumulated.template, len(chunk)):
                accumulated.add(flat)
            tokens += sum(batch.tokens for _, _, batch in chunk)
        loss, metrics, grads = accumulated.value
        return loss, metrics, grads, tokens

    def _part(self, start: int, end: int, batch, rows: int, chosen: np.ndarray, logp_old: np.ndarray,
              logp_ref: np.ndarray, advantages: np.ndarray, counts: np.ndarray) -> tuple[Any, dict[str, Any], Any]:
        """One micro-batch's loss, metrics and gradients, weighted by its share of the step's decisions."""
        import mlx.core as mx
        from mlx.utils import tree_map

        part = slice(start, end)
        (loss, metrics), grads = self._value_and_grad(
            self.policy.model, batch, chosen[part], mx.array(logp_old[part], dtype=mx.float32),
            mx.array(logp_ref[part], dtype=mx.float32), mx.array(advantages[part], dtype=mx.float32),
            mx.array(counts[part], dtype=mx.float32))
        if end - start != rows:  # micro-batch means, weighted by their share of the decisions
            share = float(counts[part].sum() / counts.sum())
            loss, metrics = loss * share, {k: v * share for k, v in metrics.items()}
            grads = tree_map(lambda g, s=share: g * s, grads)
        return loss, metrics, grads


class _Sum:
    """The step's running sum of micro-batch (loss, metrics, gradients), added one micro-batch at a time, in order.

    Parts travel between ranks as flat lists of arrays: the loss, the metrics in ``METRICS`` order, then the
    gradient leaves in the trainable parameters' order (the template a rank without a micro-batch sends zeros of).
    """

    METRICS = ("clip_fraction", "kl", "mean_ratio")  # grpo_loss's metrics (loss.py, _loss_metrics)

    def __init__(self, model) -> None:
        import mlx.core as mx
        from mlx.utils import tree_flatten

        self._structure = model.trainable_parameters()
        scalar = mx.zeros((), mx.float32)  # grpo_loss is float32: the scores are cast before the softmax
        leaves = tree_flatten(self._structure)
        self._names = [name for name, _ in leaves]
        self.template = [scalar] * (1 + len(self.METRICS)) + [value for _, value in leaves]
        self.value: tuple[Any, dict[str, Any], Any] | None = None

    def flat(self, part: tuple[Any, dict[str, Any], Any]) -> list[Any]:
        from mlx.utils import tree_flatten

        loss, metrics, grads = part
        by_name = dict(tree_flatten(grads))
        return [loss, *(metrics[k] for k in self.METRICS), *(by_name[name] for name in self._names)]

    def _unflat(self, flat: list[Any]) -> tuple[Any, dict[str, Any], Any]:
        from mlx.utils import tree_map

        leaves = iter(flat[1 + len(self.METRICS):])
        metrics = dict(zip(self.METRICS, flat[1:1 + len(self.METRICS)], strict=True))
        return flat[0], metrics, tree_map(lambda _: next(leaves), self._structure)

    def add(self, flat: list[Any]) -> None:
        """Add one micro-batch's part (the first one is taken as it is, as the single-process sum always did)."""
        import mlx.core as mx
        from mlx.utils import tree_map

        loss, metrics, grads = self._unflat(flat)
        if self.value is not None:
            old_loss, old_metrics, old_grads = self.value
            loss, grads = old_loss + loss, tree_map(lambda a, b: a + b, old_grads, grads)
            metrics = {k: old_metrics[k] + v for k, v in metrics.items()}
        self.value = (loss, metrics, grads)
        mx.eval(grads, loss, metrics)
