"""The local player's one inference path keeps its bytes: match records, policies and exact measures, pinned."""

import hashlib
import json
import platform

import mlx.core as mx
import pytest

# Digests of what the player produced before its inference became one pass (arena.players.scoringpass), computed on
# integ at 177bd34 (scoring by choice for grammar games, thinking's shared prefill): on x86_64 with this MLX, every
# record, policy and measure below is bit for bit what the old back-and-forth path (players/mlx.py <-> kvcache.py
# <-> scoring.py callbacks) gave. Floats are compared as their exact hex.
PINNED_ON = ("x86_64", "0.32.4")
PINNED = {
    "kuhn compact": "b1244c57e51510a0",
    "liarsdice compact, 3,000-token passes": "fcb153537e10b5d0",
    "kuhn compact, memo": "5ef0c05dd7d8c6da",
    "leduc compact, greedy": "b4c21be5aa9d23ec",
    "liarsdice full, 2,600-token passes (entries evicted between passes)": "0467dbbe538df271",
    "kuhn full, thinking, 1,400-token passes (reasoning evicted)": "a3bec8febd9fc092",
    "leduc compact, thinking": "ad9f8fde11a232d1",
    "kuhn full, exact": "7a1be18eae3648a6",
    "negotiation compact, by choice": "868415309d6f2ee6",
    "negotiation compact, by choice, 1,200-token passes": "93d733d7a9d0d187",
    "negotiation compact, by choice, memo": "2ade61fa39388d21",
    "ultimatum compact, by choice, greedy": "c83e5b12316e4a17",
    "negotiation compact, thinking, by choice": "d5ffa893fe0ff3b6",
    "kuhn compact, thinking, 16 games (shared prompts prefilled once)": "1c2aed9de916b31a",
    "kuhn compact, thinking samples (each prompt 3 times, prefilled once)": "f780184acce2effb",
}


def _hexed(value):
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _hexed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_hexed(v) for v in value]
    if hasattr(value, "tolist"):
        return _hexed(value.tolist())
    return value


def _digest(value, paths=()) -> str:
    """The value's JSON (floats as hex), with the models' paths (records name their players by them) left out."""
    text = json.dumps(_hexed(value), sort_keys=True)
    for path in paths:
        text = text.replace(str(path), "MODEL")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def outputs(base, standin) -> dict[str, str]:
    """Each pinned case's digest (the tiny embedded model and the small stand-in, both built from their seeds)."""
    from arena.eval.exact import exact_metrics
    from arena.eval.thinkexact import kuhn_thinking_samples
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.config import MLXPlayerConfig, ThinkConfig
    from arena.players.mlx import MLXPlayer

    def play(path, game, games, **config):
        player = MLXPlayer(path, MLXPlayerConfig(**config))
        schedule = duplicate_schedule(range(games // 2), games)
        return _digest(play_match(game, (player, make_player("random")), schedule, progress=False), (base, standin))

    think = ThinkConfig(max_tokens=16)
    return {
        "kuhn compact": play(base, "kuhn", 16, view="compact"),
        "liarsdice compact, 3,000-token passes": play(base, "liarsdice", 16, view="compact", max_batch_tokens=3000),
        "kuhn compact, memo": play(base, "kuhn", 32, view="compact", memo_prompts=64),
        "leduc compact, greedy": play(base, "leduc", 8, view="compact", temperature=0.0),
        "liarsdice full, 2,600-token passes (entries evicted between passes)":
            play(standin, "liarsdice", 8, view="full", max_batch_tokens=2600),
        "kuhn full, thinking, 1,400-token passes (reasoning evicted)":
            play(standin, "kuhn", 8, view="full", max_batch_tokens=1400, think=think),
        "leduc compact, thinking": play(standin, "leduc", 4, view="compact", think=think),
        "kuhn full, exact": _digest(exact_metrics(MLXPlayer(standin, MLXPlayerConfig(view="full")), "kuhn", None)),
        "negotiation compact, by choice": play(base, "negotiation", 4, view="compact"),
        "negotiation compact, by choice, 1,200-token passes":
            play(base, "negotiation", 4, view="compact", max_batch_tokens=1200),
        "negotiation compact, by choice, memo": play(base, "negotiation", 4, view="compact", memo_prompts=64),
        "ultimatum compact, by choice, greedy": play(base, "ultimatum", 4, view="compact", temperature=0.0),
        "negotiation compact, thinking, by choice": play(standin, "negotiation", 2, view="compact", think=think),
        "kuhn compact, thinking, 16 games (shared prompts prefilled once)":
            play(standin, "kuhn", 16, view="compact", think=think),
        "kuhn compact, thinking samples (each prompt 3 times, prefilled once)":
            _digest(kuhn_thinking_samples(MLXPlayer(standin, MLXPlayerConfig(view="compact", think=think)), 3)),
    }


@pytest.mark.skipif((platform.machine(), mx.__version__) != PINNED_ON,
                    reason=f"digests pinned on {PINNED_ON}: float bits differ on other CPUs and MLX versions")
def test_the_players_outputs_keep_their_bytes(base_model_dir, standin_dir):
    assert outputs(base_model_dir, standin_dir) == PINNED
