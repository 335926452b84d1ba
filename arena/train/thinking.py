"""Thinking self-play training: GRPO over whole replies (reasoning and move) with role baselines and per-token KL.

A thinking player's reply at a decision is its reasoning tokens, the answer prefix and the move. Its log-probability
is the sum of the reasoning tokens' log-probabilities under the model plus the move's masked, tempered log-softmax
over the legal actions scored after the reasoning (what the player sampled from). The advantage is the seat's reward
minus a role-conditioned baseline (SPIRAL's RAE: a running mean per (game, seat), updated after it is used), and a
per-token KL to the reference (k3, over the reasoning tokens and the move) keeps the reasoning near the reference's.
One step per batch of fresh replies: on-policy, so PPO's ratio is 1 and its clip never binds; the loss is REINFORCE
with the role baseline plus the KL term.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np

from arena.games.base import Observation
from arena.players.mlx import MLXPlayer
from arena.players.thinking import Reasoning


@dataclass(frozen=True)
class Reply:
    """One decision's whole reply: the tokens it is scored after, its reasoning's length, the legal actions' tokens,
    the move, the seat's reward and its role (game, seat)."""

    context: tuple[int, ...]          # prompt + reasoning + answer prefix
    reasoning: tuple[int, int]        # [start, end) of the reasoning tokens in ``context``
    actions: tuple[tuple[int, ...], ...]
    chosen: int
    reward: float
    role: tuple[str, int]


def _observation(record: Mapping[str, Any], decision: Mapping[str, Any]) -> Observation:
    return Observation(record["game_id"], decision["player"], decision["text"], decision["observation"],
                       tuple(decision["legal"]), info_set=decision.get("info_set"))


def replies(records: Iterable[Mapping[str, Any]], player: MLXPlayer, learner_only: bool = False,
            invalid_penalty: float = 0.0) -> list[Reply]:
    """Every reasoned decision of the finished games in ``records`` as a Reply (self-play: both seats learn), or
    with ``learner_only`` the learner's alone (the record's ``first_seat``, as a pipeline round's rollouts have it);
    a seat's reward is less ``invalid_penalty`` per invalid move it made."""
    out = []
    for record in records:
        if record["errored"]:
            continue
        for decision in record["decisions"]:
            if decision.get("reasoning_tokens") is None or (learner_only and
                                                            decision["player"] != record["first_seat"]):
                continue
            seat = decision["player"]
            out.append(whole_reply(player, _observation(record, decision), decision["reasoning_tokens"],
                                   decision["reasoning"], decision["action"],
                                   float(record["rewards"][seat]) - invalid_penalty * record["invalid_moves"][seat]))
    return out


def whole_reply(player: MLXPlayer, observation: Observation, tokens: Sequence[int], text: str, action: str,
                reward: float) -> Reply:
    """One decision's whole reply as ``player`` scores it: the reasoning prompt at ``observation``, the reasoning
    ``tokens`` (``text``), the answer prefix they end with, and the move ``action``; its role is (game, seat)."""
    prompt = player.think_prompts.prompt_ids(observation)
    tokens = tuple(tokens)
    reasoning = Reasoning(tokens, text, player.think_prompts.finish(list(tokens)).prefix)
    return Reply(player.thought_prompt(observation, reasoning), (len(prompt), len(prompt) + len(tokens)),
                 tuple(player.reply_prompts.action_ids(a) for a in observation.legal_actions),
                 observation.legal_actions.index(action), reward, (observation.game_id, observation.player_id))


