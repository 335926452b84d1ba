"""Cross-turn reuse of a game's keys and values equals scoring from scratch; the store is bounded and deterministic."""

from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from arena.players.kvcache import TurnCache


def _game_turns(game_id: str, seed: int, turns: int):
    """One game's observations, both seats, with the match's stream set (random moves from a fixed seed)."""
    from arena.games.registry import make_game

    rng = np.random.default_rng(seed)
    game, out = make_game(game_id, seed), []
    while not game.done and len(out) < turns:
        observation = game.observation()
        out.append(replace(observation, stream=seed + 1))
        game.step(observation.legal_actions[rng.integers(len(observation.legal_actions))])
    return out


@pytest.mark.parametrize("model", ["standin_dir", "standin_q4_dir"])
def test_reusing_the_previous_turn_equals_scoring_from_scratch(model, request):
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(request.getfixturevalue(model), MLXPlayerConfig(view="full"))
    games = [_game_turns("liarsdice", seed, 8) for seed in range(3)]
    steps = max(map(len, games))
    for step in range(steps):  # lockstep, as a match asks: every game's next turn in one call
        batch = [g[step] for g in games if step < len(g)]
        reused = player._log_policy(batch)
        fresh = player._log_policy([replace(o, stream=0) for o in batch])
        for a, b in zip(reused, fresh, strict=True):  # float32 rounding of ~1,000-key attention: a few ulps
            np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    assert player.turns.hits >= len(games) * (steps - 2) and player.turns.reused > 1000
    player.begin_match()
    assert not player.turns.entries and player.turns.bytes == 0


