"""QLoRA: LoRA on a quantised base keeps its adapter beside the quantised weights, and the policy really moves."""

import json

import mlx.core as mx
import numpy as np
import pytest

from arena.core.config import ConfigError
from arena.core.errors import ArenaError
from arena.core.hashing import digest_file
from arena.core.pins import model_pin, model_quant
from arena.core.seeds import SeedsConfig
from arena.games.registry import make_game
from arena.players.config import MLXPlayerConfig
from arena.players.mlx import MLXPlayer
from arena.train.config import PoolConfig, RestConfig, SelfPlayConfig, TrainConfig
from arena.train.fuse import copy_snapshot, fuse_round
from arena.train.lora import attach_lora, weights_digest
from arena.train.pool import build_pool
from arena.train.selfplay.rollouts import play_round
from arena.train.selfplay.step import train_round

SELFPLAY = SelfPlayConfig(deals_per_round=8, group_size=2)
LORA = TrainConfig(method="lora", steps=2, batch_size=16, lr=1.0e-2, lora_layers=2, lora_rank=4)


@pytest.fixture(scope="module")
def q4_round(standin_q4_dir, tmp_path_factory):
    """Round 1 of GRPO with LoRA on the q4 stand-in: snapshot 0, its pool, rollouts, training, snapshot 1."""
    root = tmp_path_factory.mktemp("qlora")
    copy_snapshot(standin_q4_dir, root / "snap0")
    build_pool(None, root / "snap0", PoolConfig(), "kuhn", root / "pool0")
    play_round(root / "snap0", root / "pool0", SELFPLAY, SeedsConfig(), 1, root / "roll1")
    train_round(root / "snap0", standin_q4_dir, root / "roll1", 1, SELFPLAY, LORA, root / "ad1", progress=False)
    fuse_round(root / "snap0", root / "ad1", root / "snap1")
    return root


def _policy(model_dir):
    observations = [make_game("kuhn", seed).observation() for seed in range(6)]
    return np.concatenate(MLXPlayer(model_dir, MLXPlayerConfig()).policy(observations))


def test_a_q4_snapshot_keeps_the_quantised_weights_and_its_adapter(q4_round, standin_q4_dir):
    snap = q4_round / "snap1"
    assert model_quant(standin_q4_dir) == "q4"
    assert model_quant(snap) == "q4+lora" and model_pin(snap)["quant"] == "q4+lora"
    assert weights_digest(snap) == weights_digest(standin_q4_dir)  # the packed weights are the base's, untouched
    settings = json.loads((snap / "adapter_config.json").read_text())
    assert settings["base_weights"] == weights_digest(standin_q4_dir)
    assert settings["num_layers"] == 2 and settings["lora_parameters"]["rank"] == 4


def test_a_trained_q4_snapshots_policy_differs_from_its_bases(q4_round, standin_q4_dir):
    base, trained = _policy(standin_q4_dir), _policy(q4_round / "snap1")
    assert np.max(np.abs(trained - base)) > 1e-4
    assert np.allclose(_policy(q4_round / "snap0"), base)


def test_the_next_round_trains_the_carried_adapter_further(q4_round, standin_q4_dir, tmp_path):
    root = q4_round
    play_round(root / "snap1", root / "pool0", SELFPLAY, SeedsConfig(), 2, tmp_path / "roll2")
    train_round(root / "snap1", standin_q4_dir, tmp_path / "roll2", 2, SELFPLAY, LORA, tmp_path / "ad2",
                progress=False)
    fuse_round(root / "snap1", tmp_path / "ad2", tmp_path / "snap2")
    assert digest_file(tmp_path / "snap2" / "adapters.safetensors") != \
        digest_file(root / "snap1" / "adapters.safetensors")
    assert not np.allclose(_policy(tmp_path / "snap2"), _policy(root / "snap1"))
    wider = TrainConfig(method="lora", steps=1, batch_size=16, lora_layers=2, lora_rank=8)
    with pytest.raises(ConfigError, match="keep the LoRA layout the same across rounds"):
        train_round(root / "snap1", standin_q4_dir, tmp_path / "roll2", 2, SELFPLAY, wider, tmp_path / "x",
                    progress=False)


def test_an_adapter_that_changes_nothing_is_refused(q4_round, tmp_path):
    trained = tmp_path / "zero"
    trained.mkdir()
    weights = mx.load(str(q4_round / "ad1" / "adapters.safetensors"))
    zero = {k: (mx.zeros_like(v) if k.endswith("lora_b") else v) for k, v in weights.items()}
    mx.save_safetensors(str(trained / "adapters.safetensors"), zero)
    (trained / "adapter_config.json").write_text((q4_round / "ad1" / "adapter_config.json").read_text())
    with pytest.raises(ArenaError, match="the update was lost"):
        fuse_round(q4_round / "snap0", trained, tmp_path / "snap")
    with pytest.raises(ArenaError, match="the update was lost"):
        fuse_round(q4_round / "snap1", q4_round / "ad1", tmp_path / "again")  # snap1's own adapter: nothing new


def test_an_adapter_over_other_weights_is_refused(q4_round, tmp_path):
    trained = tmp_path / "other"
    trained.mkdir()
    (trained / "adapters.safetensors").write_bytes((q4_round / "ad1" / "adapters.safetensors").read_bytes())
    settings = json.loads((q4_round / "ad1" / "adapter_config.json").read_text())
    (trained / "adapter_config.json").write_text(json.dumps({**settings, "base_weights": "0" * 64}))
    with pytest.raises(ArenaError, match="trained over other weights"):
        fuse_round(q4_round / "snap0", trained, tmp_path / "snap")


def test_full_fine_tuning_of_a_quantised_model_is_refused(q4_round, standin_q4_dir, tmp_path):
    with pytest.raises(ConfigError, match="train.method = 'full' is invalid .* use train.method: lora"):
        train_round(q4_round / "snap0", standin_q4_dir, q4_round / "roll1", 1, SELFPLAY,
                    TrainConfig(method="full", steps=1), tmp_path / "x", progress=False)


def test_lora_gradients_reach_only_the_adapter_of_a_quantised_model(standin_q4_dir):
    player = MLXPlayer(standin_q4_dir)
    attach_lora(player.model, RestConfig(lora_layers=2, lora_rank=4))
    names = [name for name, _ in __import__("mlx.utils", fromlist=["tree_flatten"]).tree_flatten(
        player.model.trainable_parameters())]
    assert names and all(name.endswith(("lora_a", "lora_b")) for name in names)


def test_verify_finds_a_q4_snapshot_by_the_hash_its_player_pins(q4_round):
    """Regression: `arena verify` read every adapter_config.json as naming its base (``model``), so a QLoRA snapshot
    (its base weights beside its adapter; the real-model pipeline's published round) crashed it with KeyError."""
    from arena.eval.locate import locate_model

    snap = q4_round / "snap1"
    pinned = MLXPlayer(snap, MLXPlayerConfig()).pin()["model_hash"]
    located = locate_model(q4_round, "snap1", pinned, q4_round / "scratch", fetch=False)
    assert located.path is not None and located.workspace_digest == pinned
