"""Prefix-shared, head-only scoring equals full-row scoring: values, gradients, quantized models, batch composition."""

import json

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from arena.core.errors import ArenaError
from arena.players.batching import build_batch, pack_batches
from arena.players.head import check_head, output_head
from arena.players.memory import model_shape
from arena.players.scoring import action_loglik

VOCAB = 300


def reference_loglik(model, prompts, actions, pad_id=0):
    """Today's scoring, kept here only as the reference: one right-padded full row per (prompt, action)."""
    rows = [tuple(p) + tuple(a) for p, legal in zip(prompts, actions, strict=True) for a in legal]
    spans = [(len(p), len(a)) for p, legal in zip(prompts, actions, strict=True) for a in legal]
    tokens = np.full((len(rows), max(map(len, rows))), pad_id, dtype=np.int32)
    for i, row in enumerate(rows):
        tokens[i, : len(row)] = row
    logits = model(mx.array(tokens)).astype(mx.float32)
    logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    out = []
    for i, (lp, la) in enumerate(spans):
        pos = mx.arange(lp - 1, lp - 1 + la)
        out.append(logprobs[i, pos, mx.array(tokens[i, lp: lp + la])].sum())
    return mx.stack(out)


def tiny_model(model_type: str, seed: int, quantize: bool = False):
    from mlx_lm.utils import _get_classes

    config = {"model_type": model_type, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": VOCAB, "rms_norm_eps": 1e-6,
              "max_position_embeddings": 512, "rope_theta": 10000.0, "tie_word_embeddings": model_type == "qwen3",
              "head_dim": 16}
    model_class, args_class = _get_classes(config)
    mx.random.seed(seed)
    model = model_class(args_class.from_dict(config))
    mx.eval(model.parameters())
    if quantize:
        nn.quantize(model, group_size=32, bits=4)
    return model


def random_decisions(seed: int, n: int, multi: bool = True):
    """Random prompts and legal actions; some prompts repeat (as many games share one) and some actions share a
    prefix (as Liar's Dice bids do)."""
    rng = np.random.default_rng(seed)
    prompts, actions = [], []
    for _ in range(n):
        prompt = [int(t) for t in rng.integers(1, VOCAB, size=rng.integers(3, 20))]
        legal = [[int(t) for t in rng.integers(1, VOCAB, size=rng.integers(1, 5) if multi else 1)]
                 for _ in range(rng.integers(1, 5))]
        if multi and len(legal) > 1:
            legal.append(legal[0][:1] + [int(rng.integers(1, VOCAB))])
        prompts.append(prompt)
        actions.append(legal)
        if rng.random() < 0.3:
            prompts.append(prompt)
            actions.append(legal[::-1])
    return prompts, actions


MODELS = [("qwen2", False), ("qwen3", False), ("qwen2", True), ("qwen3", True)]


@pytest.mark.parametrize(("model_type", "quantize"), MODELS, ids=lambda v: str(v))
def test_prefix_shared_scores_equal_full_rows(model_type, quantize):
    model = tiny_model(model_type, seed=3, quantize=quantize)
    check_head(model)
    prompts, actions = random_decisions(7, 12)
    ours = action_loglik(model, build_batch(prompts, actions))
    reference = reference_loglik(model, prompts, actions)
    np.testing.assert_allclose(np.array(ours), np.array(reference), atol=1e-5, rtol=0)


def test_single_token_actions_read_only_the_prompts_last_state():
    model = tiny_model("qwen2", seed=1)
    prompts, actions = random_decisions(2, 10, multi=False)
    batch = build_batch(prompts, actions)
    assert not batch.trie.size and len(batch.head_src) == len(batch.prompts)
    np.testing.assert_allclose(np.array(action_loglik(model, batch)),
                               np.array(reference_loglik(model, prompts, actions)), atol=1e-5, rtol=0)