@dataclass
class RoleBaseline:
    """SPIRAL's role-conditioned advantage estimation: a running mean reward per (game, seat)."""

    decay: float = 0.95
    means: dict[tuple[str, int], float] = field(default_factory=dict)

    def advantages(self, batch: Sequence[Reply]) -> np.ndarray:
        """Each reply's reward minus its role's baseline (as it stood before this batch); then the means move."""
        out = np.array([r.reward - self.means.get(r.role, 0.0) for r in batch], dtype=np.float64)
        for role in dict.fromkeys(r.role for r in batch):
            rewards = [r.reward for r in batch if r.role == role]
            old = self.means.get(role, 0.0)
            self.means[role] = self.decay * old + (1.0 - self.decay) * float(np.mean(rewards))
        return out

    def as_json(self) -> dict[str, float]:
        """The role means as ``{"game:seat": mean}`` (sorted), what a round hands the next."""
        return {f"{game}:{seat}": self.means[(game, seat)] for game, seat in sorted(self.means)}

    @classmethod
    def from_json(cls, means: Mapping[str, float], decay: float = 0.95) -> RoleBaseline:
        """The baseline ``as_json`` wrote."""
        return cls(decay, {(key.rpartition(":")[0], int(key.rpartition(":")[2])): float(v) for key, v in means.items()})


def _token_logps(model: Any, rows: Sequence[Sequence[int]]) -> mx.array:
    """log p(token t | tokens < t) for t >= 1 of each row, [rows, width - 1] (right-padded rows; pad scored 0)."""
    width = max(len(r) for r in rows)
    ids = mx.array([list(r) + [0] * (width - len(r)) for r in rows], dtype=mx.int32)
    logits = model(ids[:, :-1]).astype(mx.float32)
    logp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    return mx.take_along_axis(logp, ids[:, 1:, None], axis=-1)[..., 0]


def reply_logps(model: Any, reply: Reply, temperature: float) -> mx.array:
    """The reply's per-token log-probabilities: each reasoning token's, then the move's masked, tempered one."""
    rows = [reply.context + action for action in reply.actions]
    logp = _token_logps(model, rows)
    start, end = reply.reasoning
    reasoning = logp[0, start - 1:end - 1]
    n = len(reply.context)
    action_ll = mx.stack([logp[i, n - 1:n - 1 + len(a)].sum() for i, a in enumerate(reply.actions)])
    scaled = action_ll / (temperature or 1.0)
    move = scaled[reply.chosen] - mx.logsumexp(scaled)
    return mx.concatenate([reasoning, move[None]])


def thinking_terms(model: Any, batch: Sequence[Reply], advantages: np.ndarray, reference: Sequence[mx.array],
                   beta: float, temperature: float, old: Sequence[mx.array] | None = None,
                   clip_eps: float | None = None) -> tuple[mx.array, mx.array]:
    """The loss (mean over replies of the policy-gradient term + beta x the reply's mean per-token k3 KL to
    ``reference``) and that mean KL. Without ``old`` the policy-gradient term is -advantage x the reply's
    log-probability (on-policy: PPO's ratio is 1); with ``old`` (the sampling policy's per-token log-probabilities)
    it is PPO's clipped per-token surrogate, -sum_t min(r_t A, clip(r_t, 1 +- clip_eps) A): the same gradient at
    r = 1, bounded on a round's later steps."""
    total, kls = mx.array(0.0), mx.array(0.0)
    for index, (reply, advantage, ref) in enumerate(zip(batch, advantages, reference, strict=True)):
        new = reply_logps(model, reply, temperature)
        kl = (mx.exp(ref - new) - (ref - new) - 1.0).mean()
        if old is None:
            surrogate = float(advantage) * new.sum()
        else:
            eps = 0.2 if clip_eps is None else clip_eps
            ratio = mx.exp(new - old[index])
            surrogate = mx.minimum(ratio * float(advantage),
                                   mx.clip(ratio, 1.0 - eps, 1.0 + eps) * float(advantage)).sum()
        total = total - surrogate + beta * kl
        kls = kls + kl
    return total / len(batch), kls / len(batch)


