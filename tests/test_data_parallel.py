"""Data-parallel GRPO: the micro-batch split, the launch settings, 1 process vs 2 (mlx.launch, ring) byte for byte."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # not a package: scripts import each other

# isort: split
import pytest
from data_parallel import free_port_pair

from arena.core.errors import ArenaError
from arena.train.selfplay.dataparallel import World, micro_batch_rounds, owned_micro_batches
from arena.train.selfplay.launch import LAUNCH_ENV, launch_args, launch_for


@pytest.mark.parametrize("count,size", [(0, 2), (1, 2), (5, 2), (6, 3), (7, 4), (3, 1)])
def test_every_micro_batch_belongs_to_exactly_one_rank_in_order(count, size):
    rounds = list(micro_batch_rounds(range(count), size))
    assert [i for chunk in rounds for i in chunk] == list(range(count))  # the order one process adds them in
    assert all(len(chunk) == size for chunk in rounds[:-1])
    owned = [owned_micro_batches(count, size, rank) for rank in range(size)]
    assert sorted(i for mine in owned for i in mine) == list(range(count))
    for rank, mine in enumerate(owned):
        assert mine == [chunk[rank] for chunk in rounds if rank < len(chunk)]


def test_a_rank_outside_the_world_or_an_empty_world_is_an_error():
    with pytest.raises(ValueError, match="rank 2 is outside a world of 2"):
        owned_micro_batches(4, 2, 2)
    with pytest.raises(ValueError, match="at least one rank"):
        list(micro_batch_rounds(range(3), 0))


def test_one_process_is_a_world_of_one_writer():
    world = World()
    assert world.is_writer and not World(rank=1, size=2).is_writer
    assert world.gathered(["a", "b"], [], 1) == [["a", "b"]]


def test_a_launch_of_one_process_is_a_world_of_one(monkeypatch, tmp_path):
    from arena.train.selfplay.dataparallel import init_world

    (tmp_path / "hosts").write_text("\n")  # what `mlx.launch --backend ring -n 1` hands its only rank
    monkeypatch.setenv("MLX_HOSTFILE", str(tmp_path / "hosts"))
    monkeypatch.setenv("MLX_RANK", "0")
    assert init_world() == World()


def test_the_launch_variable_holds_only_mlx_launch_options(monkeypatch):
    monkeypatch.delenv(LAUNCH_ENV, raising=False)
    assert launch_args() is None
    monkeypatch.setenv(LAUNCH_ENV, "  ")
    assert launch_args() is None
    monkeypatch.setenv(LAUNCH_ENV, "--backend ring -n 2")
    assert launch_args() == ["--backend", "ring", "-n", "2"]
    monkeypatch.setenv(LAUNCH_ENV, "-n 2 -- python stages/round.py")
    with pytest.raises(ArenaError, match="only mlx.launch's own options"):
        launch_args()


def test_the_launch_variable_is_refused_for_loops_it_does_not_run(monkeypatch):
    monkeypatch.setenv(LAUNCH_ENV, "--backend ring -n 2")
    assert launch_for("selfplay") == ["--backend", "ring", "-n", "2"]
    for loop in ("rest", "lsp"):
        with pytest.raises(ArenaError, match=f"loop: selfplay only .*loop: {loop}"):
            launch_for(loop)
    with pytest.raises(ArenaError, match="train.objective: grpo only .*neurd"):
        launch_for("selfplay", "neurd")


# ----------------------------------------------------------------------------------------------- two processes


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    """A tiny model's snapshot 0 and one round of Kuhn self-play rollouts from it."""
    from arena.core.seeds import SeedsConfig
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig, PoolConfig, SelfPlayConfig
    from arena.train.fuse import copy_snapshot
    from arena.train.pool import build_pool
    from arena.train.selfplay.rollouts import play_round

    root = tmp_path_factory.mktemp("dp")
    build_base(BaseConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64,
                          vocab_size=400), root / "base")
    copy_snapshot(root / "base", root / "snap0")
    build_pool(None, root / "snap0", PoolConfig(), "kuhn", root / "pool0")
    play_round(root / "snap0", root / "pool0", SelfPlayConfig(deals_per_round=24, group_size=2), SeedsConfig(), 1,
               root / "roll1")
    return root


def _first_step_micro_batches(root, params) -> int:
    """How many micro-batches the first step's batch (drawn as ``_run_steps`` draws it) splits into."""
    import numpy as np

    from arena.play.records import read_shard
    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig
    from arena.train.selfplay.step import learner_decisions

    config = TrainConfig(**params["train"])
    player = MLXPlayer(root / "snap0")
    data = learner_decisions(read_shard(root / "roll1"), player.spec, config)
    keep = np.flatnonzero(~data.zero_group)
    picked = np.sort(np.random.default_rng([config.seed, 1]).choice(keep, size=config.batch_size, replace=False))
    return len(list(player.scoring_passes([data.observations[i] for i in picked], config.max_batch_tokens)))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["full", "lora"])
def test_two_processes_train_the_same_bytes_as_one(rollouts, tmp_path, method, monkeypatch):
    from arena.core.hashing import digest_dir
    from arena.train.config import SelfPlayConfig, TrainConfig
    from arena.train.selfplay.launch import launch_train_round
    from arena.train.selfplay.step import train_round

    monkeypatch.chdir(tmp_path)  # the timing log goes to ./logs
    params = {"selfplay": {"deals_per_round": 24, "group_size": 2},
              "train": {"method": method, "steps": 2, "batch_size": 40, "lr": 1.0e-3, "lora_layers": 1,
                        "max_batch_tokens": 60}}
    # An odd number of micro-batches: rank 1 has none in the last round and sends zeros that are never added.
    passes = _first_step_micro_batches(rollouts, params)
    assert passes >= 3 and passes % 2 == 1, f"the first step should have an odd number of micro-batches, got {passes}"
    args = (rollouts / "snap0", rollouts / "base", rollouts / "roll1", 1)
    one = train_round(*args, SelfPlayConfig(**params["selfplay"]), TrainConfig(**params["train"]), tmp_path / "one",
                      progress=False)
    two = launch_train_round(["--backend", "ring", "-n", "2", "--starting-port", str(free_port_pair())], *args,
                             params, tmp_path / "two")
    assert two == one
    assert digest_dir(tmp_path / "two") == digest_dir(tmp_path / "one")
    # meta.json too: where the step ran (and which process wrote it) is not part of it.
    assert (tmp_path / "two" / "meta.json").read_bytes() == (tmp_path / "one" / "meta.json").read_bytes()
    log = (tmp_path / "two" / "train_log.jsonl").read_text()
    assert log == (tmp_path / "one" / "train_log.jsonl").read_text()
    assert json.loads(log.splitlines()[-1])["loss"] != 0
