"""Host-side exps for CPU inference: each kernel equals MLX's, scoring through them equals full rows, and the swap is
scoped."""

import os
import signal
import time

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx_lm.models import qwen2, qwen3
from mlx_lm.models.activations import swiglu
from test_scoring import MODELS, VOCAB, random_decisions, reference_loglik, tiny_model

import arena.players.hostmath as hostmath
from arena.players.batching import build_batch
from arena.players.scoring import inference_loglik


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


def test_head_log_probs_equal_log_softmax_across_vocabulary_blocks(monkeypatch):
    monkeypatch.setattr(hostmath, "BLOCK_ELEMENTS", 6 * 64)  # 6 rows: 64 columns a block, the last one short
    rng = np.random.default_rng(4)
    states, weight = (rng.normal(0, 2, size=shape).astype(np.float32) for shape in ((6, 16), (300, 16)))
    bias = rng.normal(0, 3, size=300).astype(np.float32)
    rows, tokens = np.array([0, 5, 5, 2, 3, 3]), np.array([299, 0, 64, 63, 130, 130])  # block edges, repeats
    for b in (None, bias):
        logits = states @ weight.T + (0 if b is None else b)
        want = (logits - np.array(mx.logsumexp(mx.array(logits), axis=1, keepdims=True)))[rows, tokens]
        got = hostmath.head_log_probs(mx.array(states), mx.array(weight), None if b is None else mx.array(b), rows,
                                      tokens)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_threads_score_at_once_without_sharing_buffers():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(7)
    cases = [tuple(mx.array(rng.normal(size=(2, 4, 6 + i, 8)).astype(np.float32)) for _ in range(3)) for i in range(4)]
    want = [np.array(mx.fast.scaled_dot_product_attention(q, k, v, scale=0.3, mask=None)) for q, k, v in cases]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            got = list(pool.map(lambda c: np.array(hostmath.host_attention_scores(*c, 0.3, None)), cases))
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=0, atol=1e-5)


def test_sgemm_equals_matmul_and_names_bad_operands():
    from arena.core.blas import sgemm

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(7, 5)).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(sgemm(a, b, np.empty((7, 3), np.float32)), a @ b, rtol=1e-6, atol=1e-6)
    bt = np.ascontiguousarray(b.T)
    np.testing.assert_allclose(sgemm(a, bt, np.empty((7, 3), np.float32), trans_b=True), a @ b, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="shapes do not match"):
        sgemm(a, bt, np.empty((7, 3), np.float32))
    with pytest.raises(ValueError, match="C-contiguous float32"):
        sgemm(a.astype(np.float64), b, np.empty((7, 3), np.float32))


@pytest.mark.parametrize("mask_kind", ["none", "causal", "array", "array-rows"])
def test_host_attention_equals_mlx(mask_kind):
    rng = np.random.default_rng(1)
    q = mx.array(rng.normal(size=(3, 4, 5, 8)).astype(np.float32))  # 4 query heads over 2 key/value heads
    k, v = (mx.array(rng.normal(size=(3, 2, 9, 8)).astype(np.float32)) for _ in range(2))
    visible = rng.random((3, 1, 5, 9)) < 0.6
    visible[..., -1] = True  # every query sees at least one key, as every scoring mask guarantees
    mask = {"none": None, "causal": "causal", "array": mx.array(visible[:1]), "array-rows": mx.array(visible)}
    for rows in (3, 2):  # the second, smaller call reuses the first's buffers
        m = mask[mask_kind] if mask_kind != "array-rows" else mx.array(visible[:rows])
        got = hostmath.host_attention_scores(q[:rows], k[:rows], v[:rows], 0.35, m)
        want = mx.fast.scaled_dot_product_attention(q[:rows], k[:rows], v[:rows], scale=0.35, mask=m)
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


def _every_host_kernel(monkeypatch) -> list[bytes]:
    """The bytes of each host kernel's output on inputs whose work splits unevenly over any thread count."""
    monkeypatch.setattr(hostmath, "BLOCK_ELEMENTS", 7 * 61)  # 7 rows: 61 columns a block, 5 blocks, the last short
    monkeypatch.setattr(hostmath, "BLOCK_ROWS", 4)  # 15 rows of a projection or a SwiGLU: 4 pieces, the last short
    rng = np.random.default_rng(11)
    states, weight = (mx.array(rng.normal(0, 2, size=shape).astype(np.float32)) for shape in ((7, 16), (300, 16)))
    rows, tokens = np.array([0, 6, 6, 3, 2]), np.array([299, 0, 61, 60, 122])
    q = mx.array(rng.normal(size=(5, 4, 3, 8)).astype(np.float32))
    k, v = (mx.array(rng.normal(size=(5, 2, 7, 8)).astype(np.float32)) for _ in range(2))
    visible = rng.random((5, 1, 3, 7)) < 0.6
    visible[..., -1] = True
    gate, x = (mx.array(rng.normal(0, 3, size=(5, 3, 24)).astype(np.float32)) for _ in range(2))
    linear = nn.Linear(24, 10, bias=True)
    linear.update({"weight": mx.array(rng.normal(size=(10, 24)).astype(np.float32)),
                   "bias": mx.array(rng.normal(size=10).astype(np.float32))})
    model = tiny_model("qwen3", seed=3)
    monkeypatch.setattr(hostmath, "HOST_MATH_VOCAB", VOCAB - 1)
    prompts, actions = random_decisions(8, 9)
    outputs = [hostmath.head_log_probs(states, weight, None, rows, tokens),
               hostmath.log_normalisers(np.asarray(states @ weight.T)),
               hostmath.host_attention_scores(q, k, v, 0.3, mx.array(visible)),
               hostmath.host_attention_scores(q, k, v, 0.3, "causal"),
               hostmath.host_swiglu(gate, x), hostmath.HostLinear(linear)(gate),
               inference_loglik(model, build_batch(prompts, actions))]
    return [np.asarray(out).tobytes() for out in outputs]


