"""Validate all of params.yaml at once (every section, then the cross-section seed plan) before any stage works.

Each stage loads only its own section, so on its own a bad value in a late stage's section (``roundeval``,
``baseline``) surfaces only after the early stages have run for minutes. ``validate_all`` loads every
section with the same config class its stage uses and adds the checks no single section can make (eval
seeds disjoint from training seeds, seed blocks inside the training range, player specs, the rounds
chain), raising the first problem as one ConfigError that names the key path, the value and what is
allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from arena.core.config import ConfigError, check_numbers, load_section, require
from arena.core.errors import ArenaError
from arena.core.seeds import SeedsConfig, check_seed_ranges, format_range, grpo_seeds, lsp_seeds
from arena.eval.config import EvalConfig, RoundEvalConfig, TournamentConfig
from arena.games.variants import NIM_DEFAULTS, check_game_id, validate_variant
from arena.play.config import ProbeConfig, ShardsConfig
from arena.players.config import FrontierConfig, think_config
from arena.players.specs import SCRIPTED_NAMES, SPEC_HELP, parse_spec
from arena.train.config import (
    FULL_WIDTH_GAMES,
    BaseConfig,
    CurriculumConfig,
    LspConfig,
    PoolConfig,
    RestConfig,
    SelfPlayConfig,
    TrainConfig,
    check_loop,
)
from arena.train.memory import check_base_fits

# params.yaml sections dvc.yaml lists under some stage's `params:` (DVC itself refuses a missing one).
REQUIRED_SECTIONS = (
    "base", "seeds", "probe", "shards", "eval", "baseline", "selfplay", "train", "pool", "roundeval", "rounds",
    "loop", "rest", "curriculum", "lsp", "frontier",
)
# Sections a user may drop: the final tournament's players.
OPTIONAL_SECTIONS = ("tournament",)
# Sections whose view/temperature/enable_thinking are checked by MLXPlayerConfig, which names them `player.view` and
# `player.temperature`; its errors are re-keyed to the section they came from.
_PLAYER_KEY = re.compile(r"^player\.(view|temperature|max_batch_tokens|enable_thinking|store_tokens|store_dtype) ")
# Sections listing player specs, and under which keys.
PLAYER_LISTS = {"shards": ("players",), "baseline": ("players", "frontier"), "tournament": ("players", "frontier")}


def _loaders() -> dict[str, Callable[[Mapping[str, Any]], Any]]:
    """Each section's loader: the (light) config class its stage builds it with."""
    def section(cls: type, name: str) -> Callable[[Mapping[str, Any]], Any]:
        return lambda params: load_section(cls, name, params)

    return {
        "base": section(BaseConfig, "base"),
        "seeds": section(SeedsConfig, "seeds"),
        "probe": section(ProbeConfig, "probe"),
        "shards": section(ShardsConfig, "shards"),
        "eval": lambda params: EvalConfig.from_dict(params.get("eval"), "eval"),
        "baseline": section(TournamentConfig, "baseline"),
        "selfplay": section(SelfPlayConfig, "selfplay"),
        "train": section(TrainConfig, "train"),
        "pool": section(PoolConfig, "pool"),
        "roundeval": section(RoundEvalConfig, "roundeval"),
        "rounds": lambda params: check_rounds(params.get("rounds")),
        "loop": check_loop,
        "rest": section(RestConfig, "rest"),
        "curriculum": section(CurriculumConfig, "curriculum"),
        "lsp": section(LspConfig, "lsp"),
        "frontier": section(FrontierConfig, "frontier"),
        "tournament": section(TournamentConfig, "tournament"),
    }


def check_spec(key: str, spec: Any) -> None:
    """A player spec's form, without loading it: a scripted name, ``mlx:PATH`` or ``openai:MODEL@BASE_URL``.

    The model path is not required to exist: it is usually an artifact an earlier stage builds.
    """

    if not isinstance(spec, str):
        raise ConfigError(f"{key} = {spec!r} must be a string player spec: {SPEC_HELP}")
    if spec.startswith("mlx:"):
        require(bool(spec[len("mlx:"):].strip()), key, spec, "mlx:PATH needs a model directory after 'mlx:'")
    elif spec.startswith("openai:"):
        try:
            parse_spec(spec)
        except ArenaError as error:
            raise ConfigError(f"{key} = {spec!r} is invalid: {error}") from None
    else:
        require(spec in SCRIPTED_NAMES, key, spec, f"expected {SPEC_HELP}")


