"""Placement never changes a result: any split of the matches, in-process or on a two-worker Ray cluster, gives
the same bytes; a worker killed mid-task is retried; a misconfigured Ray setting is one clear error."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from ray_cluster import AUTH, RayCluster
from repo_copy import content, lock_outs, make_copy, repro_env, run_dvc, small_params, temporaries

from arena.core.errors import ArenaError
from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig, TournamentConfig
from arena.play.config import ShardsConfig
from arena.play.distributed import (
    COHORT,
    LoadFailure,
    Match,
    PlayerPool,
    Seat,
    merge,
    play_all,
    play_matches,
    play_task,
    split,
)
from arena.play.match import duplicate_schedule, play_match
from arena.play.records import encode_record
from arena.train.selfplay.rollouts import selfplay_schedule

ADDRESS = "ARENA_RAY_ADDRESS"
# Ray reads its auth mode when it is imported: this process attaches to the test cluster as a driver.
for _name, _value in AUTH.items():
    os.environ.setdefault(_name, _value)


def _matches(model: Path) -> list[Match]:
    """A model against random over two cohorts, and the model in self-play (one object, both seats) on a variant."""
    mlx = Seat(f"mlx:{model.as_posix()}")
    return [Match("kuhn", (mlx, Seat("random")), tuple(duplicate_schedule(range(40), COHORT + 16))),
            Match("kuhn", (mlx, mlx), tuple(selfplay_schedule(range(100, 140), 2)), {"rounds": 2})]


def _encoded(played) -> list[list[str]]:
    return [[encode_record(r) for r in records] for records in played]


def test_tasks_of_any_size_run_in_any_order_give_the_records_of_one_call(base_model_dir, monkeypatch):
    monkeypatch.delenv(ADDRESS, raising=False)
    matches = _matches(base_model_dir)
    fresh = PlayerPool()
    whole = [play_match(m.game_id, tuple(fresh.player(s) for s in m.seats), m.schedule, variant=m.variant,
                        progress=False) for m in matches]
    tasks = split(matches, 4)
    assert len(tasks) == 4 and all(len(t.slots) <= COHORT for t in tasks)  # one cohort a task
    shared = PlayerPool()  # one worker's players, carried from task to task in a scrambled order
    results = {id(t): play_task(shared, t) for t in reversed(tasks)}
    assert _encoded(merge(matches, tasks, [results[id(t)] for t in tasks])) == _encoded(whole)
    monkeypatch.setitem(sys.modules, "ray", None)  # the in-process path never imports ray
    assert _encoded(play_all(matches, fresh)) == _encoded(whole)


def test_tasks_are_whole_cohorts_about_four_a_worker():
    big = Match("kuhn", (Seat("random"), Seat("first")), tuple(duplicate_schedule(range(1000), 2000)))
    small = Match("kuhn", (Seat("first"), Seat("random")), tuple(duplicate_schedule(range(50), 100)))
    for workers in (1, 2, 8):
        tasks = split([big, small], workers)
        assert [(t.match, t.start) for t in tasks] == sorted((t.match, t.start) for t in tasks)
        assert all(t.start % COHORT == 0 and len(t.slots) % COHORT in (0, 2000 % COHORT, 100 % COHORT) for t in tasks)
        assert [s for t in tasks if t.match == 0 for s in t.slots] == list(big.schedule)
        assert 2 * workers <= len(tasks) <= 4 * workers + 1  # equal tasks of whole cohorts, the last ones shorter


def test_a_seat_that_cannot_load_is_its_reason(tmp_path, monkeypatch):
    monkeypatch.delenv(ADDRESS, raising=False)
    match = Match("kuhn", (Seat(f"mlx:{tmp_path / 'missing'}"), Seat("random")), tuple(duplicate_schedule([1], 2)))
    failed, = play_all([match])
    assert isinstance(failed, LoadFailure) and "model directory not found" in failed.reason
    with pytest.raises(ArenaError, match="model directory not found"):
        play_matches([match])


def _scripted_match() -> Match:
    return Match("kuhn", (Seat("random"), Seat("first")), tuple(duplicate_schedule(range(4), 8)))


def test_an_address_without_ray_installed_says_how_to_install(monkeypatch):
    monkeypatch.setenv(ADDRESS, "local")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    with pytest.raises(ArenaError, match=r"ray is not installed: install with pip install -e '\.\[ray\]'"):
        play_matches([_scripted_match()])


def test_bad_worker_counts_and_unreachable_addresses_are_clear_errors(monkeypatch):
    pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
    from dvc_tiny import free_port

    from arena.play.rayexec import worker_count

    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("ARENA_RAY_WORKERS", bad)
        with pytest.raises(ArenaError, match="ARENA_RAY_WORKERS=.* must be a positive integer"):
            worker_count(2)
    monkeypatch.delenv("ARENA_RAY_WORKERS")
    assert worker_count(3) == 3
    monkeypatch.setenv(ADDRESS, f"127.0.0.1:{free_port()}")
    with pytest.raises(ArenaError, match="no Ray cluster answers there.*ray start --head"):
        play_matches([_scripted_match()])
    monkeypatch.setenv(ADDRESS, "nowhere")
    with pytest.raises(ArenaError, match="expected local, auto or HOST:PORT"):
        play_matches([_scripted_match()])


# ---------------------------------------------------------------- on a two-worker cluster (slow)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A two-CPU Ray head of the module's own; this test process attaches to it as a driver."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
    from arena.play.rayexec import close_all

    with RayCluster(2, tmp_path_factory.mktemp("ray-cache")) as address:
        yield address
        close_all()
        ray.shutdown()


def _both_ways(monkeypatch, address: str, build) -> tuple[object, object]:
    """``build(tag)`` in this process, then on the cluster; the two results."""
    monkeypatch.delenv(ADDRESS, raising=False)
    here = build("here")
    monkeypatch.setenv(ADDRESS, address)
    there = build("ray")
    monkeypatch.delenv(ADDRESS)
    return here, there


def _shard_config(model: Path) -> ShardsConfig:
    return ShardsConfig(players=(f"mlx:{model.as_posix()}", "random"), shards=(0,), games_per_shard=5 * COHORT)


@pytest.mark.slow
def test_every_stage_step_on_ray_gives_the_in_process_bytes(cluster, base_model_dir, tmp_path, monkeypatch):
    from arena.eval.roundeval import evaluate_round
    from arena.eval.runner import run_stage
    from arena.play.rayexec import _pools
    from arena.play.shards import build_shard
    from arena.train.config import PoolConfig, SelfPlayConfig
    from arena.train.fuse import copy_snapshot
    from arena.train.pool import build_pool
    from arena.train.selfplay.rollouts import play_round

    copy_snapshot(base_model_dir, tmp_path / "snap0")
    build_pool(None, tmp_path / "snap0", PoolConfig(scripted=("random",), sampling="uniform"), "kuhn",
               tmp_path / "pool0")
    evaluation = EvalConfig.from_dict({"games": [{"id": "kuhn", "variant": {"rounds": 2}}],
                                       "seeds": [9_000_000, 9_000_100]})
    players = (f"mlx:{base_model_dir}", f"mlx:{tmp_path / 'snap0'}", "random", "oracle")

    def build(tag: str) -> list:
        build_shard(_shard_config(base_model_dir), SeedsConfig(), 0, tmp_path / tag / "shard")
        play_round(tmp_path / "snap0", tmp_path / "pool0", SelfPlayConfig(deals_per_round=160), SeedsConfig(), 1,
                   tmp_path / tag / "rollouts")
        evaluate_round(tmp_path / "snap0", tmp_path / "pool0", 0, RoundEvalConfig(games=150), evaluation,
                       SeedsConfig().reserved(), tmp_path / tag / "eval.json")
        run_stage(evaluation, TournamentConfig(players=players), SeedsConfig().reserved(), tmp_path / tag / "cards")
        return [content(tmp_path / tag / name) for name in ("shard", "rollouts", "eval.json", "cards")]

    here, there = _both_ways(monkeypatch, cluster, build)
    assert there == here and all(here)
    assert [pool.size for pool in _pools.values()] == [2]


def _dies_once(marker: Path) -> type:
    """A MatchWorker whose process exits hard after playing its task, before answering, if it is the first
    worker to create ``marker``: the task is lost mid-way once on the whole cluster, and never again.

    A class local to a function, so Ray ships it by value: the workers need not import this test module.
    """
    from arena.play.rayexec import MatchWorker

    class DiesOnce(MatchWorker):
        def play(self, task):
            played = MatchWorker.play(self, task)
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return played
            os._exit(1)

    return DiesOnce


@pytest.mark.slow
def test_a_worker_killed_mid_task_is_retried_and_the_shard_is_identical(cluster, base_model_dir, tmp_path,
                                                                      monkeypatch):
    from arena.play import rayexec
    from arena.play.shards import build_shard

    marker = tmp_path / "killed"
    rayexec.close_all()  # the next run makes new workers, of the dying kind
    monkeypatch.setattr(rayexec, "MatchWorker", _dies_once(marker))

    def build(tag: str):
        build_shard(_shard_config(base_model_dir), SeedsConfig(), 0, tmp_path / tag / "shard")
        return content(tmp_path / tag / "shard")

    try:
        here, there = _both_ways(monkeypatch, cluster, build)
    finally:
        rayexec.close_all()  # later tests get workers of the real kind
    assert marker.exists(), "no worker was killed: the dying worker never ran a task"
    assert there == here
    assert temporaries(tmp_path / "ray") == [] and sorted(p.name for p in (tmp_path / "ray").iterdir()) == ["shard"]


@pytest.mark.slow
def test_a_reduced_pipeline_on_ray_writes_the_same_dvc_lock(cluster, tmp_path):
    # Every step more than one cohort, so each is split into tasks over both workers.
    params = small_params(shards={"games_per_shard": 2 * COHORT + 8}, roundeval={"games": 80},
                          selfplay={"deals_per_round": 40}, eval={"seeds": [9_000_000, 9_000_080]})
    locks = {}
    for tag, extra in (("here", {}), ("ray", {ADDRESS: cluster})):
        repo = make_copy(tmp_path / tag / "repo", params)
        env = repro_env(repo, **extra)
        if not extra:
            env.pop(ADDRESS, None)
        done = run_dvc(repo, env, "repro", timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        locks[tag] = ((repo / "dvc.lock").read_text(), lock_outs(repo))
    assert yaml.safe_load(locks["ray"][0]) == yaml.safe_load(locks["here"][0])
    assert locks["ray"] == locks["here"]
