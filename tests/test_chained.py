"""Chained exact scoring (arena.players.chained): the same policies as scoring each position alone."""

import numpy as np

from arena.players.board_policy import ttt_observations
from arena.players.chained import chained_log_policy, exact_policy_probs, trie_tokens, worth_chaining
from arena.players.config import MLXPlayerConfig
from arena.players.mlx import MLXPlayer


def _positions(player, count):
    """``count`` TicTacToe positions whose full-view prompts are consecutive in sorted order (they share histories)."""
    observations = list(ttt_observations().values())
    order = sorted(range(len(observations)), key=lambda i: player.prompts.prompt_ids(observations[i]))
    return [observations[i] for i in order[1000:1000 + count]]


def test_trie_tokens_counts_each_shared_prefix_once():
    assert trie_tokens([(1, 2, 3), (1, 2, 4), (1, 5), (1, 2, 3)]) == 5  # 1, 2, 3 | 4 | 5 | (a repeat adds nothing)
    assert not worth_chaining([(1, 2, 3)] * 4)  # short prompts: the one-pass path


def test_chained_scoring_equals_one_at_a_time(base_model_dir):
    player = MLXPlayer(base_model_dir, MLXPlayerConfig(view="full", max_batch_tokens=16384))
    observations = _positions(player, 24)
    prompts = [player.prompts.prompt_ids(o) for o in observations]
    assert trie_tokens(prompts) < 0.5 * sum(map(len, prompts))  # they do share most of their tokens
    alone = [player.scored([o])[0] for o in observations]
    chained = chained_log_policy(player, observations, chains=5)
    assert not player.turns.entries  # the store is left empty
    for a, b in zip(alone, chained, strict=True):
        assert a.shape == b.shape
        # Only the summation order differs (a prefix's keys come from another batch): float32 round-off, not policy.
        np.testing.assert_allclose(b, a, rtol=0, atol=2e-5)


def test_chained_scoring_reuses_prefixes(base_model_dir):
    player = MLXPlayer(base_model_dir, MLXPlayerConfig(view="full", max_batch_tokens=16384))
    observations = _positions(player, 12)
    reused = []
    original = player.turns.prefix

    def counting(stream, tokens):
        reused.append(tokens)
        return original(stream, tokens)

    player.turns.prefix = counting
    chained_log_policy(player, observations, chains=3)
    assert len(reused) == 12 - 3 and min(reused) > 100  # every step after a chain's first reuses a long prefix


def test_compact_view_keeps_the_one_pass_path(base_model_dir):
    player = MLXPlayer(base_model_dir, MLXPlayerConfig(view="compact"))
    observations = list(ttt_observations().values())[:64]
    assert not worth_chaining([player.prompts.prompt_ids(o) for o in observations])
    for a, b in zip(exact_policy_probs(player, observations), player.policy(observations), strict=True):
        assert np.array_equal(a, b)  # the embedded default's exact measures: byte-identical


def test_chain_count_keeps_the_chains_prompts_to_an_eighth_of_the_budget():
    from types import SimpleNamespace

    from arena.players.chained import chain_count

    player = SimpleNamespace(config=MLXPlayerConfig(max_batch_tokens=65536))
    assert chain_count(player, [(1,) * 995] * 4520) == 8  # TicTacToe's full view on SmolLM2: 8 x 995 <= 65536 / 8
    assert chain_count(player, [(1,) * 995] * 3) == 3  # never more chains than prompts
    assert chain_count(player, [(1,) * 70000]) == 1


def test_leduc_policy_renormalises_float32_round_off():
    """SmolLM2's compact view: exps of float32 log-probs summed to 0.999999 at a Leduc info state, and
    leduc_theory refused the table (`arena exact --game leduc` failed)."""
    from arena.games import leduc_theory
    from arena.players.policy import leduc_model_policy

    class Short:
        memo = True  # the player's own path

        def policy(self, observations):
            return [np.full(len(o.legal_actions), (1 - 3e-6) / len(o.legal_actions)) for o in observations]

    policy = leduc_model_policy(Short())
    assert 0 <= leduc_theory.exploitability(policy) < 5  # validates every info state's sum
