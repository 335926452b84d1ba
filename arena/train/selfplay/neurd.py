"""NeuRD with a moving magnet: per-prompt targets from every action's sampled value, fitted into the model by KL.

Why (studies/results/kuhn_neurd.md, kuhn_neurd_network.md): a policy gradient moves a decision's logit by
pi (1 - pi) x its value gap, which vanishes as the decision saturates, so the last iterate rests far from equilibrium.
NeuRD moves the logit by the value gap itself; branch rollouts (``branches.py``) give every legal action a value.
Taken as a gradient through shared weights NeuRD swings; taken as a target per distinct prompt (the tabular step)
and fitted by a few Adam steps on KL(target || pi), the network follows the table. A KL pull towards a magnet (the
reference: with ``train.reference: previous`` the round's start, so the magnet moves every round, as R-NaD's does)
makes the dynamics converge instead of cycling. With ``train.neurd_anchor``, prompts seen earlier in the round that
this iteration did not visit join the fit at their current policy: a tabular step leaves unvisited states where they
are, and the anchor asks the shared weights to do the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.games.base import Observation
from arena.players.memo import PolicyMemo
from arena.players.mlx import MLXPlayer
from arena.train.config import TrainConfig
from arena.train.selfplay.targets import neurd_target, visit_sums

# ----------------------------------------------------------------------------------------------- the model


def all_action_logp(player: MLXPlayer, observations: Sequence[Observation], temperature: float,
                    max_tokens: int, key: str) -> list[np.ndarray]:
    """Per observation, the player's model's log-probability of each legal action (tempered, masked softmax)."""
    import mlx.core as mx

    from arena.players.scoring import legal_logp, per_decision

    out: list[np.ndarray] = []
    for _, _, batch in player.scoring_passes(observations, max_tokens, key):
        logp = legal_logp(player.model, batch, temperature)
        out += per_decision(np.array(logp.astype(mx.float32), dtype=np.float64), batch.action_offsets)
    return out


@dataclass(frozen=True)
class Targets:
    """One iteration's fit data: its distinct prompts (the visited ones, then the anchors), each one's target
    log-policy, its game, the share of visited targets the logit threshold cut, how many rows are anchors, and (full
    width) each game's exploitability at the policy the targets start from."""

    observations: list[Observation]
    logp: list[np.ndarray]
    games: np.ndarray
    clipped: float
    anchors: int = 0
    exploitability: dict[str, float] | None = None


