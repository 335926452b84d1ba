"""Hostile params (issue 47 items 5-8): non-finite floats, huge seeds, unbounded sizes, what DVC's parser rejects.

Each bad value is one ConfigError line naming the key, the value and the bound, before any work starts.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from arena.core.config import ConfigError, load_params
from arena.core.errors import ArenaError
from arena.pipeline.params import validate_all

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = load_params(ROOT / "params.yaml")


def edited(path: str, value: object) -> dict:
    """The default params with the dotted ``path`` set to ``value``."""
    params = copy.deepcopy(DEFAULT)
    *parents, last = path.split(".")
    node = params
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return params


def _one_line_error(params: dict, pattern: str) -> str:
    with pytest.raises(ConfigError, match=pattern) as caught:
        validate_all(params)
    assert "\n" not in str(caught.value)
    return str(caught.value)


# ---------------------------------------------------------------------------------------------- item 5

@pytest.mark.parametrize("key", ["tournament.temperature", "baseline.temperature", "train.beta", "train.neurd_clip",
                                 "train.lora_scale", "frontier.timeout_s", "train.lr"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_floats_are_refused(key, value):
    _one_line_error(edited(key, value), rf"{key.replace('.', chr(92) + '.')} = -?(inf|nan) .*finite")


# ---------------------------------------------------------------------------------------------- item 6

@pytest.mark.parametrize("key, value, pattern", [
    ("seeds.train_end", 2**63, r"seeds\.train_end = 9223372036854775808 .*2\^63"),
    ("seeds.train_start", -5, r"seeds\.train_start = -5 .*>= 0"),
    ("eval.seeds", [9_000_000, 2**64], r"eval\.seeds.*18446744073709551616.*2\^63"),
    ("base.seed", 2**70, r"base\.seed = 1180591620717411303424 .*2\^63"),
    ("probe.seed", -1, r"probe\.seed = -1 .*>= 0"),
])
def test_seeds_beyond_the_rng_are_refused(key, value, pattern):
    _one_line_error(edited(key, value), pattern)


def test_probe_seeds_inside_the_eval_or_training_range_are_refused():
    start = DEFAULT["eval"]["seeds"][0]
    _one_line_error(edited("probe.seed", start + 1), r"probe\.seed = \d+ .*eval\.seeds")
    _one_line_error(edited("probe.seed", 10), r"probe\.seed = 10 .*training seeds")


# ---------------------------------------------------------------------------------------------- item 7

def test_a_base_shape_beyond_memory_is_refused_before_any_work():
    message = _one_line_error(edited("base.vocab_size", 1_000_000_000), r"base\.vocab_size = 1000000000 .*GB")
    assert "memory" in message


@pytest.mark.parametrize("game, variant, pattern", [
    ("kuhn", {"rounds": 250}, r"'rounds'.*250.*400-action cap.*rounds <= 133"),
    ("leduc", {"rounds": 60}, r"'rounds'.*60.*400-action cap.*rounds <= 50"),
    ("nim", {"piles": [1_000_000_000]}, r"'piles'.*1000000000.*400-action cap"),
    ("liarsdice", {"dice": 1_000_000}, r"'dice'.*1000000.*400-action cap.*dice <= 11"),
])
def test_a_game_variant_that_cannot_end_within_the_action_cap_is_refused(game, variant, pattern):
    params = edited("shards.game", game)
    params["shards"]["variant"] = variant
    _one_line_error(params, pattern)


def test_the_largest_variants_that_fit_play_to_the_end():
    from arena.games.registry import make_game
    from arena.games.variants import MAX_ACTIONS, max_actions

    for game, variant in (("kuhn", {"rounds": 133}), ("leduc", {"rounds": 50}), ("liarsdice", {"dice": 11}),
                          ("nim", {"piles": [400]})):
        assert max_actions(game, variant) <= MAX_ACTIONS
        make_game(game, 0, variant)  # builds without error


def test_a_model_config_beyond_memory_is_refused_before_loading(tmp_path):
    from arena.players.mlx import load_model

    config = {"model_type": "qwen2", "num_hidden_layers": 100_000, "hidden_size": 576, "num_attention_heads": 9,
              "num_key_value_heads": 3, "intermediate_size": 1536, "vocab_size": 49152}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ArenaError, match=r"num_hidden_layers = 100000.*GB.*memory") as caught:
        load_model(tmp_path)
    assert "\n" not in str(caught.value)


# ---------------------------------------------------------------------------------------------- item 8

def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "params.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_a_duplicate_key_is_refused_as_dvc_does(tmp_path):
    with pytest.raises(ConfigError, match=r"params\.yaml.*duplicate key.*steps.*line 3") as caught:
        load_params(_write(tmp_path, "train:\n  steps: 1\n  steps: 7\n"))
    assert "\n" not in str(caught.value)


def test_an_unquoted_spec_in_a_flow_list_is_refused_as_dvc_does(tmp_path):
    with pytest.raises(ConfigError, match=r"params\.yaml.*line 2.*quote") as caught:
        load_params(_write(tmp_path, "shards:\n  players: [mlx:artifacts/models/base, random]\n"))
    assert "\n" not in str(caught.value)


def test_a_value_dvc_reads_otherwise_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"frontier\.x.*DVC reads 'on'.*True.*quote") as caught:
        load_params(_write(tmp_path, "frontier:\n  x: on\n"))
    assert "\n" not in str(caught.value)


def test_a_non_utf8_params_file_is_one_line(tmp_path):
    path = _write(tmp_path, b"train:\n  steps: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"params\.yaml is not UTF-8.*byte 16"):
        load_params(path)
    from click.testing import CliRunner

    from arena.cli import main

    done = CliRunner().invoke(main, ["check-params", str(path)])
    assert done.exit_code == 2 and done.output.strip().startswith("error:"), done.output
    assert len(done.output.strip().splitlines()) == 1


def test_the_default_params_still_load_the_same():
    assert load_params(ROOT / "params.yaml") == DEFAULT
    validate_all(DEFAULT)
