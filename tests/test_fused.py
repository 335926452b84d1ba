"""Compiled softmax, logsumexp and attention for inference: the same bits as MLX's library kernels, and scoring
through them the same bits as the training path."""

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx_lm.models import qwen2, qwen3
from test_scoring import MODELS, random_decisions, tiny_model

import arena.players.scoring as scoring
from arena.players import fused
from arena.players.batching import build_batch
from arena.players.kvcache import _PerTokenRope
from arena.players.scoring import action_loglik, inference_loglik, masked_log_softmax


def _hard_inputs(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Wide-ranging values, masked (-inf) entries and ties, as attention scores and logits have them."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * rng.choice([0.1, 3.0, 40.0], size=shape[:-1] + (1,))).astype(np.float32)
    x[..., 2::3] = -np.inf
    x[..., 1 % shape[-1]] = x[..., 4 % shape[-1]]
    return x


@pytest.mark.parametrize("shape", [(7,), (5, 9), (300, 1024), (3, 4, 11, 37), (2, 2, 2, 13, 45)])
def test_softmax_and_logsumexp_are_mlx_bit_for_bit(shape):
    x = mx.array(_hard_inputs(shape, seed=len(shape)))
    assert np.array_equal(np.array(fused.softmax(x)), np.array(mx.softmax(x, axis=-1, precise=True)))
    for keepdims in (False, True):
        got = fused.logsumexp(x, axis=-1, keepdims=keepdims)
        assert np.array_equal(np.array(got), np.array(mx.logsumexp(x, axis=-1, keepdims=keepdims)))


def test_logsumexp_of_an_all_masked_row_is_minus_infinity_as_in_mlx():
    x = mx.array(np.array([[-np.inf, -np.inf], [0.5, -np.inf]], dtype=np.float32))
    assert np.array_equal(np.array(fused.logsumexp(x, axis=1)), np.array(mx.logsumexp(x, axis=1)))


def test_a_width_one_call_does_not_fix_the_broadcast_of_later_calls():
    # A shapeless compile would reuse the graph traced for [4, 1] (no broadcast of the maximum) for [4, 6].
    for width in (1, 6, 1, 3):
        x = mx.array(_hard_inputs((4, width), seed=width))
        assert np.array_equal(np.array(fused.logsumexp(x, axis=1)), np.array(mx.logsumexp(x, axis=1)))
        assert np.array_equal(np.array(fused.softmax(x)), np.array(mx.softmax(x, axis=-1, precise=True)))


def test_logsumexp_reduces_the_last_axis_only():
    with pytest.raises(ValueError, match="last axis only, not axis 0 of a 2-d array"):
        fused.logsumexp(mx.zeros((3, 4)), axis=0)


@pytest.mark.parametrize("heads", [(4, 2), (2, 2)], ids=["grouped", "one-to-one"])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "bool", "bool-rows", "additive"])
def test_attention_is_mlx_bit_for_bit(heads, mask_kind):
    rng = np.random.default_rng(3)
    q = mx.array(rng.normal(size=(3, heads[0], 5, 8)).astype(np.float32))
    k, v = (mx.array(rng.normal(size=(3, heads[1], 9, 8)).astype(np.float32)) for _ in range(2))
    visible = rng.random((3, 1, 5, 9)) < 0.6
    visible[..., -1] = True  # every query sees some key, as every scoring mask guarantees
    mask = {"none": None, "causal": "causal", "bool": mx.array(visible[:1]), "bool-rows": mx.array(visible),
            "additive": mx.array(np.where(visible, 0.0, -1e9).astype(np.float32))}[mask_kind]
    got = fused.attention(q, k, v, 0.35, mask)
    want = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35, mask=mask)
    assert np.array_equal(np.array(got), np.array(want))


@pytest.mark.parametrize(("dims", "width", "base", "scale"),
                         [(32, 32, 1e4, 1.0), (64, 64, 1e6, 0.25), (16, 32, 1e4, 1.0)])
def test_rope_is_mlx_bit_for_bit_at_every_kind_of_offset(dims, width, base, scale):
    rng = np.random.default_rng(dims + width)
    rope = nn.RoPE(dims, traditional=False, base=base, scale=scale)
    x = mx.array((rng.standard_normal((6, 2, 9, width)) * 30).astype(np.float32))
    offsets = [0, 4321, mx.array(rng.integers(0, 40000, size=6).astype(np.int32)),
               mx.array(rng.integers(0, 40000, size=(6, 9)).astype(np.int32))]  # a trie level: one per token
    for offset in offsets:
        per_token = isinstance(offset, mx.array) and offset.ndim == 2
        want = (_PerTokenRope(rope) if per_token else rope)(x, offset=offset)
        got = _PerTokenRope(fused.FusedRope(rope))(x, offset=offset)
        assert np.array_equal(np.array(got), np.array(want))


@pytest.mark.parametrize(("model_type", "quantize"), MODELS, ids=lambda v: str(v))
def test_fused_scoring_is_the_training_paths_bits(model_type, quantize, monkeypatch):
    monkeypatch.setattr(scoring, "fused_math", lambda: True)
    model = tiny_model(model_type, seed=5, quantize=quantize)
    prompts, actions = random_decisions(11, 12)
    for ps in (prompts, [[5] * 20 + p for p in prompts]):  # a shared stem: its tails run as continuation levels
        batch = build_batch(ps, actions)
        ours = inference_loglik(model, batch)
        want = action_loglik(model, batch, grouped=True)
        assert np.array_equal(np.array(ours), np.array(want))
        offsets = np.cumsum([0] + [len(a) for a in actions]).tolist()
        assert np.array_equal(np.array(masked_log_softmax(ours, offsets, 0.7, fused.logsumexp)),
                              np.array(masked_log_softmax(ours, offsets, 0.7)))


def test_fused_math_needs_the_cpu_and_the_vector_jit(monkeypatch):
    monkeypatch.setattr(fused, "vector_jit", lambda: False)
    assert not fused.fused_math()
    monkeypatch.setattr(fused, "vector_jit", lambda: True)
    assert fused.fused_math() == (mx.default_device() == mx.cpu)


def test_the_swaps_are_undone_even_when_scoring_fails():
    originals = [(m, m.scaled_dot_product_attention) for m in (qwen2, qwen3)]
    model = tiny_model("qwen3", seed=0)
    ropes = [layer.self_attn.rope for layer in model.layers]
    with pytest.raises(RuntimeError), fused.fused_kernels(model):
        assert qwen3.scaled_dot_product_attention is not originals[1][1]
        assert all(isinstance(layer.self_attn.rope, fused.FusedRope) for layer in model.layers)
        raise RuntimeError("a failed pass")
    for module, attention in originals:
        assert module.scaled_dot_product_attention is attention
    assert [layer.self_attn.rope for layer in model.layers] == ropes


def test_a_rope_of_another_kind_is_left_as_it_is():
    model = tiny_model("qwen2", seed=0)
    model.layers[0].self_attn.rope = nn.RoPE(16, traditional=True)
    with fused.fused_kernels(model):
        assert type(model.layers[0].self_attn.rope) is nn.RoPE
        assert isinstance(model.layers[1].self_attn.rope, fused.FusedRope)
