"""The realistic stand-in (qwen3, Qwen's vocabulary size, a thinking template): deterministic builds, and whole
GRPO/ReST rounds with QLoRA on its q4 version on the full view, through the real round functions (slow)."""

import json

import pytest
from conftest import STANDIN_SMALL
from repo_copy import ROOT, small_params

from arena.core.config import ConfigError, load_params, load_section
from arena.core.hashing import digest_dir
from arena.core.pins import model_quant
from arena.pipeline.params import validate_all
from arena.pipeline.presets import apply_preset, checked_flags, load_preset
from arena.pipeline.rounds import RoundPaths, round_n, round_zero
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig

PRESET = ROOT / "presets" / "standin.yaml"
# The rounds below run at Qwen's real vocabulary: the scoring engine applies the output head only at the scored
# positions (the preset's own shapes; at a 4,096-token vocabulary the three rounds took 488 s on 2 loaded cores).
ROUND_VOCAB = 151936


def _files(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_another_seed_other_bytes(tmp_path):
    build_base(BaseConfig(**STANDIN_SMALL), tmp_path / "a")
    build_base(BaseConfig(**STANDIN_SMALL), tmp_path / "b")
    build_base(BaseConfig(**STANDIN_SMALL, seed=1), tmp_path / "c")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert digest_dir(tmp_path / "a") != digest_dir(tmp_path / "c")


def test_the_preset_validates_and_prints_dvc_flags():
    params = load_params(ROOT / "params.yaml")
    overrides = load_preset(PRESET)
    validate_all(apply_preset(params, overrides))
    flags = checked_flags(PRESET, params)
    assert "-S base.source=standin" in flags and "-S base.vocab_size=151936" in flags
    assert "-S train.method=lora" in flags and "-S selfplay.view=full" in flags
    qwen = checked_flags(ROOT / "presets" / "qwen3-4b-4bit.yaml", params)
    assert "-S base.source=" in qwen and "/models/Qwen3-4B-4bit " in qwen
    assert "-S selfplay.enable_thinking=false" in qwen


def test_a_bad_preset_names_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("base.quant: q3\n")
    with pytest.raises(ConfigError, match=r"preset .* is invalid: base.quant = 'q3'"):
        checked_flags(bad, load_params(ROOT / "params.yaml"))
    bad.write_text("quant: q4\n")
    with pytest.raises(ConfigError, match="must be dotted"):
        load_preset(bad)


@pytest.mark.slow
def test_the_preset_stand_in_is_qwen3_sized_and_byte_identical(tmp_path):
    import mlx_lm
    from mlx_lm.utils import get_total_parameters

    preset = load_preset(PRESET)
    base = load_section(BaseConfig, "base", apply_preset({"base": {}}, {k: v for k, v in preset.items()
                                                                           if k.startswith("base.")}))
    build_base(base, tmp_path / "a")
    build_base(base, tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["model_type"] == "qwen3" and config["vocab_size"] == 151936 and model_quant(tmp_path / "a") == "q4"
    model, tokenizer = mlx_lm.load(str(tmp_path / "a"))
    assert 41e6 < get_total_parameters(model) < 43e6
    assert tokenizer.has_thinking and tokenizer.eos_token_ids == {tokenizer.convert_tokens_to_ids("<|im_end|>")}


def _round_params(game, variant, loop, objective="grpo"):
    full = {"view": "full"}
    return small_params(
        base={"source": "standin", "quant": "q4", "hidden_size": 256, "num_layers": 4, "num_heads": 4,
              "num_kv_heads": 2, "intermediate_size": 768, "vocab_size": ROUND_VOCAB, "max_position_embeddings": 4096},
        selfplay={"game": game, "variant": variant, "deals_per_round": 2, **full},
        train={"method": "lora", "steps": 2, "batch_size": 4, "lora_layers": 4, "lora_rank": 8,
               "objective": objective, "reference": "previous" if objective == "neurd" else "base"},
        rest={**full, "seeds_per_round": 2, "iters": 2, "batch_size": 2, "lora_layers": 4, "lora_rank": 8},
        curriculum={"variants": [variant], "probe_games": 2},
        roundeval={"games": 2, **full},
        eval={"games": [{"id": game, "variant": variant}], "seeds": [9_000_000, 9_000_010]},
        loop=loop,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("game", "variant", "loop", "objective"),
                         [("kuhn", {}, "grpo", "grpo"), ("liarsdice", {"dice": 1}, "grpo", "grpo"),
                          ("kuhn", {}, "rest", "grpo"), ("kuhn", {}, "grpo", "neurd")])
def test_a_qlora_round_on_the_q4_stand_in_full_view(tmp_path, game, variant, loop, objective):
    params = _round_params(game, variant, loop, objective)
    validate_all(params)
    root = tmp_path / "artifacts"
    build_base(load_section(BaseConfig, "base", params), root / "models" / "base")
    round_zero(RoundPaths(root, 0, 0), params)
    round_n(RoundPaths(root, 1, 0), params)
    snapshot = root / "snapshots" / "r1"
    if (root / "adapters" / "r1" / "no_update.json").exists():
        pytest.skip("the ReST round found no win to learn from at these sizes")
    assert model_quant(snapshot) == "q4+lora"
    assert (snapshot / "adapters.safetensors").exists()
    evaluation = json.loads((root / "evals" / "r1.json").read_text())
    assert evaluation["round"] == 1
    records = [json.loads(line) for line in (root / "rollouts" / "r1" / "games.jsonl").read_text().splitlines()]
    assert records and all(not r["errored"] for r in records)
    assert all(d["text"].startswith("\n[GAME]") for r in records for d in r["decisions"])
    if objective == "neurd":  # the branch games were played and their targets fitted through the QLoRA adapter
        branches = [json.loads(line) for line in (root / "rollouts" / "r1" / "branches.jsonl").read_text().splitlines()]
        assert branches and all(branch["prefix"] and not branch["errored"] for branch in branches)
        log = [json.loads(line) for line in (root / "adapters" / "r1" / "train_log.jsonl").read_text().splitlines()]
        assert log and all("loss" in row for row in log)
