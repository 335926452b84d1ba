"""One call's decisions through the local model in a line: reasoning, packing, scoring and storing, caches owned."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

from arena.core.heap import release_heap
from arena.players.batching import MIN_STEM, plan_passes
from arena.players.config import ThinkConfig
from arena.players.hostmath import drop_scratch
from arena.players.kvcache import TurnCache
from arena.players.memo import PolicyMemo
from arena.players.memory import ModelShape
from arena.players.scoring import inference_log_softmax, inference_scores, per_decision
from arena.players.thinking import Reasoning, ThinkPrompts, answer, generate, thought_key

Prompt = tuple[int, ...]
Actions = Sequence[tuple[int, ...]]


# A pass that held at least this many bytes hands its freed memory back afterwards (``arena.core.heap.release_heap``,
# the host's large work buffers): below it, the trim's walk of the heap costs more than it returns.
TRIM_BYTES = 64 << 20


@dataclass(frozen=True)
class Inference:
    """What a pass runs on: the model and its shapes, the token budget of one batch, the padding token, and the
    temperature the legal actions' softmax is taken at (0: greedy play, scored at 1), and the bytes a token really
    holds in a pass (``mlx.held_shape``: float32 on the host path), which decides when a pass trims the heap."""

    model: Any
    shape: ModelShape
    max_batch_tokens: int
    pad_id: int
    temperature: float
    held_token_bytes: int


class ScoringPass:
    """One call's decisions, front to back: (a thinking player) their reasoning, generated in batches with KV
    caches; then their legal actions scored, in batches under the token budget, each batch's distinct prompts,
    tails, action tries and head rows run once (arena.players.batching, .scoring), its stems read from and its
    prompts' keys and values written to the store.

    The store is the player's cross-turn store: a game's previous prompt for direct scoring; for a thinking player,
    each decision's reasoning prompt and reasoning (``reason``), read by the move's scoring and dropped after it.
    Every module the pass calls returns to it: nothing calls back.
    """

    def __init__(self, inference: Inference, store: TurnCache) -> None:
        self.inference, self.store = inference, store
        self.reasoned = 0  # decisions whose reasoning's keys and values this pass put in the store

    # ------------------------------------------------------------------------------------------- reasoning

    def think(self, prompts: Sequence[Prompt], actions: Sequence[Actions], choices: Sequence[bool],
              sample_keys: Sequence[int], think: ThinkConfig, words: ThinkPrompts
              ) -> tuple[list[Reasoning], list[np.ndarray]]:
        """Each decision's reasoning after its reasoning prompt (``words``: the template's stops and answer prefix),
        and its legal actions' log-probabilities scored after that reasoning on the reasoning's keys and values."""
        reasonings = self.reason(prompts, sample_keys, think, words)
        thought = [reasoning.context(prompt) for prompt, reasoning in zip(prompts, reasonings, strict=True)]
        return reasonings, self.score_thoughts(thought, actions, choices)

    def reason(self, prompts: Sequence[Prompt], sample_keys: Sequence[int], think: ThinkConfig,
               words: ThinkPrompts) -> list[Reasoning]:
        """Each decision's reasoning (batches of similar width under the budget, each row from its own key); its
        prompt and reasoning's keys and values go to the store as its batch ends (``thinking.thought_key``; the
        store keeps at most a batch's worth of tokens, evicting the oldest first), so the move's scoring encodes
        only the answer prefix and the actions."""
        inf = self.inference
        generated = generate(inf.model, inf.shape, prompts, sample_keys, think, words.stops, inf.max_batch_tokens,
                             self.store)
        self.reasoned = len(prompts)
        return [words.finish(tokens) for tokens in generated]

    def score_thoughts(self, prompts: Sequence[Prompt], actions: Sequence[Actions],
                       choices: Sequence[bool]) -> list[np.ndarray]:
        """Per decision, its legal actions' log-probabilities after its reasoning (``prompts``: the reasoning prompt,
        the reasoning and the answer prefix), on the reasoning's keys and values where this pass reasoned; they are
        dropped after. A prompt with reasoning in it never starts a game's next prompt: no game stream is fed."""
        keys = [thought_key(row) for row in range(self.reasoned)]
        streams = [keys[row] if row < len(keys) and len(prompt) > MIN_STEM else None
                   for row, prompt in enumerate(prompts)]
        try:
            return self.score(prompts, actions, streams, choices)
        finally:
            self._forget_thoughts()

    def free_text(self, prompts: Sequence[Prompt], sample_keys: Sequence[int], think: ThinkConfig,
                  words: ThinkPrompts, temperature: float, stops: set[int]) -> tuple[list[Reasoning], list[list[int]]]:
        """For a game that lists no legal actions: each decision's reasoning, then its free-text answer generated
        after the reasoning and the answer prefix (``thinking.answer``: its own key, salted apart from the
        reasoning's). The answer is generated afresh, so the reasoning's stored keys and values are dropped first."""
        reasonings = self.reason(prompts, sample_keys, think, words)
        self._forget_thoughts()
        inf = self.inference
        thought = [reasoning.context(prompt) for prompt, reasoning in zip(prompts, reasonings, strict=True)]
        return reasonings, answer(inf.model, inf.shape, thought, sample_keys, think, temperature, stops,
                                  inf.max_batch_tokens)

    def _forget_thoughts(self) -> None:
        for row in range(self.reasoned):
            self.store.drop(thought_key(row))
        self.reasoned = 0

    # --------------------------------------------------------------------------------------------- scoring

    def memoised(self, memo: PolicyMemo, prompts: Sequence[Prompt], actions: Sequence[Actions],
                 legal: Sequence[Sequence[str]], choices: Sequence[bool]) -> list[np.ndarray]:
        """Per decision, its legal actions' log-probabilities from ``memo``; each miss scored alone and with no
        stored stem (an entry is the same whatever its prompt was first met with), then kept."""
        out = []
        for prompt, acts, names, choice in zip(prompts, actions, legal, choices, strict=True):
            key = PolicyMemo.key(prompt, names)
            logp = memo.get(key)
            if logp is None:
                logp = self.score([prompt], [acts], [None], [choice])[0]
                memo.put(key, logp)
            out.append(logp)
        return out

    def score(self, prompts: Sequence[Prompt], actions: Sequence[Actions], streams: Sequence[Hashable | None],
              choices: Sequence[bool]) -> list[np.ndarray]:
        """Per decision, its legal actions' log-probabilities (``choices[d]``: decision d scored by choice); a
        decision's ``stream`` (None: none) names the store's entry its prompt may extend, and keeps its prompt's keys
        and values for the next one."""
        n = len(prompts)
        order = list(range(n))
        first = next(self._plan(prompts, actions, choices), None)
        if first is not None and first[1] < n:
            # Several batches: cut them from the decisions in order of their new tokens, so each batch's prompts pad
            # to similar lengths (Liar's Dice, full view, 64 games: 1.46 -> 1.58 games/s); one batch keeps its order.
            reuse = self._reuse(prompts, streams)
            order.sort(key=lambda i: (len(prompts[i]) - reuse[i], i))
            prompts, actions, streams, choices = ([xs[i] for i in order] for xs in (prompts, actions, streams, choices))
            plan = self._plan(prompts, actions, choices)
        else:
            plan = iter([first] if first is not None else [])
        out: list[np.ndarray] = [np.empty(0)] * n
        for start, end, builder in plan:
            # What the store holds now, after the batches before this one kept their prompts (one of them may have
            # evicted an entry a plan made up front would reuse).
            batch = builder.build(self.inference.pad_id, self._reuse(prompts[start:end], streams[start:end]))
            logps = self._run(batch, prompts[start:end], streams[start:end])
            for index, logp in zip(order[start:end], logps, strict=True):
                out[index] = logp
        return out

    def _plan(self, prompts: Sequence[Prompt], actions: Sequence[Actions], choices: Sequence[bool]):
        inf = self.inference
        return plan_passes(prompts, actions, inf.max_batch_tokens, inf.shape.head_weight, "player.max_batch_tokens",
                           choices)

    def _reuse(self, prompts: Sequence[Prompt], streams: Sequence[Hashable | None]) -> list[int]:
        return [self.store.reusable(s, p) for s, p in zip(streams, prompts, strict=True)]

    def _run(self, batch: Any, prompts: Sequence[Prompt], streams: Sequence[Hashable | None]) -> list[np.ndarray]:
        """One batch's decisions (theirs, in the batch's order): their log-policies; the prompts of those with a
        stream have their keys and values kept in the store."""
        stored = [self.store.prefix(streams[d], n) for d, n in batch.stored]
        rows: dict[Prompt, int] = {}  # the batch's prompt rows: distinct prompts in order of first appearance
        wanted = [(stream, prompt, rows.setdefault(prompt, len(rows)))
                  for prompt, stream in zip(prompts, streams, strict=True)]
        wanted = [entry for entry in wanted if entry[0] is not None]
        distinct = sorted({row for _, _, row in wanted})
        loglik, kept = inference_scores(self.inference.model, batch, stored, distinct)
        logp_mx = inference_log_softmax(loglik, batch.action_offsets, self.inference.temperature or 1.0)
        mx.eval(logp_mx, kept)
        by_row = dict(zip(distinct, kept, strict=True))
        for stream, prompt, row in wanted:
            self.store.store(stream, prompt, by_row[row])
        out = per_decision(np.array(logp_mx, dtype=np.float64), batch.action_offsets)
        del loglik, logp_mx, stored, kept, by_row  # held by the store now: the pass's own references go first
        if batch.tokens * self.inference.held_token_bytes >= TRIM_BYTES:
            drop_scratch()
            release_heap()
        return out