def check_game(key: str, game_id: Any, variant: Any) -> None:
    """A game id arena has, and a variant that game accepts (``key`` names the game's key)."""
    if not isinstance(game_id, str):
        return  # the section's own type check reports it, naming the key
    try:
        check_game_id(game_id)
    except ArenaError as error:
        raise ConfigError(f"{key} = {game_id!r} is invalid: {error}") from None
    if isinstance(variant, Mapping):
        try:
            validate_variant(game_id, variant)
        except ArenaError as error:
            raise ConfigError(f"{key.rsplit('.', 1)[0]}.variant = {dict(variant)!r} is invalid: {error}") from None


def check_rounds(rounds: Any) -> dict[str, tuple[int, int]]:
    """``rounds:`` unrolls the GRPO rounds for dvc.yaml: ``{name: {n, prev}}``, each round starting from a snapshot
    that exists (round 0's, or one an earlier round makes). Returns ``{name: (n, prev)}``."""
    if not isinstance(rounds, Mapping) or not rounds:
        raise ConfigError(f"rounds = {rounds!r} must be a non-empty mapping like {{r1: {{n: 1, prev: 0}}}}")
    parsed: dict[str, tuple[int, int]] = {}
    for name, entry in rounds.items():
        key = f"rounds.{name}"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{key} = {entry!r} must be a mapping {{n: N, prev: N-1}}")
        unknown = sorted(set(entry) - {"n", "prev"})
        if unknown:
            raise ConfigError(f"unknown key {key}.{unknown[0]}; allowed keys in {key}: n, prev")
        for field in ("n", "prev"):
            if field not in entry:
                raise ConfigError(f"missing required key {key}.{field} (int)")
            value = entry[field]
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{key}.{field} = {value!r} must be an integer, got {type(value).__name__}")
        require(entry["n"] >= 1, f"{key}.n", entry["n"], "must be >= 1 (round 0 is the base model's snapshot)")
        require(0 <= entry["prev"] < entry["n"], f"{key}.prev", entry["prev"], f"must be in [0, {entry['n']})")
        parsed[str(name)] = (entry["n"], entry["prev"])
    numbers = [n for n, _ in parsed.values()]
    for name, (n, prev) in parsed.items():
        require(numbers.count(n) == 1, f"rounds.{name}.n", n, "must be unique: another round has the same n")
        require(prev == 0 or prev in numbers, f"rounds.{name}.prev", prev,
                f"must be 0 or the n of another round (snapshots exist for {sorted({0, *numbers})})")
    return parsed


def _check_players(name: str, raw: Mapping[str, Any]) -> None:
    """The player-spec lists of a section (``players``; ``frontier`` entries must be frontier specs)."""
    for list_key in PLAYER_LISTS.get(name, ()):
        specs = raw.get(list_key)
        if not isinstance(specs, (list, tuple)):
            continue  # absent (the default) or not a list: the section's own type check reports it
        for index, spec in enumerate(specs):
            key = f"{name}.{list_key}[{index}]"
            if list_key == "frontier" and isinstance(spec, str):
                require(spec.startswith("openai:"), key, spec, "each entry must be openai:MODEL@BASE_URL")
            check_spec(key, spec)


def _load(name: str, loader: Callable[[Mapping[str, Any]], Any], params: Mapping[str, Any]) -> Any:
    """Run one section's loader after its game and player checks; re-key MLXPlayerConfig's ``player.*`` errors."""
    raw = params.get(name)
    if isinstance(raw, Mapping):
        if "game" in raw:
            check_game(f"{name}.game", raw["game"], raw.get("variant", {}))
        for index, entry in enumerate(raw.get("mix") or ()):
            if isinstance(entry, Mapping):
                check_game(f"{name}.mix[{index}].id", entry.get("id"), entry.get("variant", {}))
        _check_players(name, raw)
    try:
        return loader(params)
    except ConfigError as error:
        message = str(error)
        if _PLAYER_KEY.match(message):
            raise ConfigError(f"{name}.{message[len('player.'):]}") from None
        if "player.think" in message:  # a think: mapping's unknown key or bad value (players.config.ThinkConfig)
            raise ConfigError(message.replace("player.think", f"{name}.think")) from None
        raise


