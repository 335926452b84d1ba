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
from arena.core.pins import ADAPTER_WEIGHTS, model_pin, model_quant, read_model_config, versions
from arena.games.base import Observation
from arena.games.variants import scored_by_choice
from arena.players.base import Decision, Player
from arena.players.batching import MIN_STEM, pack_batches
from arena.players.config import MLXPlayerConfig, ThinkConfig
from arena.players.frontier_reply import parse_action
from arena.players.head import check_head
from arena.players.hostmath import HOST_DEQUANT_BYTES, host_math
from arena.players.kvcache import TurnCache, bound_buffer_cache
from arena.players.memo import PolicyMemo
from arena.players.memory import ModelShape, budget_note, model_dtype, model_shape, require_loadable, say_once
from arena.players.prompts import ChatPrompts, end_of_turn_ids, prompt_text
from arena.players.scoringpass import Inference, ScoringPass
from arena.players.thinking import Reasoning, ThinkPrompts

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


def _choices(observations: Sequence[Observation]) -> list[bool]:
    """Per observation, whether its game's legal actions are scored by choice (``variants.scored_by_choice``)."""
    return [scored_by_choice(o.game_id) for o in observations]


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
        # The games' previous prompts' keys and values: as many tokens as one pass holds, unless store_tokens says.
        kept, store_dtype = self.config.store_tokens or tokens, self._store_dtype()
        kept_bytes = self.held.kv_token_bytes if store_dtype is None else replace(
            self.held, dtype_bytes=store_dtype.size).kv_token_bytes
        note = budget_note(self.shape, tokens, "player.max_batch_tokens", held=self.held, kept_tokens=kept,
                           extra_weights=copies, kept_token_bytes=kept_bytes)
        say_once(f"player {tokens} {kept} {kept_bytes} {self.shape}", f"[arena] {note}")
        self.turns = TurnCache(kept, MIN_STEM, store_dtype)
        self.memo = PolicyMemo(self.config.memo_prompts)
        self._thinking: ScoringPass | None = None  # the pass ``reason`` left for ``thought_log_policy``
        self.prompts = ChatPrompts(self.tokenizer, self.config.view, self.config.enable_thinking)
        if self.config.think is not None:
            # After reasoning, a move is scored as the plain reply (the template's non-thinking reply tokens).
            self.think_prompts = ThinkPrompts(self.tokenizer, self.config.view, self.config.think)
            self.reply_prompts = ChatPrompts(self.tokenizer, self.config.view, False)

    def _store_dtype(self) -> mx.Dtype | None:
        """The dtype the cross-turn store keeps keys and values in, None: the pass's own (``store_dtype: pass``, or a
        model whose weights' dtype is what its passes hold)."""
        if self.config.store_dtype == "pass":
            return None
        dtype = model_dtype(self.model)
        return None if dtype.size >= self.held.dtype_bytes else dtype

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
        return pack_batches([self._prompt_ids(o) for o in observations], self._actions(observations),
                            max_tokens or self.config.max_batch_tokens, self.shape.head_weight, key,
                            self.tokenizer.pad_token_id or 0, None, _choices(observations))

    def begin_match(self) -> None:
        """A new match: the keys and values kept for the last one's games are dropped."""
        self.turns.clear()

    def weights_changed(self) -> None:
        """The model's weights were updated in place: nothing scored under the old ones may be reused."""
        self.turns.clear()
        self.memo.clear()

    def _actions(self, observations: Sequence[Observation], prompts: ChatPrompts | None = None) -> list:
        """Each observation's legal actions as the tokens they are scored as (``prompts``: the reply's tokens)."""
        ids = prompts.action_ids if prompts is not None else self._action_ids
        return [[ids(a) for a in o.legal_actions] for o in observations]

    def _pass(self) -> ScoringPass:
        """A pass of this player's model over one call's decisions, reading and feeding its cross-turn store."""
        inference = Inference(self.model, self.shape, self.config.max_batch_tokens, self.tokenizer.pad_token_id or 0,
                              self.config.temperature, self.held.token_bytes())
        return ScoringPass(inference, self.turns)

    def _log_policy(self, observations: Sequence[Observation]) -> list[np.ndarray]:
        """Per observation, the log-probability of each legal action (through the memo when the player has one)."""
        if not self.memo:
            return self._scored(observations)
        prompts = [self._prompt_ids(o) for o in observations]
        legal = [o.legal_actions for o in observations]
        return self._pass().memoised(self.memo, prompts, self._actions(observations), legal, _choices(observations))

    def scored(self, observations: Sequence[Observation]) -> list[np.ndarray]:
        """Per observation, the log-probability of each legal action, past the memo; a game's previous prompt (its
        ``stream``'s last in this match) is reused."""
        return self._scored(observations)

    def _scored(self, observations: Sequence[Observation]) -> list[np.ndarray]:
        prompts = [self._prompt_ids(o) for o in observations]
        streams = [(o.stream, o.player_id) if o.stream and len(p) > MIN_STEM else None
                   for o, p in zip(observations, prompts, strict=True)]
        return self._pass().score(prompts, self._actions(observations), streams, _choices(observations))

    def think(self, observations: Sequence[Observation]) -> tuple[list[Reasoning], list[np.ndarray]]:
        """Each observation's reasoning (``think`` on) and its legal actions' log-probabilities scored after it, in
        one pass: the reasoning generated in batches under ``max_batch_tokens``, every row sampled from its
        decision's own key; the move scored on the reasoning's own keys and values."""
        think = self._think()
        prompts = [self.think_prompts.prompt_ids(o) for o in observations]
        return self._pass().think(prompts, self._actions(observations, self.reply_prompts), _choices(observations),
                                  [o.sample_key for o in observations], think, self.think_prompts)

    def reason(self, observations: Sequence[Observation]) -> list[Reasoning]:
        """``think``'s first half: each observation's reasoning; its keys and values stay in the cross-turn store
        until ``thought_log_policy`` scores the moves after it."""
        think = self._think()
        self._thinking = self._pass()
        return self._thinking.reason([self.think_prompts.prompt_ids(o) for o in observations],
                                     [o.sample_key for o in observations], think, self.think_prompts)

    def thought_prompt(self, observation: Observation, reasoning: Reasoning) -> tuple[int, ...]:
        """The tokens the move is scored after: the reasoning prompt, the reasoning and its answer prefix."""
        return reasoning.context(self.think_prompts.prompt_ids(observation))

    def thought_log_policy(self, observations: Sequence[Observation],
                           reasonings: Sequence[Reasoning]) -> list[np.ndarray]:
        """``think``'s second half: per observation, the log-probability of each legal action scored after its
        reasoning (on the keys and values the last ``reason`` stored, which are dropped after)."""
        run, self._thinking = self._thinking or self._pass(), None
        prompts = [self.thought_prompt(o, r) for o, r in zip(observations, reasonings, strict=True)]
        return run.score_thoughts(prompts, self._actions(observations, self.reply_prompts), _choices(observations))

    def _think(self) -> ThinkConfig:
        if self.config.think is None:
            raise ArenaError("this player has no think setting: give its section think: {max_tokens: N}")
        return self.config.think

    def act(self, observation: Observation) -> Decision:
        return self.act_batch([observation])[0]

    @property
    def writes_text(self) -> bool:
        """A thinking player writes a free-text move where a game lists no legal actions."""
        return self.config.think is not None

    def act_batch(self, observations: Sequence[Observation]) -> list[Decision]:
        listed = [bool(o.legal_actions) for o in observations]
        if not all(listed):
            return self._act_unlisted(observations, listed)
        if self.config.think is not None:
            thought, logps = self.think(observations)
            reasonings: list[Reasoning | None] = list(thought)
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

    def _act_unlisted(self, observations: Sequence[Observation], listed: Sequence[bool]) -> list[Decision]:
        """Decisions where some games list no legal actions (``textarena:ENV_ID``): a thinking player answers those in
        free text (``_free_text``); a direct-scoring player, which only scores listed actions, cannot."""
        if self.config.think is None:
            game = next(o.game_id for o, has in zip(observations, listed, strict=True) if not has)
            raise ArenaError(f"{game}: no legal actions to choose from, and {self.spec} only scores listed actions: "
                             "give its section think: {max_tokens: N} to have it write its move")
        out: list[Decision | None] = [None] * len(observations)
        for keep, act in ((True, self.act_batch), (False, self._free_text)):
            rows = [i for i, has in enumerate(listed) if has == keep]
            if rows:
                for i, decision in zip(rows, act([observations[i] for i in rows]), strict=True):
                    out[i] = decision
        return [decision for decision in out if decision is not None]

    def _free_text(self, observations: Sequence[Observation]) -> list[Decision]:
        """A thinking player's moves in games that list no legal actions: its reasoning, then its answer generated as
        free text after the answer prefix (from the decision's own key), read as a frontier reply is
        (``frontier_reply.parse_action``: the last ``<answer>`` tag's content, else all of it, sanitised) and passed to
        the game, whose own invalid-move rule judges it. No log-probability: the move is not a scored choice."""
        prompts = [self.think_prompts.prompt_ids(o) for o in observations]
        reasonings, generated = self._pass().free_text(prompts, [o.sample_key for o in observations], self._think(),
                                                       self.think_prompts, self.config.temperature,
                                                       end_of_turn_ids(self.tokenizer))
        return [Decision(parse_action(self.tokenizer.decode(ids), ()), None, self.model_id, reasoning=r.text,
                         reasoning_tokens=r.ids) for ids, r in zip(generated, reasonings, strict=True)]

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

