"""The base stage: embedded model determinism, loading with mlx-lm, quantisation, pins and bad input."""

import json

import pytest

from arena.core.code import closure, code_digest, producing_code
from arena.core.config import ConfigError
from arena.core.hashing import digest_dir
from arena.core.pins import PinError, model_pin, write_meta
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig

SMALL = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 64,
         "vocab_size": 400}


def _files(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_embedded_build_is_byte_identical_for_same_seed(tmp_path):
    build_base(BaseConfig(**SMALL), tmp_path / "a")
    build_base(BaseConfig(**SMALL), tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "meta.json"} <= set(
        _files(tmp_path / "a")
    )


def test_embedded_build_differs_for_another_seed(tmp_path):
    build_base(BaseConfig(**SMALL, seed=0), tmp_path / "a")
    build_base(BaseConfig(**SMALL, seed=1), tmp_path / "b")
    assert digest_dir(tmp_path / "a") != digest_dir(tmp_path / "b")


def test_default_model_loads_and_generates(base_model_dir):
    import mlx_lm
    from mlx_lm.utils import get_total_parameters

    model, tokenizer = mlx_lm.load(str(base_model_dir))
    assert 0.5e6 < get_total_parameters(model) < 2e6
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "card: K\nhistory: p\n"}],
                                           add_generation_prompt=True)
    assert len(prompt) < 24  # game words are single tokens: prompts stay short
    tokens = list(mlx_lm.stream_generate(model, tokenizer, prompt, max_tokens=5))
    assert len(tokens) >= 1
    assert len(tokenizer.encode("[bet]")) == 1


def test_meta_json_records_digest_and_pin(base_model_dir):
    meta = json.loads((base_model_dir / "meta.json").read_text())
    assert meta["digest"] == digest_dir(base_model_dir)
    assert meta["pin"]["model_hash"] == meta["digest"]
    assert meta["pin"]["quant"] == "none"
    assert {"python", "mlx", "mlx-lm", "textarena", "blas"} <= set(meta["versions"])


def test_meta_json_records_the_producing_code(base_model_dir, tmp_path):
    meta = json.loads((base_model_dir / "meta.json").read_text())
    # Under pytest the producing entry is the CLI; as a DVC stage it is the stage script (stages/base.py).
    assert meta["code"] == producing_code() == {"entry": "arena/cli.py",
                                                "code_digest": code_digest(closure("arena/cli.py"))}
    pinned = {"entry": "stages/base.py", "code_digest": code_digest(closure("stages/base.py"))}
    (tmp_path / "weights.bin").write_bytes(b"w")
    written = write_meta(tmp_path, inputs={}, code=pinned)
    assert written["code"] == pinned == json.loads((tmp_path / "meta.json").read_text())["code"]
    # The code is recorded beside the artifact, never part of its content digest.
    assert written["digest"] == digest_dir(tmp_path)
    assert write_meta(tmp_path, inputs={})["digest"] == written["digest"]


@pytest.mark.parametrize("quant", ["q8", "q4"])
def test_quantised_pin_differs(tmp_path, base_model_dir, quant):
    meta = build_base(BaseConfig(source=str(base_model_dir), quant=quant), tmp_path / quant)
    base_pin = model_pin(base_model_dir)
    assert meta["pin"]["quant"] == quant
    assert meta["pin"]["model_hash"] != base_pin["model_hash"]
    import mlx_lm

    mlx_lm.load(str(tmp_path / quant))


def test_local_source_without_config_json(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="base.source = .* has no config.json"):
        build_base(BaseConfig(source=str(tmp_path / "empty")), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unknown_source_is_explained(tmp_path):
    with pytest.raises(ConfigError, match="expected 'embedded', 'standin', 'smollm2', 'gguf:PATH', an existing local "
                                          "model directory, or a hub id"):
        build_base(BaseConfig(source="./no/such/dir"), tmp_path / "out")
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    with pytest.raises(ConfigError, match="is a GGUF file: write it as 'gguf:"):
        build_base(BaseConfig(source=str(tmp_path / "model.gguf")), tmp_path / "out")


def test_unreachable_hub_id_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ConfigError, match="hub ids need network access"):
        build_base(BaseConfig(source="no-such-org/no-such-model"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    import arena.train.basemodel as basemodel

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(basemodel, "write_meta", explode)
    with pytest.raises(RuntimeError):
        build_base(BaseConfig(**SMALL), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_pin_of_non_model_directory(tmp_path):
    with pytest.raises(PinError, match="has no config.json"):
        model_pin(tmp_path)


def test_every_poker_action_is_one_token_of_the_embedded_tokenizer(tmp_path):
    """Masked scoring sums an action's token log-probs: a 6-token [raise] beside 1-token [check] starts at ~1e-15
    probability in a random model, and a policy gradient can never raise it (measured on Leduc)."""
    from mlx_lm.utils import load_tokenizer

    build_base(BaseConfig(), tmp_path / "base")
    tokenizer = load_tokenizer(tmp_path / "base")
    for action in ("[check]", "[bet]", "[call]", "[fold]", "[raise]"):
        assert len(tokenizer.encode(action, add_special_tokens=False)) == 1, action