def test_host_kernels_give_the_same_bits_on_any_thread_count(monkeypatch):
    monkeypatch.setenv("ARENA_HOST_THREADS", "1")
    want = _every_host_kernel(monkeypatch)
    for threads in ("2", "3", "8"):
        monkeypatch.setenv("ARENA_HOST_THREADS", threads)
        assert _every_host_kernel(monkeypatch) == want, f"{threads} threads"


def test_host_threads_reads_its_variables_and_names_a_bad_value(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("ARENA_HOST_THREADS", "3")
    assert hostmath.host_threads() == 3
    monkeypatch.delenv("ARENA_HOST_THREADS")
    assert hostmath.host_threads() == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert 1 <= hostmath.host_threads() <= hostmath.MAX_HOST_THREADS
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("ARENA_HOST_THREADS", bad)
        with pytest.raises(ValueError, match=f"ARENA_HOST_THREADS must be a whole number >= 1, got '{bad}'"):
            hostmath.host_threads()


@pytest.mark.parametrize("bias", [False, True])
def test_host_linear_equals_mlx_and_the_swap_is_scoped(bias, monkeypatch):
    monkeypatch.setenv("ARENA_HOST_THREADS", "2")
    linear = nn.Linear(24, 10, bias=bias)
    x = mx.array(np.random.default_rng(3).normal(size=(3, 5, 24)).astype(np.float32))
    np.testing.assert_allclose(np.array(hostmath.HostLinear(linear)(x)), np.array(linear(x)), rtol=0, atol=1e-5)
    model = tiny_model("qwen3", seed=0)
    before = [model.layers[0].self_attn.q_proj, model.layers[1].mlp.down_proj]
    with hostmath.host_kernels(model):
        assert isinstance(model.layers[0].self_attn.q_proj, hostmath.HostLinear)
        assert isinstance(model.layers[1].mlp.down_proj, hostmath.HostLinear)
    assert [model.layers[0].self_attn.q_proj, model.layers[1].mlp.down_proj] == before
    quantized = tiny_model("qwen3", seed=0, quantize=True)
    with hostmath.host_kernels(quantized):  # a quantized projection runs on its float32 copy
        assert isinstance(quantized.layers[0].self_attn.q_proj, hostmath.HostLinear)
    monkeypatch.setattr(hostmath, "HOST_DEQUANT_BYTES", 0)
    with hostmath.host_kernels(quantized):  # unless the copies would not fit: then it stays MLX's
        assert isinstance(quantized.layers[0].self_attn.q_proj, nn.QuantizedLinear)


@pytest.mark.parametrize("bits", [4, 8])
def test_a_float16_scaled_quantised_linear_on_the_host_equals_mlx(bits):
    # As MLX reads a GGUF (SmolLM2's): packed weights, float16 scales and biases, group size 32.
    linear = nn.Linear(576, 64, bias=False)
    linear.weight = (0.05 * mx.random.normal((64, 576), key=mx.random.key(2))).astype(mx.float16)
    quantized = nn.QuantizedLinear.from_linear(linear, group_size=32, bits=bits)
    assert quantized.scales.dtype == mx.float16
    x = mx.array(np.random.default_rng(3).normal(size=(3, 5, 576)).astype(np.float32))
    own = np.array(quantized(x))
    np.testing.assert_allclose(np.array(hostmath.HostLinear(quantized)(x)), own, rtol=0,
                               atol=1e-5 * np.abs(own).max())


def test_a_forked_child_splits_work_over_threads_of_its_own(monkeypatch):
    monkeypatch.setenv("ARENA_HOST_THREADS", "2")
    assert hostmath._each(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]  # the parent's pool exists now
    child = os.fork()
    if child == 0:  # without the at-fork reset the child would wait forever on its parent's (absent) pool threads
        try:
            os._exit(0 if hostmath._each(lambda x: x + 1, [1, 2, 3]) == [2, 3, 4] else 1)
        finally:
            os._exit(2)  # an error in the child never returns into the parent's pytest
    for _ in range(400):
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    pytest.fail("the forked child's host threads never ran its work")


def test_a_failing_piece_raises_after_every_other_piece_has_ended(monkeypatch):
    monkeypatch.setenv("ARENA_HOST_THREADS", "2")
    ended = []

    def work(part: int) -> int:
        if part == 0:
            raise RuntimeError("piece 0 failed")
        time.sleep(0.2)
        ended.append(part)
        return part

    with pytest.raises(RuntimeError, match="piece 0 failed"):
        hostmath._each(work, [0, 1])
    assert ended == [1]