def test_a_pass_never_plans_on_an_entry_an_earlier_pass_of_the_call_evicted(standin_dir):
    """4 Liar's Dice games in lockstep over passes of 2,600 tokens: a call's first pass stores its prompts and evicts
    the entry a later pass had planned to reuse (was: KeyError (4, 0) at the third turn; 64 games of the qwen3-4b
    preset at 8,192 tokens: KeyError (34, 1) in every evaluation game)."""
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(standin_dir, MLXPlayerConfig(view="full", max_batch_tokens=2600))
    games = [_game_turns("liarsdice", seed, 4) for seed in range(4)]
    for step in range(max(map(len, games))):
        batch = [g[step] for g in games if step < len(g)]
        assert len(list(player.scoring_passes(batch))) > 1
        reused = player._log_policy(batch)
        fresh = player._log_policy([replace(o, stream=0) for o in batch])
        for a, b in zip(reused, fresh, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    assert player.turns.hits > 0


def _kv(tokens: int):
    return mx.zeros((2, 1, tokens, 2))


def test_the_store_is_bounded_by_tokens_and_evicts_the_least_recently_used():
    cache = TurnCache(capacity=100, min_tokens=4)
    for stream in ("a", "b", "c"):
        cache.store(stream, list(range(40)), _kv(40))
    assert list(cache.entries) == ["b", "c"]  # "a" went to make room for "c"
    assert cache.tokens == 80 and cache.bytes == 2 * _kv(40).nbytes  # the entries' own bytes, in their dtype
    assert cache.reusable("b", list(range(30)) + [99] * 20) == 30
    cache.prefix("b", 30)  # "b" is now the most recently used: "c" goes next
    cache.store("d", list(range(40)), _kv(40))
    assert list(cache.entries) == ["b", "d"]
    assert cache.reusable("b", list(range(3)) + [99]) == 0  # under min_tokens: not worth a stored stem
    assert cache.reusable("b", list(range(40))) == 39  # the prompt keeps at least one token of its own
    assert cache.reusable("zzz", list(range(40))) == 0 and cache.reusable(None, list(range(40))) == 0
    cache.store("huge", list(range(200)), _kv(200))  # alone over the capacity: not kept, nothing evicted
    assert list(cache.entries) == ["b", "d"]


def test_a_match_gives_the_same_records_with_and_without_reuse(standin_dir):
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(standin_dir, MLXPlayerConfig(view="full", temperature=0.0))
    schedule = duplicate_schedule(range(4), 4)
    with_reuse = play_match("liarsdice", (player, make_player("random")), schedule, progress=False)
    assert player.turns.hits > 0
    again = play_match("liarsdice", (player, make_player("random")), schedule, progress=False)
    assert again == with_reuse  # the match starts with an empty store: the same calls, the same bytes
    player.turns.capacity = 0  # nothing is kept: every prompt from scratch
    without = play_match("liarsdice", (player, make_player("random")), schedule, progress=False)
    assert [r["actions"] for r in with_reuse] == [r["actions"] for r in without]
    for a, b in zip(with_reuse, without, strict=True):
        logprobs = [[d["logprob"] for d in r["decisions"] if d["logprob"] is not None] for r in (a, b)]
        np.testing.assert_allclose(*logprobs, atol=1e-5, rtol=1e-5)


def test_a_call_over_several_passes_groups_them_by_new_tokens_and_scores_as_one(standin_dir, monkeypatch):
    from arena.players.batching import pack_batches
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.players.scoringpass import ScoringPass

    one = MLXPlayer(standin_dir, MLXPlayerConfig(view="full"))
    batch = [replace(_game_turns("liarsdice", seed, 1 + 2 * (seed % 3))[-1], stream=0) for seed in range(6)]
    prompts = [one._prompt_ids(o) for o in batch]
    actions = [[one._action_ids(a) for a in o.legal_actions] for o in batch]
    # A budget that fits the two longest prompts' decisions together, not three decisions of mixed lengths.
    budget = 2 * max(next(pack_batches([p], [a], 10**9, one.shape.head_weight, "k"))[2].tokens
                     + one.shape.head_weight * sum(map(len, a)) for p, a in zip(prompts, actions, strict=True))
    split = MLXPlayer(standin_dir, MLXPlayerConfig(view="full", max_batch_tokens=budget))
    seen: list[list[int]] = []
    original = ScoringPass._run
    monkeypatch.setattr(ScoringPass, "_run", lambda self, b, ps, ss: seen.append(list(map(len, ps)))
                        or original(self, b, ps, ss))
    got = split._log_policy(batch)
    assert len(seen) > 1
    lengths = [n for run in seen for n in run]
    assert lengths == sorted(map(len, prompts))  # passes cut from the decisions sorted by their new tokens
    for a, b in zip(got, one._log_policy(batch), strict=True):  # one pass, arrival order: the same policy
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


def test_kept_rows_hold_each_layers_keys_and_values_at_their_positions_and_restack_left_padded():
    from arena.players.kvcache import PrefixCache, rows_kv, stacked

    rng = np.random.default_rng(0)
    layers = [PrefixCache(mx.zeros(3), keys=mx.array(rng.normal(size=(3, 2, 7, 4)).astype(np.float32)),
                          values=mx.array(rng.normal(size=(3, 2, 7, 4)).astype(np.float32))) for _ in range(2)]
    positions = [np.array([2, 3, 4, 5, 6]), np.array([6])]
    kept = rows_kv(layers, [2, 0], positions)
    for stored, row, where in zip(kept, [2, 0], positions, strict=True):
        assert stored.shape == (4, 2, len(where), 4)
        for i, layer in enumerate(layers):
            assert (stored[i] == layer.keys[row][:, mx.array(where)]).all()
            assert (stored[2 + i] == layer.values[row][:, mx.array(where)]).all()
    restored = stacked([kept[0][:, :, :3], kept[1]], 4)
    assert restored[0].pad.tolist() == [1, 3]
    for i, layer in enumerate(restored):
        assert (layer.keys[0, :, 1:] == layers[i].keys[2][:, 2:5]).all() and (layer.keys[0, :, :1] == 0).all()
        assert (layer.values[1, :, 3:] == layers[i].values[0][:, 6:7]).all() and (layer.values[1, :, :3] == 0).all()