@pytest.mark.parametrize("model_type", ["qwen2", "qwen3"])
def test_gradients_equal_full_rows(model_type):
    model = tiny_model(model_type, seed=5)
    prompts, actions = random_decisions(11, 6)
    weights = mx.array(np.random.default_rng(0).normal(size=sum(map(len, actions))).astype(np.float32))
    batch = build_batch(prompts, actions)

    def ours(m):
        return (action_loglik(m, batch) * weights).sum()

    def reference(m):
        return (reference_loglik(m, prompts, actions) * weights).sum()

    from mlx.utils import tree_flatten

    got = dict(tree_flatten(nn.value_and_grad(model, ours)(model)[1]))
    want = dict(tree_flatten(nn.value_and_grad(model, reference)(model)[1]))
    for name, grad in want.items():
        np.testing.assert_allclose(np.array(got[name]), np.array(grad), atol=1e-5, rtol=1e-4, err_msg=name)


def test_scores_do_not_depend_on_the_rest_of_the_batch():
    model = tiny_model("qwen3", seed=9)
    prompts, actions = random_decisions(4, 16)
    together = np.array(action_loglik(model, build_batch(prompts, actions)))
    offsets = np.cumsum([0] + [len(a) for a in actions])
    for d in (0, 5, len(prompts) - 1):
        alone = np.array(action_loglik(model, build_batch([prompts[d]], [actions[d]])))
        np.testing.assert_allclose(alone, together[offsets[d]: offsets[d + 1]], atol=1e-5, rtol=0)


def test_a_legal_lists_cached_shape_builds_the_pass_its_actions_build_one_by_one():
    from dataclasses import fields

    from arena.players.batching import _Builder

    prompts, actions = random_decisions(8, 30)
    prompts, actions = prompts + prompts[:5], actions + actions[:5]  # lists met again, on prompts met again
    cached, stepwise = _Builder(), _Builder()
    for prompt, legal in zip(prompts, actions, strict=True):
        key = (tuple(prompt), tuple(map(tuple, legal)))
        cost = cached.cost_with(*key, 3)
        cached.add(*key)
        stepwise.add(*key, fresh=False)
        rows, width = len(stepwise.prompts), stepwise.width
        assert cost == rows * stepwise.lp + (rows * (stepwise.lp + width) if width else 0) + len(stepwise.head_src) * 3
    a, b = cached.build(0), stepwise.build(0)
    for field in fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        assert (x == y).all() if isinstance(x, np.ndarray) else x == y, field.name


def test_packing_respects_the_budget_and_covers_every_decision():
    prompts, actions = random_decisions(6, 40)
    shape_weight = 3
    passes = list(pack_batches(prompts, actions, 400, shape_weight, "player.max_batch_tokens"))
    assert [p[0] for p in passes] == [0] + [p[1] for p in passes[:-1]] and passes[-1][1] == len(prompts)
    assert len(passes) > 1
    for start, end, batch in passes:
        p = len({tuple(prompt) for prompt in prompts[start:end]})
        lp = max(map(len, prompts[start:end]))
        trie = p * (lp + batch.trie.shape[1]) if batch.trie.size else 0
        assert p == batch.prompt_rows and p * lp + trie + len(batch.head_src) * shape_weight <= 400


def test_a_decision_over_the_budget_is_a_clear_error():
    with pytest.raises(ArenaError, match=r"raise player.max_batch_tokens to at least \d+"):
        list(pack_batches([[1] * 50], [[[2, 3], [4]]], 40, 1, "player.max_batch_tokens"))


