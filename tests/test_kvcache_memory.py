"""What a player keeps across turns stays under the bound it states, in the dtype its passes really hold."""

from dataclasses import replace

import numpy as np
import pytest

import arena.players.hostmath as hostmath


@pytest.fixture(scope="module")
def standin_f16_q4_dir(standin_dir, tmp_path_factory):
    """The small stand-in as a GGUF ships SmolLM2: 4-bit weights with float16 scales and biases."""
    from mlx_lm import convert

    out = tmp_path_factory.mktemp("models") / "standin-f16-q4"
    convert(str(standin_dir), str(out), quantize=True, q_bits=4, q_group_size=32, dtype="float16")
    return out


def _lockstep_games(games: int, turns: int) -> list[list]:
    """Each Liar's Dice game's observations (both seats, random moves from its seed), its match stream set."""
    from arena.games.registry import make_game

    out = []
    for seed in range(games):
        rng, game, seen = np.random.default_rng(seed), make_game("liarsdice", seed), []
        while not game.done and len(seen) < turns:
            observation = game.observation()
            seen.append(replace(observation, stream=seed + 1))
            game.step(observation.legal_actions[rng.integers(len(observation.legal_actions))])
        out.append(seen)
    return out


def test_the_kept_keys_and_values_never_pass_the_stated_bound_on_the_host_path(standin_f16_q4_dir, monkeypatch,
                                                                                   capsys):
    """On the host path a float16-scaled 4-bit model's keys and values are float32 (its projections run as float32
    copies), so the store held twice the bytes its bound said (SmolLM2, 64 Liar's Dice games: 7.5 GB peak against a
    stated 1.7 GB pass). Over many long games under a budget the store must evict for, every entry holds the bytes a
    token the player states, and all of them never more than its stated bound."""
    import arena.players.mlx as mlx_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    monkeypatch.setattr(hostmath, "HOST_MATH_VOCAB", 1000)  # the stand-in's 1,024-token vocabulary takes it
    # Its float16 body's logits are 0.008 from its head's float32 copy: the head check's business, not this test's.
    monkeypatch.setattr(mlx_player, "check_head", lambda model: None)
    budget = 6000  # about half of the 12 games' prompts at their last turn: the store evicts, and reuses
    player = MLXPlayer(standin_f16_q4_dir, MLXPlayerConfig(view="full", max_batch_tokens=budget))
    assert hostmath.host_math(player.model) and player.shape.dtype_bytes == 2 and player.held.dtype_bytes == 4
    bound = budget * player.held.kv_token_bytes
    note = capsys.readouterr().err
    assert f"kept across turns under ~{bound / 2**20:,.0f} MiB ({budget} tokens)" in note
    games = _lockstep_games(12, 10)
    evicted = False
    for step in range(max(map(len, games))):
        batch = [g[step] for g in games if step < len(g)]
        player._log_policy(batch)
        entries = player.turns.entries.values()
        held = sum(kv.nbytes for _, kv in entries)
        assert all(kv.nbytes == len(tokens) * player.held.kv_token_bytes for tokens, kv in entries)
        assert player.turns.bytes == held <= bound
        assert player.turns.tokens == sum(len(tokens) for tokens, _ in entries) <= budget
        evicted |= len(player.turns.entries) < len(batch)
    assert evicted and player.turns.hits > 0  # the bound was reached, and reuse still happened under it


def test_play_takes_the_scoring_budget_and_states_its_memory(standin_dir):
    from click.testing import CliRunner

    from arena.cli import main

    args = ["play", "liarsdice", "--p0", f"mlx:{standin_dir}", "--p1", "random", "--games", "2", "--json"]
    result = CliRunner().invoke(main, [*args, "--max-batch-tokens", "3001"])
    assert result.exit_code == 0, result.output
    assert "memory bound: player.max_batch_tokens = 3001 tokens" in result.output
    assert "kept across turns under" in result.output
    bad = CliRunner().invoke(main, [*args, "--max-batch-tokens", "0"])
    assert bad.exit_code != 0 and "player.max_batch_tokens" in bad.output and "Traceback" not in bad.output



def test_a_large_passes_work_buffers_are_dropped_after_it_and_small_ones_kept():
    hostmath._scratch("test-large", (hostmath.KEEP_SCRATCH_BYTES // 4 + 1,))
    hostmath._scratch("test-small", (16,))
    hostmath.drop_scratch()
    buffers = hostmath._SCRATCH.__dict__
    assert "test-large" not in buffers and "test-small" in buffers
    from arena.core.heap import release_heap

    release_heap()  # glibc's malloc_trim where there is one, else nothing: never an error
