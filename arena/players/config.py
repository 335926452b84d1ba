"""Player configs: how a local model is prompted and sampled, and how a frontier endpoint is called (light)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from arena.core.config import from_mapping, require, require_choice

# An answer of at most MAX_MAX_TOKENS tokens is at most ~16 KiB of text; arena.players.frontier caps reply bodies.
MAX_MAX_TOKENS = 4096
FRONTIER_VIEWS = ("full", "compact")
# Requests a frontier player keeps in flight when frontier.concurrency is unset. A local server (mlx_lm.server,
# llama.cpp, Ollama) usually generates for one request at a time on the machine arena runs on: more in flight
# only queue behind each other and spend the queue's wait out of each one's timeout_s. A hosted API serves
# requests in parallel; 4 in flight at ~1 s each stays near 240 requests a minute, under common rate limits.
LOCAL_CONCURRENCY = 1
REMOTE_CONCURRENCY = 4
MAX_CONCURRENCY = 64
DEFAULT_SYSTEM_PROMPT = (
    "You are playing a two-player text game. Each turn you are shown the game so far and the list of "
    "legal actions. Reply with exactly one of the legal actions, copied verbatim including its square "
    "brackets, and nothing else."
)


VIEWS = ("compact", "full")
# What the cross-turn store keeps keys and values in: the pass's own dtype (exact), or the weights' float dtype.
STORE_DTYPES = ("pass", "model")
# What a template without a thinking block is asked to do when ``think`` is on (appended to the user message).
THINK_INSTRUCTION = "Think briefly about the position first, then write 'Answer:' followed by your move."
MAX_THINK_TOKENS = 4096
# A setting left out of a config's hash while it has its default (arena.core.config.as_dict), so adding it keeps bytes.
OMIT = {"omit_default": True}
# A params section's ``think:`` mapping: off when empty, so a section without it keeps its bytes (omit_default).
def think_field() -> Any:
    """The ``think:`` field of a params section that configures a local player."""
    return field(default_factory=dict, metadata={"omit_default": True})


@dataclass(frozen=True)
class ThinkConfig:
    """A local player's reasoning before its move (params ``think:`` in a model section; absent: no reasoning).

    The model writes up to ``max_tokens`` tokens of reasoning through its chat template (a thinking template's
    ``<think>`` block; otherwise after ``instruction``), sampled at ``temperature`` from the decision's own key;
    then the move is the masked choice among the legal actions scored after the reasoning and its answer prefix.
    """

    max_tokens: int = 64
    temperature: float = 1.0
    instruction: str = THINK_INSTRUCTION

    def __post_init__(self) -> None:
        require(isinstance(self.max_tokens, int) and 1 <= self.max_tokens <= MAX_THINK_TOKENS,
                "player.think.max_tokens", self.max_tokens, f"must be an int in [1, {MAX_THINK_TOKENS}]")
        require(self.temperature >= 0.0, "player.think.temperature", self.temperature, "must be >= 0 (0 = greedy)")
        require(bool(self.instruction.strip()), "player.think.instruction", self.instruction, "must not be empty")


# Why a loop's rounds do not train reasoning (``refuse_think``).
THINK_REFUSALS = {
    "lsp": "LSP's proposer and solver answer in masked grammars without reasoning: train a thinking player with "
           "loop: selfplay, selfplay.think and train.objective: grpo (or loop: rest with rest.think)",
}


def refuse_think(section: str, think: Mapping[str, Any]) -> None:
    """A ``think:`` in a loop section whose rounds do not train reasoning is refused in one line, saying why."""
    require(not think, f"{section}.think", dict(think), THINK_REFUSALS[section])


def think_config(section: str, value: Mapping[str, Any] | ThinkConfig | None) -> ThinkConfig | None:
    """A section's ``think:`` mapping as a ThinkConfig (None when empty: no reasoning); unknown keys are one line."""
    if value is None or isinstance(value, ThinkConfig):
        return value
    return from_mapping(ThinkConfig, dict(value), f"{section}.think") if value else None


@dataclass(frozen=True)
class MLXPlayerConfig:
    """How a model is prompted and sampled, and how much one scoring pass may hold; part of the player's config hash.

    ``enable_thinking`` is passed to the chat template (Qwen3's thinking switch); off, a thinking template closes
    an empty think block in the generation prompt, so each move is scored as the reply itself. Templates
    without the switch ignore it. ``max_batch_tokens`` bounds each scoring pass (arena.players.scoring: padded
    prompt tokens, action continuations with their copy of the prompt's keys and values, and output-head rows
    weighted by the vocabulary's size); a player prints the memory it implies for its model when it loads.
    ``memo_prompts`` > 0 keeps that many distinct prompts' scored policies (arena.players.memo), each scored in a
    pass of its own: fast where a game has few distinct prompts, slower where nearly every prompt is new.
    ``store_tokens`` bounds the cross-turn store (arena.players.kvcache.TurnCache: each game's last prompt's keys and
    values), 0: ``max_batch_tokens``; ``store_dtype`` is the dtype it keeps them in: ``pass`` (what the pass holds,
    exact) or ``model`` (the weights' own float dtype: half the bytes where the host path runs a float16 model in
    float32, its log-probabilities then within ~1e-3, docs/memory.md). Both are left out of the config hash at
    their defaults.
    """

    view: str = "compact"
    temperature: float = 1.0
    max_batch_tokens: int = 65536
    enable_thinking: bool = False
    memo_prompts: int = 0
    think: ThinkConfig | None = field(default=None, metadata={"omit_default": True})
    store_tokens: int = field(default=0, metadata=OMIT)
    store_dtype: str = field(default="pass", metadata=OMIT)

    def __post_init__(self) -> None:
        require_choice("player.view", self.view, VIEWS)
        require(isinstance(self.store_tokens, int) and self.store_tokens >= 0, "player.store_tokens",
                self.store_tokens, "must be a whole number >= 0 (0: player.max_batch_tokens)")
        require_choice("player.store_dtype", self.store_dtype, STORE_DTYPES)
        require(self.memo_prompts >= 0, "player.memo_prompts", self.memo_prompts, "must be >= 0 (0: no memo)")
        require(isinstance(self.enable_thinking, bool), "player.enable_thinking", self.enable_thinking,
                "must be true or false")
        require(self.temperature >= 0.0, "player.temperature", self.temperature, "must be >= 0 (0 = greedy)")
        require(self.max_batch_tokens >= 1, "player.max_batch_tokens", self.max_batch_tokens, "must be >= 1")