def _check_plan(configs: Mapping[str, Any]) -> None:
    """Checks across sections: the seed plan every stage relies on, computed with the stages' own functions."""
    seeds, evaluation = configs["seeds"], configs["eval"]
    try:
        check_seed_ranges(evaluation.seeds, seeds.reserved())
    except ConfigError as error:
        raise ConfigError(f"eval.seeds = {format_range(evaluation.seeds)} is invalid: {error}") from None
    roundeval = configs["roundeval"]
    require((roundeval.games + 1) // 2 <= len(evaluation.seeds), "roundeval.games", roundeval.games,
            f"needs {(roundeval.games + 1) // 2} deals (each played from both seats) but eval.seeds has "
            f"{len(evaluation.seeds)}")
    for index, game in enumerate(evaluation.games):
        check_game(f"eval.games[{index}].id", game.game_id, game.variant)
    shards = configs["shards"]
    deals = (shards.games_per_shard + 1) // 2
    last = max(shards.shards, default=0)
    stop = seeds.train_start + (last + 1) * deals
    require(stop <= seeds.train_end, "shards.shards", list(shards.shards),
            f"shard {last} of {shards.games_per_shard} games needs training seeds up to {stop} but "
            f"seeds.train_end = {seeds.train_end}; use fewer or smaller shards, or raise seeds.train_end")
    last_round = max(n for n, _ in configs["rounds"].values())
    selfplay = configs["selfplay"]
    grpo_seeds(seeds, selfplay.deals_per_round, last_round, selfplay.iterations_per_round)
    require(configs["train"].group_by == "deal" or selfplay.group_size >= 4, "train.group_by",
            configs["train"].group_by, f"'seat' compares the games a deal plays from one seat, so it needs two or more "
            f"a seat: selfplay.group_size >= 4, got {selfplay.group_size}")
    _check_full_width(configs)
    _check_think(configs)
    _check_fair(configs)
    _check_probe(configs)
    check_base_fits(configs["base"], configs["train"])
    lsp = configs["lsp"]
    lsp_seeds(seeds, lsp.proposals, last_round)
    try:
        check_seed_ranges(lsp.benchmark, seeds.reserved())
    except ConfigError as error:
        raise ConfigError(f"lsp.benchmark_seeds = {format_range(lsp.benchmark)} is invalid: {error}") from None


def _check_probe(configs: Mapping[str, Any]) -> None:
    """The reward audit's seeds are held out: disjoint from the training seeds and from ``eval.seeds``."""
    probe, seeds = configs["probe"], configs["seeds"]
    audit = probe.seed_range()
    for what, other in (("the training seeds", range(seeds.train_start, seeds.train_end)),
                        ("eval.seeds", configs["eval"].seeds)):
        require(max(audit.start, other.start) >= min(audit.stop, other.stop), "probe.seed", probe.seed,
                f"the reward audit's seeds {format_range(audit)} overlap {what} {format_range(other)}; "
                "move probe.seed clear of both")


def _check_full_width(configs: Mapping[str, Any]) -> None:
    """``train.neurd_values: exact`` needs the selfplay loop and games whose exact theory gives every state's values."""
    if configs["train"].neurd_values != "exact":
        return
    require(configs["loop"] == "selfplay", "train.neurd_values", "exact",
            f"trains the selfplay loop's games, but loop is {configs['loop']!r}; use loop: selfplay")
    games = [game for game, _ in configs["selfplay"].games]
    other = [game for game in games if game not in FULL_WIDTH_GAMES]
    require(not other, "train.neurd_values", "exact",
            f"needs every selfplay game to have exact theory ({', '.join(FULL_WIDTH_GAMES)}), but selfplay trains "
            f"{games}; drop {other} or use train.neurd_values: sampled")
    piles = [variant["piles"] for game, variant in configs["selfplay"].games
             if game == "nim" and list(variant.get("piles", NIM_DEFAULTS["piles"])) != NIM_DEFAULTS["piles"]]
    require(not piles, "train.neurd_values", "exact",
            f"trains Nim's positions from piles {NIM_DEFAULTS['piles']} only, but selfplay plays Nim from {piles[:1]}; "
            "drop the variant's piles or use train.neurd_values: sampled")


