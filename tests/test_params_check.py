"""Bad params.yaml values: one clear error per problem, naming key path, value and what is allowed, before any work."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from arena.core.config import ConfigError, load_params
from arena.pipeline.params import REQUIRED_SECTIONS, validate_all

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = load_params(ROOT / "params.yaml")
DELETE = object()


def edited(path: str, value: object) -> dict:
    """The default params with the dotted ``path`` set to ``value`` (or removed, for DELETE)."""
    params = copy.deepcopy(DEFAULT)
    *parents, last = path.split(".")
    node = params
    for part in parents:
        node = node.setdefault(part, {})
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return params


# (key path edited, new value, the key path the message must name, a regex for the rest of the message).
# Each section gets an unknown key, a wrong type and an out-of-range value; required keys get a missing case.
CASES = [
    ("base.bogus", 1, "base.bogus", r"unknown key base\.bogus; allowed keys in base: .*hidden_size"),
    ("base.seed", "zero", "base.seed", r"base\.seed = 'zero' must be an integer, got str"),
    ("base.num_layers", 0, "base.num_layers", r"base\.num_layers = 0 is invalid: must be >= 1"),
    ("base.quant", "q3", "base.quant", r"base\.quant = 'q3' is invalid: expected one of none, q8, q4"),
    ("seeds.start", 0, "seeds.start", r"unknown key seeds\.start; allowed keys in seeds: train_end, train_start"),
    ("seeds.train_end", 1.5, "seeds.train_end", r"seeds\.train_end = 1\.5 must be an integer, got float"),
    ("seeds.train_end", 0, "seeds.train_end", r"seeds\.train_end = 0 is invalid: must be > seeds\.train_start = 0"),
    ("probe.games_per_game", 4, "probe.games_per_game", r"unknown key probe\.games_per_game; allowed keys in probe"),
    ("probe.games", "kuhn", "probe.games", r"probe\.games = 'kuhn' must be a list, got str"),
    ("probe.games_per_check", 10, "probe.games_per_check", r"probe\.games_per_check = 10 is invalid: must be >= 20"),
    ("probe.games", ["kuhn", "chess"], "probe.games", r"probe\.games = 'chess' is invalid: expected one of kuhn"),
    ("shards.shard", 0, "shards.shard", r"unknown key shards\.shard; allowed keys in shards: .*shards"),
    ("shards.games_per_shard", "512", "shards.games_per_shard",
     r"shards\.games_per_shard = '512' must be an integer, got str"),
    ("shards.games_per_shard", 0, "shards.games_per_shard",
     r"shards\.games_per_shard = 0 is invalid: must be >= 1"),
    ("shards.view", "brief", "shards.view", r"shards\.view = 'brief' is invalid: expected one of compact, full"),
    ("shards.game", "chess", "shards.game", r"shards\.game = 'chess' is invalid: unknown game id .*kuhn"),
    ("shards.variant", {"rounds": 0}, "shards.variant",
     r"shards\.variant = \{'rounds': 0\} is invalid: kuhn variant 'rounds' must be an int >= 1, got 0"),
    ("shards.players", ["mlx:artifacts/models/base", "rnadom"], "shards.players[1]",
     r"shards\.players\[1\] = 'rnadom' is invalid: expected random, first"),
    ("shards.shards", [0, 5000], "shards.shards",
     r"shards\.shards = \[0, 5000\] is invalid: shard 5000 of 512 games needs training seeds up to 1280256 but "
     r"seeds\.train_end = 1000000"),
    ("eval.bogus", 1, "eval.bogus", r"unknown keys in eval: eval\.bogus; allowed: games, seeds, trueskill"),
    ("eval.seeds", DELETE, "eval.seeds", r"missing required key eval\.seeds"),
    ("eval.games", DELETE, "eval.games", r"missing required key eval\.games"),
    ("eval.seeds", "9000000", "eval.seeds",
     r"eval\.seeds must be a range, \[start, stop\] or \{start, stop\}, got '9000000'"),
    ("eval.seeds", [9000400, 9000000], "eval.seeds",
     r"eval\.seeds \[9000400, 9000000\) is empty; give a stop greater than its start"),
    ("eval.seeds", [0, 400], "eval.seeds",
     r"eval\.seeds = \[0, 400\) is invalid: evaluation seeds \[0, 400\) overlap rollout/training seeds"),
    ("eval.games", ["chess"], "eval.games[0].id", r"eval\.games\[0\]\.id = 'chess' is invalid: unknown game id"),
    ("eval.trueskill", {"sigma": 0.0}, "eval.trueskill.sigma",
     r"eval\.trueskill\.sigma = 0\.0 is invalid: must be > 0"),
    ("baseline.player", ["random"], "baseline.player",
     r"unknown key baseline\.player; allowed keys in baseline: enable_thinking, frontier, max_batch_tokens, players"),
    ("baseline.players", "random", "baseline.players", r"baseline\.players = 'random' must be a list, got str"),
    ("baseline.temperature", -1.0, "baseline.temperature",
     r"baseline\.temperature = -1\.0 is invalid: must be >= 0"),
    ("baseline.frontier", ["gpt-4o"], "baseline.frontier[0]",
     r"baseline\.frontier\[0\] = 'gpt-4o' is invalid: each entry must be openai:MODEL@BASE_URL"),
    ("baseline.frontier", ["openai:gpt-4o@ftp://example.com/v1"], "baseline.frontier[0]",
     r"baseline\.frontier\[0\] = 'openai:gpt-4o@ftp://example\.com/v1' is invalid: .*must be openai:MODEL@BASE_URL"),
    ("baseline.players", ["mlx:", "random"], "baseline.players[0]",
     r"baseline\.players\[0\] = 'mlx:' is invalid: mlx:PATH needs a model directory"),
    ("selfplay.deals", 8, "selfplay.deals", r"unknown key selfplay\.deals; allowed keys in selfplay"),
    ("selfplay.mix", [{"id": "chess"}], "selfplay.mix[0].id",
     r"selfplay\.mix\[0\]\.id = 'chess' is invalid: unknown game"),
    ("selfplay.mix", [{"id": "nim", "variant": {"piles": []}}], "selfplay.mix[0].variant",
     r"selfplay\.mix\[0\]\.variant = \{'piles': \[\]\} is invalid"),
    ("selfplay.mix", [{"id": "kuhn"}], "selfplay.mix", r"selfplay\.mix = .* lists a game twice"),
    ("selfplay.mix", [{"id": "tictactoe", "variant": {"opening": 9}}], "selfplay.mix[0].variant",
     r"selfplay\.mix\[0\]\.variant = \{'opening': 9\} is invalid: tictactoe variant 'opening' \(random moves "
     r"before play\) must be an int in \[0, 8\], got 9"),
    ("selfplay.group_size", 2.0, "selfplay.group_size", r"selfplay\.group_size = 2\.0 must be an integer, got float"),
    ("selfplay.group_size", 3, "selfplay.group_size",
     r"selfplay\.group_size = 3 is invalid: must be an even number >= 2"),
    ("selfplay.temperature", 0.0, "selfplay.temperature",
     r"selfplay\.temperature = 0\.0 is invalid: must be > 0: GRPO needs sampled moves"),
    ("selfplay.deals_per_round", 100_000, "selfplay.deals_per_round",
     r"selfplay\.deals_per_round x selfplay\.iterations_per_round = 2000000 is invalid: needs seeds up to 16500000 "
     r"but seeds\.train_end = 1000000"),
    ("selfplay.iterations_per_round", 0, "selfplay.iterations_per_round",
     r"selfplay\.iterations_per_round = 0 is invalid: must be >= 1"),
    ("selfplay.iterations_per_round", 60, "selfplay.deals_per_round",
     r"selfplay\.deals_per_round = 256 is invalid: round 8's 15360 deals a round \(60 iterations x 256\) would "
     r"reach the ReST block at 600000"),
    ("selfplay.memo_prompts", -1, "selfplay.memo_prompts", r"selfplay\.memo_prompts = -1 is invalid: must be >= 0"),
    ("train.learning_rate", 1.0e-3, "train.learning_rate", r"unknown key train\.learning_rate; allowed keys in train"),
    ("train.lr", "fast", "train.lr", r"train\.lr = 'fast' must be a float, got a string"),
    ("train.clip_eps", 1.5, "train.clip_eps", r"train\.clip_eps = 1\.5 is invalid: must be in \(0, 1\)"),
    ("train.method", "qlora", "train.method", r"train\.method = 'qlora' is invalid: expected one of full, lora"),
    ("train.group_by", "game", "train.group_by", r"train\.group_by = 'game' is invalid: expected one of deal, seat"),
    ("train.group_by", "seat", "train.group_by",
     r"train\.group_by = 'seat' is invalid: 'seat' compares the games a deal plays from one seat, so it needs two "
     r"or more a seat: selfplay\.group_size >= 4, got 2"),
    ("pool.size", 3, "pool.size", r"unknown key pool\.size; allowed keys in pool: lag, sampling, scripted, window"),
    ("pool.lag", "2", "pool.lag", r"pool\.lag = '2' must be an integer, got str"),
    ("pool.lag", 0, "pool.lag", r"pool\.lag = 0 is invalid: must be >= 1"),
    ("pool.sampling", "best", "pool.sampling", r"pool\.sampling = 'best' is invalid: expected one of latest"),
    ("roundeval.seeds", [0, 1], "roundeval.seeds", r"unknown key roundeval\.seeds; allowed keys in roundeval"),
    ("roundeval.games", [400], "roundeval.games", r"roundeval\.games = \[400\] must be an integer, got list"),
    ("roundeval.games", 1, "roundeval.games", r"roundeval\.games = 1 is invalid: must be >= 2"),
    ("roundeval.games", 100_000, "roundeval.games",
     r"roundeval\.games = 100000 is invalid: needs 50000 deals \(each played from both seats\) "
     r"but eval\.seeds has 400"),
    ("roundeval.opponents", ["mlx:artifacts/models/base"], "roundeval.opponents",
     r"roundeval\.opponents = 'mlx:artifacts/models/base' is invalid: fixed external baselines must be scripted"),
    ("rounds.r1.m", 1, "rounds.r1.m", r"unknown key rounds\.r1\.m; allowed keys in rounds\.r1: n, prev"),
    ("rounds.r1.prev", DELETE, "rounds.r1.prev", r"missing required key rounds\.r1\.prev \(int\)"),
    ("rounds.r1.n", "1", "rounds.r1.n", r"rounds\.r1\.n = '1' must be an integer, got str"),
    ("rounds.r2.prev", 2, "rounds.r2.prev", r"rounds\.r2\.prev = 2 is invalid: must be in \[0, 2\)"),
    ("rounds.r2.n", 9, "rounds.r3.prev",
     r"rounds\.r3\.prev = 2 is invalid: must be 0 or the n of another round \(snapshots exist for \[0, 1, 3,"),
    ("loop", "ppo", "loop", r"loop = 'ppo' is invalid: expected one of selfplay, rest, lsp"),
    ("rest.samples_per_seed", 0, "rest.samples_per_seed", r"rest\.samples_per_seed = 0 is invalid"),
    ("rest.k", 4, "rest.k", r"unknown key rest\.k; allowed keys in rest"),
    ("curriculum.band_low", 1.5, "curriculum.band_low",
     r"curriculum\.band_low = 1\.5 is invalid: must lie in \[0, 1\]"),
    ("curriculum.band_low", 0.8, "curriculum.band_high", r"curriculum\.band_high = 0\.7 is invalid"),
    ("lsp.bogus", 1, "lsp.bogus", r"unknown key lsp\.bogus; allowed keys in lsp: .*alpha_ch"),
    ("lsp.quality", "yes", "lsp.quality", r"lsp\.quality = 'yes' must be true or false, got str"),
    ("lsp.challenger", "oracle", "lsp.challenger", r"lsp\.challenger = 'oracle' is invalid: expected one of model"),
    ("lsp.proposals", 100000, "lsp.proposals", r"lsp\.proposals = 100000 is invalid: needs seeds up to"),
    ("lsp.benchmark_seeds", [0, 1000], "lsp.benchmark_seeds", r"lsp\.benchmark_seeds = \[0, 1000\) is invalid"),
    ("frontier.max_calls", -1, "frontier.max_calls", r"frontier\.max_calls = -1 is invalid: must be >= 0"),
    ("trian", {"lr": 1.0e-3}, "trian", r"unknown section 'trian' in params\.yaml; allowed sections: base, seeds"),
    ("pool", DELETE, "pool", r"missing section 'pool' in params\.yaml: dvc\.yaml's stages read it"),
]


def test_the_default_params_and_every_required_section_are_valid():
    validate_all(DEFAULT)
    assert set(REQUIRED_SECTIONS) <= set(DEFAULT)


@pytest.mark.parametrize(("path", "value", "key", "pattern"), CASES, ids=[f"{c[0]}={c[1]!r}" for c in CASES])
def test_bad_params_give_one_clear_error(path, value, key, pattern):
    with pytest.raises(ConfigError) as error:
        validate_all(edited(path, value))
    message = str(error.value)
    assert key in message
    assert "\n" not in message
    assert re.search(pattern, message), message


def test_every_section_has_cases():
    sections = {path.split(".")[0] for path, *_ in CASES}
    assert set(REQUIRED_SECTIONS) <= sections


def _stage(script: str, params: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "stages" / script), "--params", str(params), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("script", "path", "value", "args", "message"),
    [
        ("round.py", "train.lr", "fast", ("--round", "1", "--prev", "0", "--artifacts", "arts"),
         "train.lr = 'fast' must be a float, got a string"),
        ("round.py", "roundeval.games", 1, ("--round", "0", "--artifacts", "arts"),
         "roundeval.games = 1 is invalid: must be >= 2"),
    ],
)
def test_a_stage_with_bad_params_stops_before_its_work(tmp_path, script, path, value, args, message):
    """The stage reads its section before touching any input: it fails on the value, not on the missing inputs."""
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(edited(path, value)))
    result = _stage(script, params, *args, cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


@pytest.mark.parametrize("section", ["selfplay", "shards", "baseline", "roundeval", "tournament", "rest"])
def test_enable_thinking_is_a_boolean_in_every_model_player_section(section):
    validate_all(edited(f"{section}.enable_thinking", True))
    with pytest.raises(ConfigError, match=rf"{section}\.enable_thinking = 'no' must be true or false"):
        validate_all(edited(f"{section}.enable_thinking", "no"))


@pytest.mark.parametrize("section", ["selfplay", "shards", "baseline", "roundeval", "tournament", "rest", "lsp"])
def test_every_model_player_section_sets_its_scoring_budget(section):
    from arena.core.config import load_section
    from arena.eval.config import RoundEvalConfig, TournamentConfig
    from arena.play.config import ShardsConfig
    from arena.players.config import sampling_config
    from arena.train.config import LspConfig, RestConfig, SelfPlayConfig

    classes = {"selfplay": SelfPlayConfig, "shards": ShardsConfig, "baseline": TournamentConfig, "lsp": LspConfig,
               "roundeval": RoundEvalConfig, "tournament": TournamentConfig, "rest": RestConfig}
    loaded = load_section(classes[section], section, edited(f"{section}.max_batch_tokens", 8192))
    assert sampling_config(loaded).max_batch_tokens == 8192
    with pytest.raises(ConfigError, match=rf"{section}\.max_batch_tokens = 0 is invalid: must be >= 1"):
        validate_all(edited(f"{section}.max_batch_tokens", 0))


@pytest.mark.parametrize("section", ["selfplay", "shards", "baseline", "roundeval", "tournament", "rest", "lsp"])
def test_every_model_player_section_sets_its_cross_turn_store(section):
    from arena.core.config import load_section
    from arena.eval.config import RoundEvalConfig, TournamentConfig
    from arena.play.config import ShardsConfig
    from arena.players.config import sampling_config
    from arena.train.config import LspConfig, RestConfig, SelfPlayConfig

    classes = {"selfplay": SelfPlayConfig, "shards": ShardsConfig, "baseline": TournamentConfig, "lsp": LspConfig,
               "roundeval": RoundEvalConfig, "tournament": TournamentConfig, "rest": RestConfig}
    params = edited(f"{section}.store_dtype", "model")
    params[section]["store_tokens"] = 12288
    config = sampling_config(load_section(classes[section], section, params))
    assert (config.store_tokens, config.store_dtype) == (12288, "model")
    with pytest.raises(ConfigError, match=rf"{section}\.store_tokens = -1 is invalid: must be a whole number >= 0"):
        validate_all(edited(f"{section}.store_tokens", -1))
    with pytest.raises(ConfigError, match=rf"{section}\.store_dtype = 'half' is invalid: expected one of pass, model"):
        validate_all(edited(f"{section}.store_dtype", "half"))