class Sampling(Protocol):
    """A loaded params section that says how its model players are prompted and sample (selfplay, shards, ...)."""

    view: str
    temperature: float
    enable_thinking: bool
    max_batch_tokens: int


def sampling_config(section: Sampling, memo_prompts: int = 0, name: str = "player") -> MLXPlayerConfig:
    """The MLX player config a loaded params section gives: its ``view``, ``temperature``, ``enable_thinking``,
    ``max_batch_tokens`` and ``think`` (and a policy memo of ``memo_prompts`` entries, where the caller keeps the
    model fixed; a thinking player has none: its prompts include its reasoning)."""
    think = think_config(name, getattr(section, "think", None))
    return MLXPlayerConfig(view=section.view, temperature=section.temperature,
                           max_batch_tokens=section.max_batch_tokens, enable_thinking=section.enable_thinking,
                           memo_prompts=0 if think else memo_prompts, think=think,
                           store_tokens=getattr(section, "store_tokens", 0),
                           store_dtype=getattr(section, "store_dtype", "pass"))


@dataclass(frozen=True)
class FrontierConfig:
    """How a frontier player talks to its endpoint (params section ``frontier:``).

    ``max_calls`` caps real chat-completion HTTP attempts per player instance, each retry included;
    cache hits are free. ``max_retries`` is the number of retries after the first attempt; retry ``i``
    waits ``backoff_s * 2**i`` (at least the server's Retry-After on 429/503), never more than
    ``max_wait_s``. ``seed`` is mixed with each observation's ``sample_key`` into the request seed, so
    different decisions draw different samples and a rerun hits the cache. The player plays a reply's
    final answer: its last ``<answer>...</answer>`` tag when it has one (a ``system_prompt`` that lets the
    model reason first can ask for it; the default asks for the bare action), else the last legal action
    it names. Reasoning needs a larger ``max_tokens``: a reply cut off before its answer is misread.
    ``concurrency`` is how many requests one player has in flight at once (a match's games waiting on it are
    asked together); unset, ``LOCAL_CONCURRENCY`` for a loopback BASE_URL and ``REMOTE_CONCURRENCY`` otherwise
    (docs/frontier.md). Replies, records and call counts are the same at any value. ``replies`` names a directory
    (relative to where the stage runs: the project root) that holds this section's replies instead of the user's
    cache (``$ARENA_CACHE_DIR/frontier``): committed beside the score cards, it lets anyone re-play the endpoint's
    games offline (``max_calls: 0`` calls nothing and checks no endpoint) and ``arena verify`` re-derive them.
    """

    api_key_env: str = "OPENAI_API_KEY"
    max_calls: int = 200
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 1.0
    max_wait_s: float = 30.0
    temperature: float = 1.0
    max_tokens: int = 32
    seed: int = 0
    view: str = "full"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    concurrency: int | None = None
    replies: str | None = None

    def __post_init__(self) -> None:
        require(bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env)), "frontier.api_key_env",
                self.api_key_env, "the NAME of an environment variable (letters, digits, _), never the key itself")
        require(self.max_calls >= 0, "frontier.max_calls", self.max_calls, "must be >= 0 (0 = replay from cache only)")
        require(self.timeout_s > 0, "frontier.timeout_s", self.timeout_s, "must be > 0 seconds")
        require(self.max_retries >= 0, "frontier.max_retries", self.max_retries, "must be >= 0")
        require(self.backoff_s >= 0, "frontier.backoff_s", self.backoff_s, "must be >= 0 seconds")
        require(self.max_wait_s >= self.backoff_s, "frontier.max_wait_s", self.max_wait_s,
                f"must be >= frontier.backoff_s = {self.backoff_s}")
        require(0.0 <= self.temperature <= 2.0, "frontier.temperature", self.temperature, "must be in [0, 2]")
        require(1 <= self.max_tokens <= MAX_MAX_TOKENS, "frontier.max_tokens", self.max_tokens,
                f"must be in [1, {MAX_MAX_TOKENS}]")
        require(self.seed >= 0, "frontier.seed", self.seed, "must be >= 0")
        require_choice("frontier.view", self.view, FRONTIER_VIEWS)
        require(bool(self.system_prompt.strip()), "frontier.system_prompt", self.system_prompt, "must not be empty")
        require(self.concurrency is None or 1 <= self.concurrency <= MAX_CONCURRENCY, "frontier.concurrency",
                self.concurrency, f"must be unset (1 for a local server, {REMOTE_CONCURRENCY} for a remote one) or "
                f"in [1, {MAX_CONCURRENCY}]")
        require(self.replies is None or (isinstance(self.replies, str) and bool(self.replies.strip())),
                "frontier.replies", self.replies, "must be unset (the user's cache) or a directory path")