class NeuRDFit:
    """Builds an iteration's NeuRD targets and fits the policy to them (Adam on the per-game mean KL)."""

    def __init__(self, policy: MLXPlayer, config: TrainConfig, temperature: float,
                 anchor_seed: Sequence[int] = (0,)) -> None:
        import mlx.nn as nn
        import mlx.optimizers as optim

        self.policy, self.config, self.temperature = policy, config, temperature
        self.rng = np.random.default_rng(anchor_seed)
        self.seen: dict[Any, Observation] = {}  # every prompt the round's earlier iterations visited, by memo key
        self.magnets: dict[str, list[np.ndarray]] = {}  # full-width: the magnet's policy per game (fixed a round)
        self.optimizer = optim.Adam(learning_rate=config.lr, bias_correction=True)
        self._value_and_grad = nn.value_and_grad(policy.model, self._loss)

    def _loss(self, model, batch, target, weights):
        import mlx.core as mx

        from arena.players.scoring import legal_logp

        logp = legal_logp(model, batch, self.temperature)
        return (weights * mx.exp(target) * (target - logp)).sum()

    def targets(self, data: Any, ref: MLXPlayer, rate: float) -> Targets:
        """The targets of ``data``'s decisions that carry action values (``Decisions.values``), one per distinct
        prompt; the magnet is ``ref``'s policy, the step ``rate``."""
        used = [i for i, v in enumerate(data.values) if v is not None]
        prompt = self.policy.prompts.prompt_ids
        keys = [PolicyMemo.key(prompt(data.observations[i]), data.observations[i].legal_actions) for i in used]
        first, sums, totals = visit_sums(keys, [data.values[i] for i in used], data.visit_weights[used])
        rows = [data.observations[used[j]] for j in first]
        budget = (self.config.max_batch_tokens, "train.max_batch_tokens")
        anchors = self._anchors({keys[j]: row for j, row in zip(first, rows, strict=True)})
        current = all_action_logp(self.policy, rows + anchors, self.temperature, *budget)  # one pass for both
        magnet = all_action_logp(ref, rows, self.temperature, *budget)
        made = [neurd_target(o, m, s, t, rate, self.config.beta, self.config.neurd_clip)
                for o, m, s, t in zip(current[: len(rows)], magnet, sums, totals, strict=True)]
        logp = [t for t, _ in made] + current[len(rows):]
        rows += anchors
        games = np.unique([o.game_id for o in rows], return_inverse=True)[1] if rows else np.zeros(0, np.int64)
        clipped = float(np.mean([c for _, c in made])) if made else 0.0
        return Targets(rows, logp, games, clipped, len(anchors))

    def full_width(self, games: Sequence[str], ref: MLXPlayer, rate: float) -> Targets:
        """The targets at every information state of each of ``games`` (``train.neurd_values: exact``), from the
        policy's exact action values (arena.train.selfplay.fullwidth); the magnet is ``ref``'s policy, the step
        ``rate``. ``Targets.exploitability`` has each game's, at the policy the targets start from."""
        from arena.train.selfplay.fullwidth import as_table, exploitability, full_width_targets, info_states

        budget = (self.config.max_batch_tokens, "train.max_batch_tokens")
        rows, logp, ids, clipped, measured = [], [], [], [], {}
        for index, game in enumerate(games):
            states = list(info_states(game).observations)
            current = all_action_logp(self.policy, states, self.temperature, *budget)
            if game not in self.magnets:
                self.magnets[game] = all_action_logp(ref, states, self.temperature, *budget)
            made = full_width_targets(game, current, self.magnets[game], rate, self.config)
            rows += states
            logp += [target for target, _ in made]
            ids += [index] * len(states)
            clipped += [cut for _, cut in made]
            measured[game] = round(exploitability(game, as_table(game, current)), 6)
        return Targets(rows, logp, np.asarray(ids, dtype=np.int64), float(np.mean(clipped)), 0, measured)

    def _anchors(self, visited: dict[Any, Observation]) -> list[Observation]:
        """At most ``train.neurd_anchor`` prompts seen earlier in the round and not visited now, drawn at random;
        then remember the visited ones."""
        if not self.config.neurd_anchor:
            return []
        unvisited = [row for key, row in self.seen.items() if key not in visited]
        self.seen.update(visited)
        if len(unvisited) <= self.config.neurd_anchor:
            return unvisited
        picked = np.sort(self.rng.choice(len(unvisited), size=self.config.neurd_anchor, replace=False))
        return [unvisited[i] for i in picked]

    def __call__(self, targets: Targets, picked: np.ndarray, learning_rate: float) -> dict[str, Any]:
        """One Adam step on the ``picked`` targets: each game's mean KL(target || pi), summed over games."""
        import mlx.core as mx
        from mlx.utils import tree_map

        rows = [targets.observations[i] for i in picked]
        counts = np.bincount(targets.games[picked])
        weights = 1.0 / counts[targets.games[picked]]
        loss, grads, tokens = None, None, 0
        passes = self.policy.scoring_passes(rows, self.config.max_batch_tokens, "train.max_batch_tokens")
        for start, end, batch in passes:
            target = mx.array(np.concatenate([targets.logp[i] for i in picked[start:end]]), dtype=mx.float32)
            offsets = np.asarray(batch.action_offsets)
            weight = mx.array(np.repeat(weights[start:end], np.diff(offsets)), dtype=mx.float32)
            part, part_grads = self._value_and_grad(self.policy.model, batch, target, weight)
            loss = part if loss is None else loss + part
            grads = part_grads if grads is None else tree_map(lambda a, b: a + b, grads, part_grads)
            mx.eval(loss, grads)
            tokens += batch.tokens
        self.optimizer.learning_rate = learning_rate
        self.optimizer.update(self.policy.model, grads)
        mx.eval(self.policy.model.parameters(), self.optimizer.state)
        self.policy.weights_changed()
        kl = loss.item() / max(len(counts.nonzero()[0]), 1)
        out = {"loss": loss.item(), "kl": kl, "clip_fraction": targets.clipped, "lr": learning_rate,
               "rows": len(rows), "tokens": tokens}
        if targets.exploitability is not None:
            out["exploitability"] = targets.exploitability
        return {**out, "anchors": targets.anchors} if self.config.neurd_anchor else out
