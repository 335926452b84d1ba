"""QLoRA on the CPU: the frozen 4-bit projections become float32 copies (float BLAS), the same weights, the adapter
still the only trainable part and the only thing saved."""

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from arena.players import floatcopy
from arena.players.floatcopy import dequantised, float_projections
from arena.players.fused import layer_parts
from arena.players.mlx import MLXPlayer, load_model
from arena.train.config import RestConfig
from arena.train.lora import attach_lora


def _projections(model):
    out = []
    for part in layer_parts(model):
        for name in floatcopy.LINEAR_NAMES:
            child = part.get(name)
            if child is not None:
                out.append(child["linear"] if "lora_a" in child else child)
    return out


def test_attach_lora_trains_over_float32_copies_of_a_q4_base(standin_q4_dir):
    player = MLXPlayer(standin_q4_dir)
    assert any(type(m) is nn.QuantizedLinear for m in _projections(player.model))
    attach_lora(player.model, RestConfig(lora_layers=2, lora_rank=4))
    linears = _projections(player.model)
    # before the fix, every projection stayed an nn.QuantizedLinear (MLX's x86 quantised matmul, ~46x slower)
    assert linears and all(type(m) is nn.Linear and m.weight.dtype == mx.float32 for m in linears)
    names = [name for name, _ in tree_flatten(player.model.trainable_parameters())]
    assert names and all(name.endswith(("lora_a", "lora_b")) for name in names)


def test_a_float_copy_computes_what_the_quantised_layer_does():
    layer = nn.QuantizedLinear(64, 96, bias=True, group_size=32, bits=4)
    layer.scales = layer.scales.astype(mx.float16)
    layer.biases = layer.biases.astype(mx.float16)
    x = mx.random.normal((5, 64), key=mx.random.key(0))
    copy = x @ dequantised(layer).T + layer.bias
    assert mx.abs(copy - layer(x)).max().item() < 1e-4


def test_a_q4_model_without_an_adapter_loads_quantised(standin_q4_dir, tmp_path):
    model, _ = load_model(standin_q4_dir)  # no adapter: the host kernels make their own copies while scoring
    assert any(type(m) is nn.QuantizedLinear for m in _projections(model))


def test_copies_over_the_budget_stay_quantised(standin_q4_dir, monkeypatch):
    model, _ = load_model(standin_q4_dir)
    monkeypatch.setattr(floatcopy, "HOST_DEQUANT_BYTES", 0)
    assert float_projections(model) == 0
    assert any(type(m) is nn.QuantizedLinear for m in _projections(model))


def test_a_rounds_q4_reference_reads_its_policy_through_float_projections(standin_q4_dir):
    from arena.train.config import SelfPlayConfig
    from arena.train.selfplay.step import reference_player

    ref = reference_player(standin_q4_dir, SelfPlayConfig())
    # before the fix the reference kept nn.QuantizedLinear projections on the training path (MLX's x86 qmm)
    assert all(type(m) is nn.Linear and m.weight.dtype == mx.float32 for m in _projections(ref.model))
