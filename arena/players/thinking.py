"""A local player's reasoning: prompts that ask for it, batched KV-cached generation with per-decision keys."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import mlx.core as mx

from arena.core.errors import ArenaError
from arena.core.hashing import digest_config
from arena.games.base import Observation
from arena.players.config import ThinkConfig
from arena.players.head import output_head
from arena.players.kvcache import TurnCache
from arena.players.memory import ModelShape
from arena.players.prompts import end_of_turn_ids, prompt_text, view_messages

# What closes the reasoning before the move is scored: the think block's end, or the instruction's answer marker.
BLOCK_PREFIX = "\n</think>\n\n"
ANSWER_PREFIX = "\nAnswer: "
ANSWER_MARK = "Answer:"
# The most tokens of a free-text answer (a game that lists no legal actions; arena.play keeps 200 characters of it).
ANSWER_MAX_TOKENS = 48


@dataclass(frozen=True)
class Reasoning:
    """One decision's reasoning: its generated tokens (stop token excluded), their text, and the answer prefix's
    tokens that follow them before the legal actions are scored."""

    ids: tuple[int, ...]
    text: str
    prefix: tuple[int, ...]

    def context(self, prompt: Sequence[int]) -> tuple[int, ...]:
        """The tokens the move is scored after: the reasoning prompt, the reasoning and its answer prefix."""
        return tuple(prompt) + self.ids + self.prefix


def _fmix(x: mx.array) -> mx.array:
    """murmur3's 32-bit finaliser: a bijection that spreads every input bit over the output."""
    x = x ^ (x >> 16)
    x = x * mx.array(0x85EBCA6B, mx.uint32)
    x = x ^ (x >> 13)
    x = x * mx.array(0xC2B2AE35, mx.uint32)
    return x ^ (x >> 16)


def gumbel_noise(keys: mx.array, step: int, vocab: int) -> mx.array:
    """Gumbel(0, 1) noise [rows, vocab] from a counter hash of (row key, step, token): each row's draws depend on its
    own key alone, so a decision samples the same tokens whatever it is batched with (no global RNG)."""
    token = mx.arange(vocab, dtype=mx.uint32)[None, :]
    x = _fmix(keys[:, 0:1] ^ _fmix(token + mx.array((step * 0x9E3779B9) & 0xFFFFFFFF, mx.uint32)))
    x = _fmix(x ^ keys[:, 1:2])
    u = ((x >> 8).astype(mx.float32) + 0.5) * (1.0 / (1 << 24))
    return -mx.log(-mx.log(u))


def row_keys(sample_keys: Sequence[int], salt: str = "think") -> mx.array:
    """Each decision's reasoning key as two uint32 words (from its ``sample_key``, salted apart from the move's; a
    free-text answer's with ``salt`` "answer")."""
    words = []
    for key in sample_keys:
        mixed = int(digest_config({salt: int(key)})[:16], 16)
        words.append([mixed >> 32, mixed & 0xFFFFFFFF])
    return mx.array(words, dtype=mx.uint32)


