"""Scoring by choice: each token renormalised over the legal continuations at its node (negotiation's grammar)."""

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten
from test_scoring import reference_loglik, tiny_model
from tinyround import TINY

from arena.games.registry import make_game
from arena.players.batching import build_batch
from arena.players.mlx import MLXPlayer
from arena.players.scoring import action_loglik, inference_loglik, masked_log_softmax
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig


def reference_by_choice(model, prompt, legal):
    """Each action's tokens' log-probabilities renormalised over the distinct next tokens of the legal actions
    sharing its prefix, computed from full rows token by token (the definition)."""
    out = []
    for action in legal:
        total = 0.0
        for i, token in enumerate(action):
            prefix = tuple(action[:i])
            siblings = sorted({a[i] for a in legal if tuple(a[:i]) == prefix and len(a) > i})
            rows = reference_loglik(model, [prompt + list(prefix)] if prefix else [prompt],
                                    [[[s] for s in siblings]])
            logp = np.array(rows, dtype=np.float64)
            total += logp[siblings.index(token)] - np.log(np.exp(logp).sum())
        out.append(total)
    return np.array(out)


@pytest.fixture(scope="module")
def model():
    return tiny_model("qwen2", 3)


def test_by_choice_equals_its_definition_and_sums_to_one(model):
    prompt = [5, 9, 14, 2]
    legal = [[7, 8, 9, 10, 11], [7, 8, 12], [7, 13], [20, 21, 22, 23, 24, 25]]  # no action a prefix of another
    batch = build_batch([prompt], [legal], choices=[True])
    got = np.array(action_loglik(model, batch), dtype=np.float64)
    assert np.allclose(got, reference_by_choice(model, prompt, legal), atol=1e-4)
    assert np.isclose(np.exp(got).sum(), 1.0, atol=1e-5)  # a path's product: the choices are a distribution
    hosted = np.array(inference_loglik(model, batch), dtype=np.float64)
    assert np.allclose(hosted, got, atol=1e-4)


def test_only_the_decisions_scored_by_choice_change(model):
    prompts = [[5, 9, 14, 2], [6, 6, 1]]
    legal = [[[7, 8, 9], [7, 10]], [[3, 4, 5, 6], [3]]]
    plain = np.array(action_loglik(model, build_batch(prompts, legal)))
    mixed = np.array(action_loglik(model, build_batch(prompts, legal, choices=[False, True])))
    assert np.array_equal(mixed[:2], plain[:2])
    assert not np.allclose(mixed[2:], plain[2:])


def test_a_token_every_action_shares_costs_nothing_and_gradients_flow(model):
    prompt, legal = [4, 4, 4], [[9, 9, 1], [9, 9, 2]]
    batch = build_batch([prompt], [legal], choices=[True])

    def loss(params):
        model.update(params)
        return masked_log_softmax(action_loglik(model, batch), batch.action_offsets, 1.0)[0]

    value, grads = mx.value_and_grad(loss)(model.trainable_parameters())
    choice = reference_by_choice(model, prompt, legal)
    assert np.isclose(float(value), choice[0], atol=1e-4)  # the shared [9, 9] contribute log 1
    assert any(float(mx.abs(g).sum()) > 0 for _, g in tree_flatten(grads) if isinstance(g, mx.array))


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    root = tmp_path_factory.mktemp("choice")
    build_base(BaseConfig(**TINY), root / "base")
    return MLXPlayer(root / "base")


def test_an_untrained_model_offers_and_accepts_in_negotiation(untrained):
    """The bug: summed over the whole vocabulary, a 24-token offer lost to the 5-token [Deny] by ~19 tokens' worth
    of log-probability, so an untrained model denied with probability 1.0 and self-play never traded."""
    game = make_game("negotiation", 0, {"units": 1})
    first = game.observation()
    game.step(next(a for a in first.legal_actions if a.startswith("[Offer")))
    facing = game.observation()
    p_first, p_facing = untrained.policy([first, facing])
    offers = [i for i, a in enumerate(first.legal_actions) if a.startswith("[Offer")]
    assert p_first[offers].sum() > 0.05 and p_first[first.legal_actions.index("[Deny]")] < 0.95
    assert p_facing[facing.legal_actions.index("[Accept]")] > 0.01