def thinking_loss(model: Any, batch: Sequence[Reply], advantages: np.ndarray, reference: Sequence[mx.array],
                  beta: float, temperature: float) -> mx.array:
    """Mean over replies of -advantage x the reply's log-probability + beta x its mean per-token k3 KL."""
    return thinking_terms(model, batch, advantages, reference, beta, temperature)[0]


def thinking_step(model: Any, optimizer: Any, batch: Sequence[Reply], baseline: RoleBaseline,
                  reference: Sequence[mx.array], beta: float = 0.04, temperature: float = 1.0) -> float:
    """One GRPO step over ``batch``'s whole replies (the reference's per-token log-probabilities given); the loss."""
    return clipped_step(model, optimizer, batch, baseline.advantages(batch), reference, beta, temperature)[0]


def clipped_step(model: Any, optimizer: Any, batch: Sequence[Reply], advantages: np.ndarray,
                 reference: Sequence[mx.array], beta: float, temperature: float,
                 old: Sequence[mx.array] | None = None, clip_eps: float | None = None) -> tuple[float, float]:
    """One optimiser step on ``thinking_terms``'s loss; (loss, mean per-token KL)."""
    import mlx.nn as nn

    loss_and_grad = nn.value_and_grad(model, lambda m: thinking_terms(m, batch, advantages, reference, beta,
                                                                      temperature, old, clip_eps))
    (loss, kl), grads = loss_and_grad(model)
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state, loss, kl)
    return float(loss), float(kl)


def reference_logps(model: Any, batch: Sequence[Reply], temperature: float = 1.0) -> list[mx.array]:
    """Each reply's per-token log-probabilities under ``model`` as it is now (the reference), evaluated."""
    out = [mx.stop_gradient(reply_logps(model, r, temperature)) for r in batch]
    mx.eval(out)
    return out


def winning(batch: Sequence[Reply]) -> list[Reply]:
    """ReST's verified win set for thinking players: the whole replies (reasoning and move) of seats that won."""
    return [reply for reply in batch if reply.reward > 0]


def rest_step(model: Any, optimizer: Any, batch: Sequence[Reply], temperature: float = 1.0) -> float:
    """One SFT step on whole winning replies: the mean negative log-probability of reasoning tokens and move."""
    import mlx.nn as nn

    def loss_fn(m: Any) -> mx.array:
        return -mx.stack([reply_logps(m, reply, temperature).sum() for reply in batch]).mean()

    loss, grads = nn.value_and_grad(model, loss_fn)(model)
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state, loss)
    return float(loss)


# ----------------------------------------------------------------------------------------------- round statistics


def last_named_move(reasoning: str, legal: Sequence[str]) -> str | None:
    """The legal action the reasoning names last (``[bet]`` or the bare word ``bet``), None when it names none."""
    best, where = None, -1
    for action in legal:
        bare = action.strip("[]")
        for pattern in (re.escape(action), r"\b" + re.escape(bare) + r"\b"):
            for match in re.finditer(pattern, reasoning, flags=re.IGNORECASE):
                if match.start() > where:
                    best, where = action, match.start()
    return best


def reasoning_stats(records: Iterable[Mapping[str, Any]]) -> dict[str, float | None]:
    """A thinking round's statistics: reasoning length (tokens) mean and spread, how often the reasoning names a
    legal move, and how often its last named move differs from the move played (of those that name one)."""
    lengths, named, differs = [], 0, 0
    for record in records:
        for decision in record["decisions"]:
            if decision.get("reasoning") is None:
                continue
            lengths.append(len(decision["reasoning_tokens"]))
            last = last_named_move(decision["reasoning"], decision["legal"])
            named += last is not None
            differs += last is not None and last != decision["action"]
    if not lengths:
        return {}
    return {"reasoning_tokens_mean": float(np.mean(lengths)),
            "reasoning_tokens_std": float(statistics.pstdev(lengths)),
            "reasoning_decisions": float(len(lengths)),
            "names_a_move_rate": named / len(lengths),
            "last_named_differs_rate": differs / named if named else None}
