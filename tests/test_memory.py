"""Memory estimates from config.json: parameter counts and weight bytes match real models, the stage log says it."""

import json

import pytest

from arena.train.memory import memory_note, memory_report

# mlx-community/Qwen3-4B-4bit's config.json shapes (the model itself is not needed: only its shapes count).
QWEN3_4B_4BIT = {"num_hidden_layers": 36, "hidden_size": 2560, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 128, "intermediate_size": 9728, "vocab_size": 151936, "tie_word_embeddings": True,
                 "torch_dtype": "bfloat16", "quantization": {"bits": 4, "group_size": 64}}


def test_qwen3_4b_counts_four_billion_parameters_in_2_26_gb():
    report = memory_report(QWEN3_4B_4BIT, tokens=1024, lora_layers=16, lora_rank=8)
    assert report["parameters_millions"] == pytest.approx(4022.5, abs=0.1)
    assert report["weights_gb"] == pytest.approx(2.263, abs=0.001)
    # One token of a pass: keys and values of 36 layers x 8 kv heads x 128 dims plus 4 hidden-size activations,
    # bfloat16; a scored head row is inside the budget at head_weight tokens.
    assert report["scoring_pass_gb"] == pytest.approx(1024 * (36 * 2 * 8 * 128 + 4 * 2560) * 2 / 1e9)
    assert report["turn_cache_gb"] == pytest.approx(1024 * 36 * 2 * 8 * 128 * 2 / 1e9)
    # Rank 8 on q, k, v, o, gate, up, down of 16 layers: 8 x 57,344 per layer; float32 x (weights, grads, 2 moments).
    assert report["training_state_gb"] == pytest.approx(16 * 8 * 57344 * 16 / 1e9)


def test_estimates_match_the_built_models(standin_dir, standin_q4_dir, base_model_dir):
    import mlx_lm
    from mlx_lm.utils import get_total_parameters

    for model_dir in (standin_dir, base_model_dir):
        model, _ = mlx_lm.load(str(model_dir))
        config = json.loads((model_dir / "config.json").read_text())
        assert memory_report(config, 1)["parameters_millions"] * 1e6 == pytest.approx(get_total_parameters(model),
                                                                                    rel=1e-3)
    for model_dir in (standin_dir, standin_q4_dir):
        size = (model_dir / "model.safetensors").stat().st_size
        config = json.loads((model_dir / "config.json").read_text())
        # The safetensors JSON header (a few KB of tensor names) is the rest.
        assert memory_report(config, 1)["weights_gb"] * 1e9 == pytest.approx(size, rel=0.02, abs=8000)
    assert "q4" in memory_note(standin_q4_dir, 4096, 4, 8) and "LoRA training state" in memory_note(
        standin_q4_dir, 4096, 4, 8)
    assert "full training state" in memory_note(standin_dir)


def test_the_player_and_the_stage_log_use_one_formula(standin_q4_dir):
    """The loaded model's shape (what a player packs passes by) equals its config.json's (what the log prints)."""
    from arena.core.pins import read_model_config
    from arena.players.memory import ModelShape, model_shape
    from arena.players.mlx import load_model

    model, _ = load_model(standin_q4_dir)
    config = read_model_config(standin_q4_dir)
    loaded, written = model_shape(model), ModelShape.from_config(config)
    assert loaded.bits == written.bits == 4 and loaded.group_size == written.group_size
    for tokens in (1, 4096):
        assert loaded.pass_bytes(tokens) == written.pass_bytes(tokens)
        assert loaded.pass_bytes(tokens, training=True) == written.pass_bytes(tokens, training=True)
        assert memory_report(config, tokens)["scoring_pass_gb"] * 1e9 == pytest.approx(loaded.pass_bytes(tokens))
    assert loaded.head_weight == written.head_weight


def test_a_memory_bound_is_said_once_a_process_and_as_a_bound(capsys):
    from arena.players.memory import ModelShape, budget_note, say_once

    shape = ModelShape.from_config({"num_hidden_layers": 4, "hidden_size": 128, "num_attention_heads": 4,
                                    "num_key_value_heads": 2, "intermediate_size": 384, "vocab_size": 1024})
    note = budget_note(shape, 65536, "player.max_batch_tokens")
    assert note.startswith("memory bound: player.max_batch_tokens = 65536 tokens, so a scoring pass stays under ~")
    for _ in range(3):  # rollouts, pool and evaluation each build the model: one line
        say_once(f"test player 65536 {shape}", note)
    assert capsys.readouterr().err.count("memory bound:") == 1