def test_a_model_without_a_findable_head_fails_clearly():
    class Headless(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(2, 2)

    with pytest.raises(ArenaError, match="cannot find the output head"):
        output_head(Headless())


def test_model_shape_reads_the_config():
    shape = model_shape(tiny_model("qwen3", seed=0))
    assert (shape.layers, shape.kv_heads, shape.head_dim, shape.vocab, shape.dtype_bytes) == (2, 2, 16, VOCAB, 4)
    assert shape.head_weight >= 1
    json.dumps(shape.__dict__)


@pytest.mark.parametrize(("model_type", "quantize"), [("qwen3", False), ("qwen2", True)], ids=str)
def test_prompts_sharing_a_long_prefix_share_its_keys_and_values(model_type, quantize):
    model = tiny_model(model_type, seed=4, quantize=quantize)
    rules = [int(t) for t in np.random.default_rng(1).integers(1, VOCAB, size=40)]
    prompts, actions = random_decisions(8, 10)
    prompts = [rules + p if i % 3 else p for i, p in enumerate(prompts)] + [rules[:30]]
    actions = actions + [[[5, 6], [7]]]
    batch = build_batch(prompts, actions)
    assert batch.tails.size and batch.prompts.shape[0] < len(set(map(tuple, prompts)))
    np.testing.assert_allclose(np.array(action_loglik(model, batch)),
                               np.array(reference_loglik(model, prompts, actions)), atol=1e-5, rtol=0)


def test_gradients_equal_full_rows_with_shared_stems():
    model = tiny_model("qwen3", seed=6)
    rules = [int(t) for t in np.random.default_rng(2).integers(1, VOCAB, size=24)]
    prompts, actions = random_decisions(12, 6)
    prompts = [rules + p for p in prompts]
    weights = mx.array(np.random.default_rng(0).normal(size=sum(map(len, actions))).astype(np.float32))
    batch = build_batch(prompts, actions)
    assert batch.tails.size

    from mlx.utils import tree_flatten

    got = dict(tree_flatten(nn.value_and_grad(model, lambda m: (action_loglik(m, batch) * weights).sum())(model)[1]))
    want = dict(tree_flatten(nn.value_and_grad(
        model, lambda m: (reference_loglik(m, prompts, actions) * weights).sum())(model)[1]))
    for name, grad in want.items():
        np.testing.assert_allclose(np.array(got[name]), np.array(grad), atol=1e-5, rtol=1e-4, err_msg=name)


def _kuhn_observations(n: int):
    from arena.games.registry import make_game

    observations = []
    for seed in range(n):
        game = make_game("kuhn", seed)
        if seed % 2:
            game.step(game.observation().legal_actions[0])
        observations.append(game.observation())
    return observations


def test_grpo_micro_batches_give_the_same_step_as_one_batch(base_model_dir):
    from mlx.utils import tree_flatten

    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig
    from arena.train.grpo.update import GRPOUpdate

    observations = _kuhn_observations(24)
    rng = np.random.default_rng(0)
    chosen = rng.integers(0, 2, size=len(observations))
    old, ref, adv = (rng.normal(size=len(observations)) - 0.7 for _ in range(3))
    class Capture:  # stands in for Adam: keeps the accumulated gradients
        state: dict = {}

        def __init__(self):
            self._lr = mx.array(0.0)

        @property
        def learning_rate(self):
            return self._lr

        @learning_rate.setter
        def learning_rate(self, value):
            self._lr = mx.array(value)

        def update(self, model, grads):
            self.grads = dict(tree_flatten(grads))

    results, grads = [], []
    for budget in (1_000_000, 40):
        player = MLXPlayer(base_model_dir)
        update = GRPOUpdate(player, TrainConfig(max_batch_tokens=budget), temperature=1.0)
        update.optimizer = Capture()
        passes = list(player.scoring_passes(observations, budget))
        assert (len(passes) == 1) == (budget > 1000)
        results.append(update(observations, chosen, old, ref, adv, learning_rate=1e-3))
        grads.append(update.optimizer.grads)
    assert results[0]["loss"] == pytest.approx(results[1]["loss"], abs=1e-6)
    assert results[0]["kl"] == pytest.approx(results[1]["kl"], abs=1e-6)
    for name, value in grads[0].items():
        np.testing.assert_allclose(np.array(grads[1][name]), np.array(value), atol=1e-6, rtol=1e-5, err_msg=name)


def test_sampled_moves_do_not_depend_on_the_batch(base_model_dir):
    from dataclasses import replace

    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(base_model_dir)
    observations = [replace(o, sample_key=1000 + i) for i, o in enumerate(_kuhn_observations(30))]
    together = [d.action for d in player.act_batch(observations)]
    apart = [player.act(o).action for o in observations[::-1]][::-1]
    assert together == apart


def test_width_groups_cut_sorted_widths_where_padding_costs_more_than_a_call():
    from arena.players.levels import width_groups

    assert [list(g) for g in width_groups([5, 5, 4], call_tokens=8)] == [[0, 1, 2]]  # one group: rows as given
    assert [list(g) for g in width_groups([40, 2, 41, 3], call_tokens=8)] == [[1, 3], [0, 2]]
    assert [list(g) for g in width_groups([3, 1, 2], call_tokens=0)] == [[1], [2], [0]]
    widths = np.random.default_rng(0).integers(0, 60, size=40)
    groups = width_groups(list(widths), call_tokens=16)
    assert sorted(int(r) for g in groups for r in g) == list(range(40))


@pytest.mark.parametrize(("model_type", "quantize"), MODELS, ids=lambda v: str(v))
def test_tries_run_in_groups_score_as_full_rows(model_type, quantize, monkeypatch):
    import arena.players.levels as levels

    monkeypatch.setattr(levels, "GROUP_TOKENS", 0)  # every distinct trie width its own model call
    model = tiny_model(model_type, seed=5, quantize=quantize)
    prompts, actions = random_decisions(11, 16)
    actions[0] = [[3]]  # a prompt whose actions are one token: a row with no trie at all
    batch = build_batch(prompts, actions)
    assert len(levels.width_groups(list(batch.trie_len), 0)) > 2
    np.testing.assert_allclose(np.array(action_loglik(model, batch)),
                               np.array(reference_loglik(model, prompts, actions)), atol=1e-5, rtol=0)


def _stem_decisions(seed: int):
    """Prompts sharing a 40-token rules stem, their own tails from 1 to 60 tokens long."""
    rng = np.random.default_rng(seed)
    rules = [int(t) for t in rng.integers(1, VOCAB, size=40)]
    prompts, actions = random_decisions(seed, 10)
    prompts = [rules + p + [int(t) for t in rng.integers(1, VOCAB, size=40 * (i % 3 == 0))]
               for i, p in enumerate(prompts)] + [rules + [9]]
    return prompts, actions + [[[5, 6], [7]]]


@pytest.mark.parametrize(("model_type", "quantize"), MODELS, ids=lambda v: str(v))
def test_tails_run_in_groups_score_as_full_rows(model_type, quantize, monkeypatch):
    import arena.players.levels as levels

    monkeypatch.setattr(levels, "GROUP_TOKENS", 0)  # every distinct tail length its own model call
    model = tiny_model(model_type, seed=7, quantize=quantize)
    prompts, actions = _stem_decisions(3)
    batch = build_batch(prompts, actions)
    assert batch.tails.size and len(levels.width_groups(list(batch.tail_len), 0)) > 2
    np.testing.assert_allclose(np.array(action_loglik(model, batch, grouped=True)),
                               np.array(reference_loglik(model, prompts, actions)), atol=1e-5, rtol=0)



def _float16_scaled_head(bits: int) -> nn.Module:
    """A tied embedding quantised the way MLX reads a GGUF: packed weights, float16 scales and biases."""
    mx.random.seed(3)
    embed = nn.Embedding(512, 576)
    embed.weight = (0.05 * mx.random.normal((512, 576))).astype(mx.float16)
    embed = nn.QuantizedEmbedding.from_embedding(embed, group_size=32, bits=bits)
    assert embed.scales.dtype == mx.float16 and embed.biases.dtype == mx.float16
    return embed


@pytest.mark.parametrize("bits", [4, 8])
def test_a_float16_scaled_quantised_heads_float_copy_applies_the_heads_own_arithmetic(bits):
    # SmolLM2's GGUF head (8-bit, float16 scales) was dequantised into float16: logits off by 0.042, and the 4-bit
    # model was refused. The quantised matmul computes in float32, so the float copy must be float32 too.
    from arena.players.head import float_weight

    head = _float16_scaled_head(bits)
    x = 4.0 * mx.random.normal((8, 576), key=mx.random.key(1))
    own = head.as_linear(x)
    ours = x @ float_weight(head).T
    gap = mx.abs(own - ours).max().item() / mx.abs(own).max().item()
    assert gap < 1e-5, gap
    assert float_weight(head).dtype == mx.float32


def test_a_float_copy_is_dropped_with_its_module():
    import gc

    from arena.players.head import _FLOAT_HEADS, float_weight

    head = _float16_scaled_head(4)
    float_weight(head)
    key = id(head)
    assert key in _FLOAT_HEADS
    del head
    gc.collect()
    assert key not in _FLOAT_HEADS
