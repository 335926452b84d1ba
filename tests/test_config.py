"""Config validation: unknown keys, wrong types and bad values are errors naming key, value and what is allowed."""

import pytest

from arena.core.config import ConfigError, from_mapping, load_section
from arena.train.config import BaseConfig


@pytest.mark.parametrize(
    ("section", "pattern"),
    [
        ({"source": "embedded", "bogus": 1}, r"unknown key base\.bogus; allowed keys in base: .*quant"),
        ({"quant": "q3"}, r"base\.quant = 'q3' is invalid: expected one of none, q8, q4"),
        ({"seed": "zero"}, r"base\.seed = 'zero' must be an integer, got str"),
        ({"seed": 1.5}, r"base\.seed = 1\.5 must be an integer, got float"),
        ({"seed": True}, r"base\.seed = True must be an integer"),
        ({"hidden_size": 0}, r"base\.hidden_size = 0 is invalid: must be >= 1"),
        ({"hidden_size": 130}, r"base\.hidden_size = 130 is invalid: must be divisible by base\.num_heads = 4"),
        ({"vocab_size": 100}, r"base\.vocab_size = 100 is invalid: must be >= 300"),
    ],
)
def test_base_section_errors(section, pattern):
    with pytest.raises(ConfigError, match=pattern):
        from_mapping(BaseConfig, section, "base")


def test_section_must_be_mapping():
    with pytest.raises(ConfigError, match="base must be a mapping"):
        from_mapping(BaseConfig, [1, 2], "base")


def test_float_written_without_dot_is_explained():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Train:
        lr: float = 1.0e-3

    with pytest.raises(ConfigError, match=r"train\.lr = 'fast' must be a float, got a string"):
        from_mapping(Train, {"lr": "fast"}, "train")
    assert from_mapping(Train, {"lr": 1}, "train").lr == 1.0


def test_missing_required_key():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Needs:
        games: int

    with pytest.raises(ConfigError, match=r"missing required key eval\.games \(int\)"):
        from_mapping(Needs, {}, "eval")


def test_load_section_from_file(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("base:\n  quant: q8\n  seed: 3\n")
    config = load_section(BaseConfig, "base", params)
    assert (config.quant, config.seed, config.source) == ("q8", 3, "embedded")


def test_missing_params_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_section(BaseConfig, "base", tmp_path / "nope.yaml")


def test_config_is_frozen():
    config = BaseConfig()
    with pytest.raises(AttributeError):
        config.seed = 2


@pytest.mark.parametrize("text", ["5e-05", "1e-5", "1E+3", "-2.5e-7", "3.0e-4", "0.1", ".5"])
def test_params_read_every_float_dvc_writes(text):
    """`dvc exp run -S train.lr=5e-05` writes YAML 1.2 floats without a dot; they must load as floats."""
    from arena.core.config import parse_params

    value = parse_params(f"lr: {text}\n")["lr"]
    assert isinstance(value, float) and value == float(text)


@pytest.mark.parametrize("text", ["'5e-05'", "fast", "1e", "e5", "1.2.3"])
def test_params_keep_real_strings_strings(text):
    from arena.core.config import parse_params

    assert isinstance(parse_params(f"lr: {text}\n")["lr"], str)