class ThinkPrompts:
    """A tokenizer's reasoning prompts: a thinking template's open ``<think>`` block, else the instruction."""

    def __init__(self, tokenizer: Any, view: str, think: ThinkConfig) -> None:
        self.tokenizer, self.view, self.think = tokenizer, view, think
        vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
        self.block = "<think>" in vocab and "</think>" in vocab
        self.prefix = tuple(tokenizer.encode(BLOCK_PREFIX if self.block else ANSWER_PREFIX, add_special_tokens=False))
        self.stops = end_of_turn_ids(tokenizer) | ({vocab["</think>"]} if self.block else set())
        self.space = tuple(tokenizer.encode(" ", add_special_tokens=False))
        self._cache: dict[str, tuple[int, ...]] = {}

    def prompt_ids(self, observation: Observation) -> tuple[int, ...]:
        """The tokens before the reasoning: the template's generation prompt (thinking on) and an open think block,
        or the prompt with the instruction after the user's message; the compact view's message lists the legal
        actions (the full view's already does)."""
        text = prompt_text(observation, self.view)
        # Reasoning about the move needs the moves' names, which the compact view omits (a game that lists no legal
        # actions names its moves in its own text).
        if self.view == "compact" and observation.legal_actions:
            text = f"{text.rstrip()}\nLegal actions: {' '.join(observation.legal_actions)}"
        if text not in self._cache:
            user = text if self.block else f"{text}\n{self.think.instruction}"
            ids = list(self.tokenizer.apply_chat_template(view_messages(user, self.view), add_generation_prompt=True,
                                                          enable_thinking=True))
            if self.block:
                opened = self.tokenizer.encode("<think>\n", add_special_tokens=False)
                if ids[-len(opened):] != opened:
                    ids += opened
            self._cache[text] = tuple(int(i) for i in ids)
        return self._cache[text]

    def finish(self, generated: Sequence[int]) -> Reasoning:
        """A row's generated tokens as its Reasoning: cut at the first stop token or answer marker."""
        ids = list(generated)
        for index, token in enumerate(ids):
            if token in self.stops:
                ids = ids[:index]
                break
        prefix = self.prefix
        if not self.block and ANSWER_MARK in self.tokenizer.decode(ids):
            # The reasoning ends with the shortest run of tokens that writes the marker; the move follows a space.
            low, high = 1, len(ids)
            while low < high:
                middle = (low + high) // 2
                low, high = (low, middle) if ANSWER_MARK in self.tokenizer.decode(ids[:middle]) else (middle + 1, high)
            ids, prefix = ids[:low], self.space
        return Reasoning(tuple(ids), self.tokenizer.decode(ids), prefix)


def rows_per_batch(shape: ModelShape, widest: int, max_tokens: int, max_batch_tokens: int) -> int:
    """How many rows one generation batch may hold: each row's prompt and reasoning keys and values, plus its head
    row at every step, counted in ``max_batch_tokens``'s tokens (arena.players.memory's formula)."""
    per_row = widest + max_tokens + shape.head_weight
    if per_row > max_batch_tokens:
        raise ArenaError(f"player.max_batch_tokens = {max_batch_tokens} is below one reasoning row ({widest} prompt "
                         f"tokens + think.max_tokens {max_tokens} + a head row of {shape.head_weight}): raise it to "
                         f">= {per_row} or lower think.max_tokens")
    return max_batch_tokens // per_row


def _sample(logits: mx.array, keys: mx.array, step: int, temperature: float) -> mx.array:
    if temperature == 0.0:
        return mx.argmax(logits, axis=-1)
    return mx.argmax(logits.astype(mx.float32) / temperature + gumbel_noise(keys, step, logits.shape[-1]), axis=-1)


def thought_key(index: int) -> Hashable:
    """The store's key of decision ``index``'s reasoning (its prompt and reasoning's keys and values)."""
    return ("think", index)


def _kept_rows(caches: Sequence[Any], padding: Sequence[int], tokens: Sequence[tuple[int, ...]], store: TurnCache,
               rows: Sequence[int]) -> None:
    """Each row's keys and values (``tokens[row]``: the tokens the caches hold for it) stored as ``rows[row]``'s
    reasoning, one array [2 x layers, kv heads, tokens, head dim] (kvcache's Stored)."""
    for row, (pad, held) in enumerate(zip(padding, tokens, strict=True)):
        kv = mx.concatenate([getattr(c, part)[row:row + 1, :, pad:pad + len(held)]
                             for part in ("keys", "values") for c in caches])
        mx.eval(kv)
        store.store(thought_key(rows[row]), held, kv)


