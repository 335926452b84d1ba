"""Host-side exps for CPU inference: each kernel equals MLX's, scoring through them equals full rows, and the swap is
scoped."""

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.models import qwen2, qwen3
from mlx_lm.models.activations import swiglu
from test_scoring import MODELS, VOCAB, random_decisions, reference_loglik, tiny_model

import arena.players.hostmath as hostmath
from arena.players.scoring import build_batch, inference_loglik


def test_only_a_large_vocabulary_on_the_cpu_takes_the_host_path(monkeypatch):
    small = tiny_model("qwen3", seed=0)
    assert not hostmath.host_math(small)
    monkeypatch.setattr(hostmath, "HOST_MATH_VOCAB", VOCAB - 1)
    assert hostmath.host_math(small)


def test_log_normalisers_equal_logsumexp_across_blocks(monkeypatch):
    monkeypatch.setattr(hostmath, "BLOCK_ELEMENTS", 3 * 257)  # 3 rows a block: the last block is short
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 8, size=(10, 257)).astype(np.float32)
    logits[2, 5:] = -1e4  # terms far below the row's top, where the exp is clamped
    got = hostmath.log_normalisers(mx.array(logits))
    want = np.array(mx.logsumexp(mx.array(logits), axis=1))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mask_kind", ["none", "causal", "array", "array-rows"])
def test_host_attention_equals_mlx(mask_kind):
    rng = np.random.default_rng(1)
    q = mx.array(rng.normal(size=(3, 4, 5, 8)).astype(np.float32))  # 4 query heads over 2 key/value heads
    k, v = (mx.array(rng.normal(size=(3, 2, 9, 8)).astype(np.float32)) for _ in range(2))
    visible = rng.random((3, 1, 5, 9)) < 0.6
    visible[..., -1] = True  # every query sees at least one key, as every scoring mask guarantees
    mask = {"none": None, "causal": "causal", "array": mx.array(visible[:1]), "array-rows": mx.array(visible)}
    got = hostmath.host_attention_scores(q, k, v, 0.35, mask[mask_kind])
    want = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35, mask=mask[mask_kind])
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-5)


def test_host_swiglu_equals_mlx_at_extremes():
    gate = np.linspace(-200, 60, 4 * 64, dtype=np.float32).reshape(4, 64)
    x = np.random.default_rng(2).normal(size=(4, 64)).astype(np.float32)
    want = np.array(swiglu(mx.array(gate), mx.array(x)))
    got = np.array(hostmath.host_swiglu(mx.array(gate), mx.array(x)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("model_type", "quantize"), MODELS, ids=lambda v: str(v))
def test_host_scoring_equals_full_rows(model_type, quantize, monkeypatch):
    monkeypatch.setattr(hostmath, "HOST_MATH_VOCAB", VOCAB - 1)
    model = tiny_model(model_type, seed=3, quantize=quantize)
    prompts, actions = random_decisions(7, 12)
    shared = [[5] * 20 + p for p in prompts]  # a long shared stem: its tails run as a continuation level
    for ps in (prompts, shared):
        ours = inference_loglik(model, build_batch(ps, actions))
        np.testing.assert_allclose(np.array(ours), np.array(reference_loglik(model, ps, actions)), atol=1e-5, rtol=0)


def test_the_swap_is_undone_even_when_scoring_fails(monkeypatch):
    originals = [(m, m.scaled_dot_product_attention, m.swiglu) for m in (qwen2, qwen3)]
    model = tiny_model("qwen3", seed=0)
    with pytest.raises(RuntimeError), hostmath.host_kernels(model):
        assert qwen3.scaled_dot_product_attention is not originals[1][1]
        assert qwen3.swiglu is hostmath.host_swiglu
        raise RuntimeError("a failed pass")
    for module, attention, activation in originals:
        assert (module.scaled_dot_product_attention, module.swiglu) == (attention, activation)