def _check_think(configs: Mapping[str, Any]) -> None:
    """``selfplay.think`` trains whole replies with GRPO in loop: selfplay's rounds, one iteration a round, in one
    process (arena.train.selfplay.thinkround); ``rest.think`` keeps whole winning replies in loop: rest's rounds
    (arena.train.rest.thinksft)."""
    if configs["rest"].think:
        require(configs["loop"] == "rest", "rest.think", dict(configs["rest"].think),
                f"trains reasoning in loop: rest's rounds, but loop is {configs['loop']!r}; use loop: rest "
                "(or selfplay.think for GRPO's rounds)")
    if not configs["selfplay"].think:
        return
    think = dict(configs["selfplay"].think)
    require(configs["loop"] == "selfplay", "selfplay.think", think,
            f"trains reasoning in loop: selfplay's rounds, but loop is {configs['loop']!r}; use loop: selfplay")
    require(configs["train"].objective == "grpo", "selfplay.think", think,
            f"trains whole replies with GRPO, but train.objective is {configs['train'].objective!r}; "
            "use train.objective: grpo")
    require(configs["selfplay"].iterations_per_round == 1, "selfplay.think", think,
            f"trains one iteration a round, but selfplay.iterations_per_round is "
            f"{configs['selfplay'].iterations_per_round}; use selfplay.iterations_per_round: 1")


def _check_fair(configs: Mapping[str, Any]) -> None:
    """A tournament that pits a thinking local player against frontier players gives both the same observation text
    (``frontier.view`` = the section's ``view``) and the same reasoning budget (``frontier.max_tokens`` = the
    section's ``think.max_tokens``); each player's pin then states its budget on every score card."""
    frontier = configs["frontier"]
    for name in ("baseline", "tournament"):
        section = configs.get(name)
        if section is None or not section.think:
            continue
        specs = [*section.frontier, *(spec for spec in section.players if spec.startswith("openai:"))]
        if not specs or not any(spec.startswith("mlx:") for spec in section.players):
            continue
        budget = think_config(name, section.think).max_tokens
        require(frontier.view == section.view, f"{name}.view", section.view,
                f"differs from frontier.view = {frontier.view!r}: a thinking local player and the frontier players "
                f"{specs} must see the same observation text; set both to the same view")
        require(frontier.max_tokens == budget, f"{name}.think.max_tokens", budget,
                f"differs from frontier.max_tokens = {frontier.max_tokens}: a thinking local player and the frontier "
                f"players {specs} get the same reasoning budget; set both to the same number of tokens")


def validate_all(params: Mapping[str, Any]) -> None:
    """Load every section of ``params`` (a parsed params.yaml) and check the plan across them.

    Raises the first problem as a ConfigError naming the key path, the value and what is allowed:
    an unknown or missing section, any section's unknown key, wrong type or out-of-range value (a non-finite
    float, an integer past 2^63), an unknown game, variant or player spec, seed ranges that overlap or overflow,
    a base model that cannot fit this machine's memory.
    """
    if not isinstance(params, Mapping):
        raise ConfigError(f"params.yaml must be a mapping of sections, got {type(params).__name__}")
    check_numbers("", params)  # every float finite, every integer 64-bit, wherever it sits
    allowed = (*REQUIRED_SECTIONS, *OPTIONAL_SECTIONS)
    unknown = [name for name in params if name not in allowed]
    if unknown:
        raise ConfigError(f"unknown section {unknown[0]!r} in params.yaml; allowed sections: {', '.join(allowed)}")
    missing = [name for name in REQUIRED_SECTIONS if name not in params]
    if missing:
        raise ConfigError(
            f"missing section {missing[0]!r} in params.yaml: dvc.yaml's stages read it; copy it from the "
            "default params.yaml"
        )
    loaders = _loaders()
    configs = {name: _load(name, loaders[name], params) for name in allowed if name in params}
    _check_plan(configs)