def generate_rows(model: Any, prompts: Sequence[Sequence[int]], keys: mx.array, max_tokens: int,
                  temperature: float, stops: set[int], keep: TurnCache | None = None,
                  rows: Sequence[int] = ()) -> list[list[int]]:
    """One batch's reasoning: left-padded prompts prefilled once into per-layer batch KV caches, then one token per
    row per step (the head applied to the last position only) until every row stopped or ``max_tokens``. With
    ``keep``, each row's keys and values (its prompt and the generated tokens fed back) are stored in it at the end,
    under ``thought_key`` of its index in ``rows`` (default: its position)."""
    from mlx_lm.models.cache import BatchKVCache

    width = max(len(p) for p in prompts)
    padding = [width - len(p) for p in prompts]
    # Each distinct prompt is prefilled once; its rows (several reasonings of one position) share its keys and values.
    distinct: dict[tuple[int, ...], int] = {}
    inverse = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
    unique = list(distinct)
    tokens = mx.array([[0] * (width - len(p)) + list(p) for p in unique], dtype=mx.int32)
    caches = [BatchKVCache([width - len(p) for p in unique]) for _ in model.layers]
    head = output_head(model)
    hidden = model.model(tokens, cache=caches)[:, -1, :]
    if len(unique) < len(prompts):
        expand = mx.array(inverse, dtype=mx.int32)
        hidden = hidden[expand]
        for cache in caches:
            cache.filter(expand)
    logits = head(hidden)
    out: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    stop_array = mx.array(sorted(stops) or [-1], dtype=mx.int32)
    fed = 0
    for step in range(max_tokens):
        token = _sample(logits, keys, step, temperature)
        if step + 1 < max_tokens:
            hidden = model.model(token[:, None].astype(mx.int32), cache=caches)
            logits = head(hidden[:, -1, :])
            fed += 1
            mx.async_eval(logits)
        stopped = mx.any(token[:, None] == stop_array[None, :], axis=1)
        for row, (value, stop) in enumerate(zip(token.tolist(), stopped.tolist(), strict=True)):
            if not done[row]:
                out[row].append(int(value))
                done[row] = bool(stop)
        if all(done):
            break
    if keep is not None:
        held = [tuple(p) + tuple(o[:fed]) for p, o in zip(prompts, out, strict=True)]
        _kept_rows(caches, padding, held, keep, rows or range(len(prompts)))
    return out


def generate_fast(model: Any, prompts: Sequence[Sequence[int]], keys: mx.array, max_tokens: int,
                  temperature: float, stops: set[int], keep: TurnCache | None = None,
                  rows: Sequence[int] = ()) -> list[list[int]]:
    """``generate_rows`` with the layers' projections as float32 BLAS on the host where scoring runs them there
    (a quantised model on the CPU: MLX 0.32's 4-bit CPU matmul is far slower than float BLAS)."""
    from arena.players.hostmath import host_linears, host_math

    if not host_math(model):
        return generate_rows(model, prompts, keys, max_tokens, temperature, stops, keep, rows)
    with host_linears(model):
        return generate_rows(model, prompts, keys, max_tokens, temperature, stops, keep, rows)


def generate(model: Any, shape: ModelShape, prompts: Sequence[Sequence[int]], sample_keys: Sequence[int],
             think: ThinkConfig, stops: set[int], max_batch_tokens: int, keep: TurnCache | None = None,
             salt: str = "think") -> list[list[int]]:
    """Every decision's reasoning tokens, in batches of rows of similar width under ``max_batch_tokens`` (``keep``:
    the store each decision's keys and values go to as its batch ends, under ``thought_key`` of its index)."""
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))
    out: list[list[int]] = [[] for _ in prompts]
    start = 0
    while start < len(order):
        # Rows sorted by width: a batch's widest row is its last, so take rows while they fit.
        end = start + 1
        while end < len(order) and (end + 1 - start) <= rows_per_batch(
                shape, len(prompts[order[end]]), think.max_tokens, max_batch_tokens):
            end += 1
        rows_per_batch(shape, len(prompts[order[end - 1]]), think.max_tokens, max_batch_tokens)
        chunk = order[start:end]
        generated = generate_fast(model, [prompts[i] for i in chunk], row_keys([sample_keys[i] for i in chunk], salt),
                                  think.max_tokens, think.temperature, stops, keep, chunk)
        for index, tokens in zip(chunk, generated, strict=True):
            out[index] = tokens
        start = end
    return out


def answer(model: Any, shape: ModelShape, prompts: Sequence[Sequence[int]], sample_keys: Sequence[int],
           think: ThinkConfig, temperature: float, stops: set[int], max_batch_tokens: int) -> list[list[int]]:
    """Each decision's free-text answer after its reasoning, for a game that lists no legal actions (its text is the
    move): at most ``ANSWER_MAX_TOKENS`` tokens at the move's ``temperature``, each row from its decision's own key
    salted apart from its reasoning's, cut at the first of ``stops``."""
    config = replace(think, max_tokens=ANSWER_MAX_TOKENS, temperature=temperature)
    out = generate(model, shape, prompts, sample_keys, config, stops, max_batch_tokens, salt="answer")
    return [next((row[:i] for i, token in enumerate(row) if token in stops), row) for row in out]
