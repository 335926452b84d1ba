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
    kept = CliRunner().invoke(main, [*args, "--max-batch-tokens", "3001", "--store-tokens", "9000",
                                     "--store-dtype", "model"])
    assert kept.exit_code == 0, kept.output
    assert "kept across turns under ~4 MiB (9000 tokens)" in kept.output  # a float32 model: its own dtype
    bad = CliRunner().invoke(main, [*args, "--store-dtype", "half"])
    assert bad.exit_code != 0 and "player.store_dtype = 'half'" in bad.output and "Traceback" not in bad.output



def test_a_large_passes_work_buffers_are_dropped_after_it_and_small_ones_kept():
    hostmath._scratch("test-large", (hostmath.KEEP_SCRATCH_BYTES // 4 + 1,))
    hostmath._scratch("test-small", (16,))
    hostmath.drop_scratch()
    buffers = hostmath._SCRATCH.__dict__
    assert "test-large" not in buffers and "test-small" in buffers
    from arena.core.heap import release_heap

    release_heap()  # glibc's malloc_trim where there is one, else nothing: never an error


def test_a_store_in_float16_holds_half_the_bytes_and_hands_back_the_pass_dtype():
    import mlx.core as mx

    from arena.players.kvcache import TurnCache

    kv = mx.random.normal((4, 1, 40, 8), key=mx.random.key(0))  # float32, as the host path's passes hold
    plain, halved = TurnCache(capacity=100, min_tokens=4), TurnCache(capacity=100, min_tokens=4, dtype=mx.float16)
    for cache in (plain, halved):
        cache.store("a", list(range(40)), kv)
    assert plain.entries["a"][1].dtype == mx.float32 and halved.entries["a"][1].dtype == mx.float16
    assert halved.bytes == plain.bytes // 2 == kv.nbytes // 2 and halved.tokens == plain.tokens == 40
    back = halved.prefix("a", 30)
    assert back.dtype == mx.float32 and back.shape == (4, 1, 30, 8)
    assert mx.array_equal(back, kv[:, :, :30].astype(mx.float16).astype(mx.float32))  # only the rounding
    assert mx.array_equal(plain.prefix("a", 30), kv[:, :, :30])  # the default store is exact
    for stream in ("b", "c"):  # still bounded in tokens, least recently used out first
        halved.store(stream, list(range(40)), kv)
    assert list(halved.entries) == ["b", "c"] and halved.bytes == 2 * kv.nbytes // 2


def test_store_tokens_and_dtype_bound_the_store_apart_from_the_pass_on_the_host_path(standin_f16_q4_dir,
                                                                                     monkeypatch, capsys):
    """``store_tokens`` bounds the store in tokens whatever ``max_batch_tokens`` is, and ``store_dtype: model`` keeps
    a float16 model's keys and values in float16 on the host path (its passes hold float32): half the bytes a token,
    as stated, never over the bound; the log-probabilities move only by the rounding."""
    import mlx.core as mx

    import arena.players.mlx as mlx_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    monkeypatch.setattr(hostmath, "HOST_MATH_VOCAB", 1000)
    monkeypatch.setattr(mlx_player, "check_head", lambda model: None)
    budget, kept = 3000, 7000
    exact = MLXPlayer(standin_f16_q4_dir, MLXPlayerConfig(view="full", max_batch_tokens=budget, store_tokens=kept))
    halved = MLXPlayer(standin_f16_q4_dir, MLXPlayerConfig(view="full", max_batch_tokens=budget, store_tokens=kept,
                                                           store_dtype="model"))
    assert exact.turns.capacity == halved.turns.capacity == kept and halved.turns.dtype == mx.float16
    per_token = halved.held.kv_token_bytes // 2
    note = capsys.readouterr().err
    assert f"kept across turns under ~{kept * per_token / 2**20:,.0f} MiB ({kept} tokens, 2-byte values)" in note
    bounded = MLXPlayer(standin_f16_q4_dir, MLXPlayerConfig(view="full", max_batch_tokens=budget))
    games = _lockstep_games(12, 10)
    gaps = []
    for step in range(max(map(len, games))):
        batch = [g[step] for g in games if step < len(g)]
        bounded._log_policy(batch)
        ours, theirs = halved._log_policy(batch), exact._log_policy(batch)
        gaps += [float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs, strict=True)]
        entries = halved.turns.entries.values()
        assert all(kv.dtype == mx.float16 and kv.nbytes == len(tokens) * per_token for tokens, kv in entries)
        assert halved.turns.bytes == sum(kv.nbytes for _, kv in entries) <= kept * per_token
        assert halved.turns.tokens <= kept and exact.turns.tokens == halved.turns.tokens
    assert halved.turns.hits == exact.turns.hits > 0  # the same entries kept: only their bytes differ
    assert bounded.turns.capacity == budget and bounded.turns.hits < exact.turns.hits  # the pass's bound evicts more
    assert 0 < max(gaps) < 1e-2


def test_store_settings_at_their_defaults_change_no_hash_and_a_float32_model_keeps_its_bytes(standin_dir):
    """The new settings are left out of the config hash at their defaults, and ``store_dtype: model`` on a float32
    model (the embedded default's dtype) keeps the pass's own dtype: the same records, byte for byte, but for the
    players' pins (their config hash names the setting)."""
    from arena.core.config import as_dict
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    assert as_dict(MLXPlayerConfig()) == {"view": "compact", "temperature": 1.0, "max_batch_tokens": 65536,
                                          "enable_thinking": False, "memo_prompts": 0}
    assert as_dict(MLXPlayerConfig(store_tokens=9, store_dtype="model"))["store_dtype"] == "model"
    schedule = duplicate_schedule(range(3), 3)
    records = []
    for extra in ({}, {"store_dtype": "model"}):
        player = MLXPlayer(standin_dir, MLXPlayerConfig(view="full", max_batch_tokens=4000, **extra))
        assert player.turns.dtype is None
        records.append(play_match("liarsdice", (player, make_player("random")), schedule, progress=False))
        assert player.turns.hits > 0
    unpinned = [[{k: v for k, v in record.items() if k != "pins"} for record in run] for run in records]
    assert unpinned[0] == unpinned[1] and records[0][0]["pins"] != records[1][0]["pins"]


def test_bad_store_settings_are_one_line_errors():
    from arena.core.config import ConfigError
    from arena.players.config import MLXPlayerConfig

    with pytest.raises(ConfigError, match=r"player.store_tokens = -1 is invalid: must be a whole number >= 0"):
        MLXPlayerConfig(store_tokens=-1)
    with pytest.raises(ConfigError, match=r"player.store_dtype = 'float8' is invalid: expected one of pass, model"):
        MLXPlayerConfig(store_dtype="float8")
