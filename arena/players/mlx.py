"""The local MLX player: legal-move masked sampling from an mlx-lm model, all pending decisions in one pass."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np

from arena.core.config import as_dict
from arena.core.errors import ArenaError
from arena.core.hashing import digest_config, digest_dir
from arena.core.heap import release_heap
from arena.core.pins import ADAPTER_WEIGHTS, model_pin, model_quant, read_model_config, versions
from arena.games.base import Observation
from arena.games.variants import scored_by_choice
from arena.players.base import Decision, Player
from arena.players.batching import MIN_STEM, ScoringBatch, pack_batches
from arena.players.config import MLXPlayerConfig
from arena.players.head import check_head
from arena.players.hostmath import HOST_DEQUANT_BYTES, drop_scratch, host_math
from arena.players.kvcache import TurnCache, bound_buffer_cache, rows_kv
from arena.players.memo import PolicyMemo
from arena.players.memory import ModelShape, budget_note, model_shape, require_loadable, say_once
from arena.players.prompts import ChatPrompts, prompt_text
from arena.players.scoring import inference_log_softmax, inference_loglik, per_decision, prompt_positions
from arena.players.thinking import Reasoning, ThinkPrompts, generate

__all__ = ["MLXPlayer", "load_model", "load_tokenizer", "prompt_text"]


def _named_base(path: Path) -> str | None:
    """The base model an adapter directory names (mlx-lm's ``adapter_config.json`` ``model``), else None."""
    adapter_config = path / "adapter_config.json"
    return json.loads(adapter_config.read_text()).get("model") if adapter_config.exists() else None


# A tokenizer mlx-lm loads the same on every machine: without one, transformers falls back to a tokenizer that
# turns actions into no tokens at all, and every game errors ("cannot score an empty action").
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")


def _check_tokenizer(path: Path) -> None:
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise ArenaError(f"model directory {path} has no tokenizer.json (nor tokenizer.model): copy the model's "
                         "tokenizer files into it or rebuild it")


def _loaded(path: Path, adapter: Path | None) -> tuple[Any, Any]:
    """mlx-lm's load of ``path`` (and ``adapter``), its failures (corrupt weights, an unknown model_type, shapes
    that do not match config.json) as one ArenaError naming the directory."""
    import mlx_lm

    from arena.players.floatcopy import float_projections

    # an unreadable config.json is a PinError (an ArenaError) naming the file; one beyond memory is refused unread
    require_loadable(read_model_config(path), str(path))
    _check_tokenizer(path)
    try:
        if adapter is not None:
            model, tokenizer = mlx_lm.load(str(path), adapter_path=str(adapter))
            float_projections(model)  # a QLoRA snapshot's LoRA layers would run MLX's slow x86 quantised matmul
            return model, tokenizer
        return mlx_lm.load(str(path))
    except (RuntimeError, ValueError, OSError, KeyError, TypeError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ArenaError(f"model directory {adapter or path} cannot be loaded: {reason} "
                         "(a corrupt or truncated model.safetensors, or a config.json that does not match it); "
                         "rebuild it with `dvc repro` or fetch it again") from error


def load_model(path: str | Path) -> tuple[Any, Any]:
    """Load an mlx-lm model directory (and the adapter a QLoRA snapshot carries), or an adapter on its named base."""
    path = Path(path)
    if not path.is_dir():
        raise ArenaError(f"model directory not found: {path} (build it with `dvc repro` or check the path)")
    base = _named_base(path)
    if base is not None:
        if not Path(base).is_dir():
            raise ArenaError(f"adapter {path} names base model {base!r}, which is not a local directory")
        return _loaded(Path(base), path)
    if not (path / "config.json").exists():
        raise ArenaError(f"{path} is not an mlx-lm model directory: it has no config.json")
    return _loaded(path, path if (path / ADAPTER_WEIGHTS).exists() else None)


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer of an mlx-lm model directory (or of the base an adapter directory names), without its weights."""
    from mlx_lm.utils import load_tokenizer as mlx_load_tokenizer

    path = Path(path)
    path = Path(_named_base(path) or path)
    config = read_model_config(path)
    _check_tokenizer(path)
    return mlx_load_tokenizer(path, eos_token_ids=config.get("eos_token_id"))


# A pass that held at least this many bytes hands its freed memory back afterwards (``arena.core.heap.release_heap``,
# the host's large work buffers): below it, the trim's walk of the heap costs more than it returns.
TRIM_BYTES = 64 << 20


def held_shape(model: Any, shape: ModelShape) -> tuple[ModelShape, int]:
    """The model's shape with the dtype its scoring passes really hold, and the bytes of the float32 copies kept
    beside its weights on the CPU (``head.float_weight``'s of a quantised head; ``hostmath.HostLinear``'s of its
    quantised projections while they fit ``HOST_DEQUANT_BYTES``).

    On the host path the projections run as float32 (``hostmath``), so keys, values and activations are float32
    whatever the weights' dtype: SmolLM2-135M's float16-scaled 4-bit weights hold 45 KiB of keys and values a token,
    not the 22.5 KiB their dtype says."""
    if mx.default_device() != mx.cpu:
        return shape, 0
    copies = 4 * shape.vocab * shape.hidden if shape.bits is not None else 0
    if not host_math(model):
        return shape, copies
    projections = 4 * shape.layers * sum(a * b for a, b in shape.linears())
    if shape.bits is not None and projections <= HOST_DEQUANT_BYTES:
        copies += projections
    return replace(shape, dtype_bytes=max(4, shape.dtype_bytes)), copies


class _LiveReuse(Sequence[int]):
    """Each decision's stored tokens (``TurnCache.reusable``) as of when its pass is built, which is after the passes
    before it stored their prompts: one of them may have evicted the entry a stale plan would reuse (64 games over
    several passes: ``KeyError`` on a stream). Where nothing was evicted, the same numbers as planned up front."""

    def __init__(self, turns: TurnCache, streams: list, prompts: list[tuple[int, ...]]) -> None:
        self.turns, self.streams, self.prompts = turns, streams, prompts

    def __len__(self) -> int:
        return len(self.prompts)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.turns.reusable(self.streams[index], self.prompts[index])


class MLXPlayer(Player):
    """Scores every legal action's log-likelihood and samples from the softmax over legal actions only.

    It can never play an illegal move. Its log-probability is that of the masked, tempered distribution
    it sampled from, which is what policy-gradient training needs.
    """

    def __init__(self, path: str | Path, config: MLXPlayerConfig | None = None) -> None:
        self.path = Path(path)
        self.config = config or MLXPlayerConfig()
        self.spec = f"mlx:{self.path.as_posix()}"
        self.model, self.tokenizer = load_model(self.path)
        check_head(self.model)
        self.shape = model_shape(self.model)
        tokens = self.config.max_batch_tokens
        self.held, copies = held_shape(self.model, self.shape)
        bound_buffer_cache(tokens * self.shape.token_bytes())
        note = budget_note(self.shape, tokens, "player.max_batch_tokens", held=self.held, kept_tokens=tokens,
                           extra_weights=copies)
        say_once(f"player {tokens} {self.shape}", f"[arena] {note}")
        # The games' previous prompts' keys and values, as many tokens as one pass holds.
        self.turns = TurnCache(tokens, MIN_STEM)
        self.memo = PolicyMemo(self.config.memo_prompts)
        self.prompts = ChatPrompts(self.tokenizer, self.config.view, self.config.enable_thinking)
        if self.config.think is not None:
            # After reasoning, a move is scored as the plain reply (the template's non-thinking reply tokens).
            self.think_prompts = ThinkPrompts(self.tokenizer, self.config.view, self.config.think)
            self.reply_prompts = ChatPrompts(self.tokenizer, self.config.view, False)

    def _prompt_ids(self, observation: Observation) -> tuple[int, ...]:
        """The tokens fed to the model at ``observation``: its view through the chat template."""
        return self.prompts.prompt_ids(observation)

    def _action_ids(self, action: str) -> tuple[int, ...]:
        """The tokens ``action`` is scored as: the bare action (compact), the template's reply (full)."""
        return self.prompts.action_ids(action)

    def policy(self, observations: Sequence[Observation]) -> list[np.ndarray]:
        """Per observation, the probability of each legal action (in ``legal_actions`` order). A thinking player's
        policy is an expectation over its reasoning, which one scoring pass cannot give: that is an ArenaError
        (``arena.eval.thinkexact`` estimates it)."""
        if self.config.think is not None:
            raise ArenaError(f"{self.spec} thinks before it moves (think: {self.config.think.max_tokens} tokens): its "
                             "policy is an expectation over sampled reasoning, not one scoring pass; exact measures "
                             "of a thinking player exist for Kuhn only (arena.eval.thinkexact)")
        return [np.exp(lp) for lp in self._log_policy(observations)]

    def scoring_passes(self, observations: Sequence[Observation], max_tokens: int | None = None,
                       key: str = "player.max_batch_tokens"):
        """The observations' scoring passes under the token budget: (start, end, ScoringBatch) each."""
        return self._passes([self._prompt_ids(o) for o in observations],
                            [[self._action_ids(a) for a in o.legal_actions] for o in observations], None,
                            max_tokens, key, [scored_by_choice(o.game_id) for o in observations])

    def begin_match(self) -> None:
        """A new match: the keys and values kept for the last one's games are dropped."""
        self.turns.clear()

    def weights_changed(self) -> None:
        """The model's weights were updated in place: nothing scored under the old ones may be reused."""
        self.turns.clear()
        self.memo.clear()

    def _log_policy(self, observations: Sequence[Observation]) -> list[np.ndarray]:
        """Per observation, the log-probability of each legal action (through the memo when the player has one)."""
        if not self.memo:
            return self._scored(observations)
        out = []
        for observation in observations:
            key = PolicyMemo.key(self._prompt_ids(observation), observation.legal_actions)
            logp = self.memo.get(key)
            if logp is None:
                # Alone and with no stored stem: an entry is the same whatever the prompt was first met with.
                logp = self._scored([replace(observation, stream=0)])[0]
                self.memo.put(key, logp)
            out.append(logp)
        return out

    def scored(self, observations: Sequence[Observation]) -> list[np.ndarray]:
        """Per observation, the log-probability of each legal action, past the memo; a game's previous prompt (its
        ``stream``'s last in this match) is reused."""
        return self._scored(observations)

    def reason(self, observations: Sequence[Observation]) -> list[Reasoning]:
        """Each observation's reasoning (``think`` on): generated in batches under ``max_batch_tokens``, every row
        sampled from its decision's own key."""
        think = self.config.think
        if think is None:
            raise ArenaError("this player has no think setting: give its section think: {max_tokens: N}")
        prompts = [self.think_prompts.prompt_ids(o) for o in observations]
        # Each row's prompt-and-reasoning keys and values go to the cross-turn store as its batch ends, under a key of
        # its own, so the move's scoring pass encodes only the answer prefix and the actions (the store keeps at most
        # a pass's worth of tokens, evicting the oldest first).
        self._thought_keys: list[Any] = [None] * len(prompts)

        def keep(row: int, tokens: tuple[int, ...], kv: Any) -> None:
            self.turns.store(("think", row), tokens, kv)
            self._thought_keys[row] = ("think", row)

        generated = generate(self.model, self.shape, prompts, [o.sample_key for o in observations], think,
                             self.think_prompts.stops, self.config.max_batch_tokens, keep)
        return [self.think_prompts.finish(tokens) for tokens in generated]

    def thought_prompt(self, observation: Observation, reasoning: Reasoning) -> tuple[int, ...]:
        """The tokens the move is scored after: the reasoning prompt, the reasoning and its answer prefix."""
        return self.think_prompts.prompt_ids(observation) + reasoning.ids + reasoning.prefix

    def thought_log_policy(self, observations: Sequence[Observation],
                           reasonings: Sequence[Reasoning]) -> list[np.ndarray]:
        """Per observation, the log-probability of each legal action scored after its reasoning."""
        prompts = [self.thought_prompt(o, r) for o, r in zip(observations, reasonings, strict=True)]
        actions = [[self.reply_prompts.action_ids(a) for a in o.legal_actions] for o in observations]
        # The reasoning's own keys and values (``reason``), never a game stream: a prompt with reasoning in it is never
        # the start of the game's next prompt.
        keys = getattr(self, "_thought_keys", [])
        streams = [keys[i] if i < len(keys) and keys[i] is not None and len(p) > MIN_STEM else None
                   for i, p in enumerate(prompts)]
        try:
            return self._scored(observations, prompts, actions, streams)
        finally:
            for key in keys:
                if key is not None:
                    self.turns.drop(key)
            self._thought_keys = []

    def _scored(self, observations: Sequence[Observation], prompts: list | None = None,
                actions: list | None = None, streams: list | None = None) -> list[np.ndarray]:
        """Per observation, the log-probability of each legal action; a game's previous prompt is reused."""
        prompts = prompts or [self._prompt_ids(o) for o in observations]
        actions = actions or [[self._action_ids(a) for a in o.legal_actions] for o in observations]
        if streams is None:
            streams = [(o.stream, o.player_id) if o.stream and len(p) > MIN_STEM else None
                       for o, p in zip(observations, prompts, strict=True)]
        reuse = [self.turns.reusable(s, p) for s, p in zip(streams, prompts, strict=True)]
        choices = [scored_by_choice(o.game_id) for o in observations]
        order = list(range(len(observations)))
        passes = self._passes(prompts, actions, reuse, choices=choices)
        first = next(passes, None)
        if first is not None and first[1] < len(order):
            # Several passes: cut them from the decisions in order of their new tokens, so each pass's prompts pad to
            # similar lengths (Liar's Dice, full view, 64 games: 1.46 -> 1.58 games/s); one pass keeps its order.
            order.sort(key=lambda i: (len(prompts[i]) - reuse[i], i))
            prompts, actions, streams, choices = ([xs[i] for i in order] for xs in (prompts, actions, streams, choices))
            passes = self._passes(prompts, actions, _LiveReuse(self.turns, streams, prompts), choices=choices)
        elif first is not None:
            passes = iter([first])
        out: list[np.ndarray] = [np.empty(0)] * len(order)
        for start, end, batch in passes:
            logps = self._scored_pass(batch, prompts[start:end], streams[start:end])
            for index, logp in zip(order[start:end], logps, strict=True):
                out[index] = logp
        return out

    def _passes(self, prompts: list[tuple[int, ...]], actions: list, reuse: Sequence[int] | None,
                max_tokens: int | None = None, key: str = "player.max_batch_tokens",
                choices: Sequence[bool] | None = None):
        return pack_batches(prompts, actions, max_tokens or self.config.max_batch_tokens, self.shape.head_weight, key,
                            self.tokenizer.pad_token_id or 0, reuse, choices)

    def _scored_pass(self, batch: ScoringBatch, prompts: list[tuple[int, ...]], streams: list) -> list[np.ndarray]:
        """One pass's decisions (``prompts``, ``streams``: theirs, in the pass's order): their log-policies; their
        prompts' keys and values are stored for their games' next turns."""
        stored = [self.turns.prefix(streams[d], n) for d, n in batch.stored]
        kept: list[tuple[Any, tuple[int, ...], Any]] = []

        def keep(caches, lengths) -> None:
            rows: dict[tuple[int, ...], int] = {}
            wanted = [(stream, prompt, rows.setdefault(prompt, len(rows)))
                      for prompt, stream in zip(prompts, streams, strict=True)]
            wanted = [entry for entry in wanted if entry[0] is not None]
            distinct = sorted({row for _, _, row in wanted})
            arrays = rows_kv(caches, distinct, [prompt_positions(batch, caches, row) for row in distinct])
            by_row = dict(zip(distinct, arrays, strict=True))
            kept.extend((stream, prompt, by_row[row]) for stream, prompt, row in wanted)

        loglik = inference_loglik(self.model, batch, stored, keep if any(streams) else None)
        logp_mx = inference_log_softmax(loglik, batch.action_offsets, self.config.temperature or 1.0)
        mx.eval(logp_mx, [kv for _, _, kv in kept])
        for stream, prompt, kv in kept:
            self.turns.store(stream, prompt, kv)
        out = per_decision(np.array(logp_mx, dtype=np.float64), batch.action_offsets)
        del loglik, logp_mx, stored
        kept.clear()  # held by the store now: the pass's own references go before the heap is trimmed
        if batch.tokens * self.held.token_bytes() >= TRIM_BYTES:
            drop_scratch()
            release_heap()
        return out

    def act(self, observation: Observation) -> Decision:
        return self.act_batch([observation])[0]

    def act_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        for observation in observations:
            if not observation.legal_actions:
                raise ArenaError(f"{observation.game_id}: no legal actions to choose from")
        if self.config.think is not None:
            reasonings: list[Reasoning | None] = list(self.reason(observations))
            logps = self.thought_log_policy(observations, reasonings)
        else:
            reasonings, logps = [None] * len(observations), self._log_policy(observations)
        decisions = []
        for observation, logp, reasoning in zip(observations, logps, reasonings, strict=True):
            if self.config.temperature == 0.0:
                choice = int(np.argmax(logp))
            else:
                # Drawn from the decision's own key: the same game samples the same move whatever it is batched with.
                u = np.random.default_rng(observation.sample_key).random()
                cumulative = np.cumsum(np.exp(logp))
                choice = min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), len(logp) - 1)
            decision = Decision(observation.legal_actions[choice], float(logp[choice]), self.model_id)
            if reasoning is not None:
                decision = replace(decision, reasoning=reasoning.text, reasoning_tokens=reasoning.ids)
            decisions.append(decision)
        return decisions

    @property
    def model_id(self) -> str:
        return f"mlx:{self.path.name}"

    def pin(self) -> dict[str, Any]:
        pin = self._model_pin()
        if self.config.think is not None:
            # The reasoning budget in plain sight on every score card (it is also inside config_hash).
            pin["think"] = {"max_tokens": self.config.think.max_tokens, "temperature": self.config.think.temperature}
        return pin

    def _model_pin(self) -> dict[str, Any]:
        config = as_dict(self.config)
        base = _named_base(self.path)
        if base is not None:
            return {
                "kind": "model",
                "model_hash": digest_config({"base": digest_dir(base), "adapter": digest_dir(self.path)}),
                "quant": model_quant(base),
                "config_hash": digest_config(config),
                "versions": versions(),
            }
        return model_pin(self.path, config)

